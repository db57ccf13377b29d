//! Requests waiting for approval: who may approve, the waiting request of an object, its
//! approval (an issuance), rejection, `Retry` and `Reset`, each one conditional write.

use super::*;

/// The `Stage` a request waiting for approval is parked at (the product's PostCSR; vcert
/// and cert-manager read 500 as in progress).
pub const PENDING_STAGE: i64 = 500;
/// The `Status` of a request waiting for approval: pyvenafi's `wait_for_stage` looks for
/// `pending workflow resolution` in it.
pub const PENDING_STATUS: &str = "Pending workflow resolution: manual approval";

/// The right that approves or rejects a request waiting at an object (besides a Master Admin):
/// Manage Permissions on it (or a folder above it), the product's strongest right on an object,
/// held apart from the Create and Write that request and renew (see the book's decisions).
pub const APPROVE_RIGHT: Rights = Rights::MANAGE_PERMISSIONS;

/// Whether an API caller may approve or reject requests at `path`.
pub fn may_approve(c: &Caller, path: &FolderPath) -> bool {
    c.perms.master_admin || c.perms.effective(path).implied().contains(APPROVE_RIGHT)
}

/// The waiting or rejected request at certificate DN `dn` (any spelling of it).
pub async fn pending_at(store: &dyn Store, dn: &str) -> Result<PendingRecord> {
    let shown = policy_dn(dn);
    let missing = || CertError::NoCertificate(format!("No request for {shown} waits for approval."));
    let Ok(p) = FolderPath::parse(&shown) else { return Err(missing()) };
    store.pending_certificate(p.key().to_owned()).await?.ok_or_else(missing)
}

/// The processing state of an object: its waiting or rejected request, if any.
pub async fn processing(store: &dyn Store, r: &CertRecord) -> Result<Option<PendingRecord>> {
    Ok(store.pending_certificate(r.path.key().to_owned()).await?)
}

/// The error a Retrieve answers while the object's request waits or was rejected.
pub fn processing_error(p: &PendingRecord) -> CertError {
    if p.rejected {
        CertError::Failed { dn: p.path.as_str().to_owned(), stage: PENDING_STAGE, status: p.status.clone() }
    } else {
        CertError::Pending { dn: p.path.as_str().to_owned(), stage: PENDING_STAGE, status: p.status.clone() }
    }
}

/// Approves the waiting request `p` (at `version`, if the approver saw one: else the one read):
/// judged by the policy again and issued as its Request or Renew would have been, in one write
/// that takes the waiting request (two approvals issue once). `actor.writer`'s [`APPROVE_RIGHT`]
/// is re-checked there.
impl Authority<'_> {
    pub async fn approve(&self, actor: &Actor<'_>, p: &PendingRecord, version: Option<i64>) -> Result<Requested> {
        let app = *self;
        if p.rejected {
            return Err(CertError::Invalid(format!("The request for {} was rejected: Certificates/Retry sets it waiting again.", p.path)));
        }
        let version = version.unwrap_or(p.version);
        let input: RequestInput =
            serde_json::from_str(&p.request).map_err(|e| CertError::Internal(format!("the kept request of {}: {e}", p.path)))?;
        let folder = parent_folder(&p.path)?;
        let csr = parsed_csr(&input)?;
        let t = Target::read(app.store, folder, p.path.clone()).await?;
        enroll_as(app, actor, &input, csr, t, APPROVE_RIGHT, p.renewal, Mode::Approve(version)).await
    }

    /// Rejects (`Reject`), sets waiting again (`Retry`) or drops (`Cancel`) the request `p`
    /// (at `version`), with the actor's `need` re-checked in the write.
    pub async fn settle(
        &self,
        actor: &Actor<'_>,
        p: &PendingRecord,
        version: Option<i64>,
        change: PendingChange,
        need: Rights,
    ) -> Result<()> {
        let app = self;
        let (kind, detail) = match &change {
            PendingChange::Reject(why) => (EventKind::CertificateRejected, format!("certificate={} reason={why:?}", p.path)),
            PendingChange::Retry(_) => (EventKind::CertificateProcessingReset, format!("certificate={} retry=waiting again", p.path)),
            PendingChange::Cancel => (
                EventKind::CertificateProcessingReset,
                format!("certificate={} reset=request dropped (was {})", p.path, if p.rejected { "rejected" } else { "waiting" }),
            ),
        };
        let event = actor.event(kind, None).object(p.path.as_str()).detail(detail);
        let version = version.unwrap_or(p.version);
        match app.store.settle_pending(p.path.key().to_owned(), version, change, actor.writer.clone(), need, event).await? {
            Checked::Done(true) => Ok(()),
            Checked::Done(false) => Err(CertError::Invalid(format!(
                "The request for {} was approved, rejected or replaced meanwhile: nothing was changed.",
                p.path
            ))),
            Checked::Denied => Err(CertError::Denied(format!("Changing the request for {} needs another right on it.", p.path))),
        }
    }
}

/// A rejection's `Status` (InError): the product's text, then the approver's reason.
pub fn rejected_status(reason: &str) -> String {
    let reason: String = reason.chars().filter(|c| !c.is_control()).take(300).collect();
    format!("Rejected by the approver: {}", reason.trim())
}

/// The waiting (or rejected) request of the certificate object of GUID `guid` (the product's
/// workflow ticket: one per object here, named by the object's GUID), if the caller may know of
/// the object.
pub async fn pending_by_guid(app: &App, c: &Caller, guid: &str) -> Result<PendingRecord> {
    let missing = || CertError::NoCertificate(format!("Ticket {guid} does not exist."));
    let r = object_by_guid(app, c, guid).await.map_err(|_| missing())?;
    processing(&*app.store, &r).await?.ok_or_else(missing)
}

/// The waiting requests an API caller may know of (any right on the object), oldest first; with
/// `dn`, that object's only.
pub async fn pending_for(app: &App, c: &Caller, dn: Option<&str>) -> Result<Vec<PendingRecord>> {
    let all = match dn.filter(|d| !d.trim().is_empty()) {
        Some(dn) => match object(app, c, dn).await {
            Ok(r) => processing(&*app.store, &r).await?.into_iter().collect(),
            Err(CertError::NoCertificate(_)) => Vec::new(),
            Err(e) => return Err(e),
        },
        None => app.store.pending_certificates().await?,
    };
    Ok(all.into_iter().filter(|p| c.perms.effective(&p.path).implied() != Rights::NONE).collect())
}

/// An API caller approves (`Workflow/Ticket/UpdateStatus` `Approved`): a Master Admin or
/// [`APPROVE_RIGHT`] on the object (re-checked in the write); 403 otherwise.
pub async fn approve_as_caller(app: &App, c: &Caller, p: &PendingRecord) -> Result<Requested> {
    if !may_approve(c, &p.path) {
        return Err(CertError::Denied(format!("Approving the request for {} needs Manage Permissions on it.", p.path)));
    }
    let make = |kind: EventKind| c.event(app, kind, None);
    app.authority().approve(&caller_actor(c, &make), p, None).await
}

/// An API caller rejects (`Workflow/Ticket/UpdateStatus` `Rejected`), as [`approve_as_caller`].
pub async fn reject_as_caller(app: &App, c: &Caller, p: &PendingRecord, reason: &str) -> Result<()> {
    if !may_approve(c, &p.path) {
        return Err(CertError::Denied(format!("Rejecting the request for {} needs Manage Permissions on it.", p.path)));
    }
    if p.rejected {
        return Err(CertError::Invalid(format!("The request for {} was rejected already.", p.path)));
    }
    let make = |kind: EventKind| c.event(app, kind, None);
    let reason = if reason.trim().is_empty() { "no reason given" } else { reason };
    app.authority().settle(&caller_actor(c, &make), p, None, PendingChange::Reject(rejected_status(reason)), APPROVE_RIGHT).await
}

/// An API caller as an [`Actor`] (their rights re-checked in the write).
pub fn caller_actor<'a>(c: &Caller, event: &'a (dyn Fn(EventKind) -> Event + Send + Sync)) -> Actor<'a> {
    Actor { writer: Some(c.writer()), current_keys: c.current_keys.clone(), name: c.user_id.identity(), event }
}

/// `Certificates/Reset`: Write on the object. A request waiting for approval, or
/// rejected, is dropped (the object is as before it: its previous certificate, or none);
/// otherwise nothing is in progress here (issuance is synchronous), so a certificate that exists
/// needs no reset.
pub async fn reset(app: &App, c: &Caller, dn: &str) -> Result<()> {
    match object(app, c, dn).await {
        Ok(r) => {
            let Some(p) = processing(&*app.store, &r).await? else {
                return Err(CertError::Invalid("Reset is not completed. No reset is required for the certificate.".into()));
            };
            if !c.perms.effective(&r.path).implied().contains(Rights::WRITE) {
                return Err(CertError::Denied(format!("Resetting {} needs Write on it.", r.path)));
            }
            let make = |kind: EventKind| c.event(app, kind, None);
            app.authority().settle(&caller_actor(c, &make), &p, None, PendingChange::Cancel, Rights::WRITE).await
        }
        Err(CertError::NoCertificate(_)) => Err(CertError::Invalid(format!(
            "Certificate {} does not exist or you do not have sufficient rights to the object.",
            policy_dn(dn)
        ))),
        Err(e) => Err(e),
    }
}

/// `Certificates/Retry`: Write on the object. A rejected request waits for approval again;
/// anything else has nothing to retry (400).
pub async fn retry(app: &App, c: &Caller, dn: &str) -> Result<()> {
    let r = object(app, c, dn).await?;
    let Some(p) = processing(&*app.store, &r).await?.filter(|p| p.rejected) else {
        return Err(CertError::Invalid("Retry is not needed: the certificate is not in an error state.".into()));
    };
    if !c.perms.effective(&r.path).implied().contains(Rights::WRITE) {
        return Err(CertError::Denied(format!("Retrying {} needs Write on it.", r.path)));
    }
    let make = |kind: EventKind| c.event(app, kind, None);
    app.authority().settle(&caller_actor(c, &make), &p, None, PendingChange::Retry(PENDING_STATUS.to_owned()), Rights::WRITE).await
}
