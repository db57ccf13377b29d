//! `Certificates/Request` and `Renew`, and the issuance an approval makes: the request's context
//! read in one call, the decision asked of `strongroom_core::cert::enroll`, the key made (within
//! the key generator's bounds), the certificate signed and the one write that stores it; or the
//! request kept waiting for an approver.

use super::*;

/// What `Certificates/Request` (and `Renew`) is given, as read from its body (and, for a request
/// waiting for approval, as kept until then: it holds no secret).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct RequestInput {
    pub policy_dn: String,
    pub object_name: Option<String>,
    /// PKCS#10 text (user CSR); `None` for central generation.
    pub pkcs10: Option<String>,
    /// The CN of a central request (`Subject`).
    pub subject: Option<String>,
    pub organization: Option<String>,
    pub organizational_unit: Vec<String>,
    pub city: Option<String>,
    pub state: Option<String>,
    pub country: Option<String>,
    /// `(Type or TypeName, Name)`.
    pub sans: Vec<(String, String)>,
    pub key_algorithm: Option<String>,
    pub key_bit_size: Option<u32>,
    pub elliptic_curve: Option<String>,
    pub pkix_parameter_set: Option<String>,
    pub cadn: Option<String>,
    /// `Specific End Date` (or a CA-prefixed variant) from `CASpecificAttributes`.
    pub end_date: Option<String>,
    pub disable_automatic_renewal: bool,
    /// `CustomFields[{Name, Values}]`: custom field values by the field's name (label).
    pub custom_fields: Vec<(String, Vec<String>)>,
}

/// The object a request made or re-enrolled.
#[derive(Clone, Debug)]
pub struct Requested {
    pub dn: String,
    pub guid: ObjectGuid,
}

fn sans_of(input: &RequestInput) -> Result<Sans> {
    let mut s = Sans::default();
    for (kind, name) in &input.sans {
        if name.trim().is_empty() {
            continue;
        }
        s.push(kind, name)?;
    }
    Ok(s)
}

/// The subject a request brings: its CSR's, or a central request's `Subject` (as CN) and subject
/// fields, each without the spaces around it.
fn asked_subject(csr: Option<&Csr>, input: &RequestInput) -> Vec<(String, String)> {
    if let Some(c) = csr {
        return c.subject.clone();
    }
    let mut v = Vec::new();
    for (k, val) in [("CN", &input.subject), ("O", &input.organization), ("L", &input.city), ("ST", &input.state), ("C", &input.country)] {
        if let Some(x) = val.as_ref().filter(|x| !x.trim().is_empty()) {
            v.push((k.to_owned(), x.trim().to_owned()));
        }
    }
    for ou in &input.organizational_unit {
        v.push(("OU".to_owned(), ou.clone()));
    }
    v
}

/// What `input` (with its CSR, and `renewed_by` for a renewal) asks, as the decision reads it.
fn ask_of(input: &RequestInput, csr: Option<&Csr>, sans: &Sans, renewed_by: Option<&str>) -> Ask {
    // The CSR's field, else the body's (a CSR without one is judged by what the body says).
    let field = |k: &str, v: &Option<String>| csr.and_then(|x| x.get(k)).map(str::to_owned).or_else(|| v.clone());
    Ask {
        subject: asked_subject(csr, input),
        csr_key: csr.map(|x| x.key.spec),
        dns: sans.dns.clone(),
        san_kinds: sans.kinds().into_iter().map(str::to_owned).collect(),
        organization: field("O", &input.organization),
        organizational_unit: match csr {
            Some(x) => x.subject.iter().filter(|(k, _)| k == "OU").map(|(_, v)| v.clone()).collect(),
            None => input.organizational_unit.clone(),
        },
        city: field("L", &input.city),
        state: field("ST", &input.state),
        country: field("C", &input.country),
        key_algorithm: input.key_algorithm.clone(),
        key_bit_size: input.key_bit_size,
        elliptic_curve: input.elliptic_curve.clone(),
        pkix_parameter_set: input.pkix_parameter_set.clone(),
        ca: input.cadn.clone(),
        renewed_by: renewed_by.map(str::to_owned),
        end_date: input.end_date.clone(),
    }
}

/// The CAs as a request is decided on (each one's certificate's end read from it).
fn ca_views(cas: &[CaRecord]) -> Result<Vec<CaView>> {
    cas.iter()
        .map(|ca| {
            let not_after = match ca_certificate(ca) {
                Some(der) => Some(pki::cert_facts(der)?.not_after),
                None => None,
            };
            Ok(CaView {
                name: ca.name.clone(),
                dn: ca.dn.clone(),
                validity_days: ca.validity_days,
                manual_approval: ca.manual_approval,
                not_after,
            })
        })
        .collect()
}

impl From<Refused> for CertError {
    fn from(r: Refused) -> Self {
        match r {
            Refused::Invalid(m) => CertError::Invalid(m),
            Refused::Unsupported(m) => CertError::Unsupported(m),
        }
    }
}

fn object_name(input: &RequestInput, cn: Option<&str>, sans: &Sans) -> Result<String> {
    let name = input
        .object_name
        .clone()
        .filter(|n| !n.trim().is_empty())
        .or_else(|| cn.map(str::to_owned))
        .or_else(|| sans.dns.first().cloned())
        .or_else(|| sans.uri.first().cloned())
        .or_else(|| sans.email.first().cloned())
        .or_else(|| sans.ip.first().cloned())
        .ok_or_else(|| CertError::Invalid("The request names no certificate: give ObjectName, a CN or a SAN.".into()))?;
    let name = name.trim().to_owned();
    if name.contains('\\') || name.len() > 256 {
        return Err(CertError::Invalid(format!("ObjectName {} cannot be a certificate's name.", ccert::names::shown(&name))));
    }
    Ok(name)
}

/// A request for a DN: where it goes, and what it is decided on, read in one call.
pub(super) struct Target {
    folder: FolderPath,
    path: FolderPath,
    ctx: RequestContext,
}

impl Target {
    /// The context of a request at `path` under the policy folder `folder`.
    pub(super) async fn read(store: &dyn Store, folder: FolderPath, path: FolderPath) -> Result<Target> {
        let ctx = store.request_context(folder.clone(), path.clone()).await?;
        Ok(Target { folder, path, ctx })
    }

    fn existing(&self) -> Option<&CertRecord> {
        self.ctx.existing.as_ref()
    }

    /// [`place`] of this object (the existing one's GUID, if any).
    fn place(&self, rng: &dyn Random) -> (ObjectGuid, Vec<(FolderPath, ObjectGuid)>) {
        place(&self.path, self.existing().map(|e| &e.guid), rng)
    }

    /// The policy in force at its folder.
    fn policy(&self) -> Result<Policy> {
        let own = |(_, text): &(String, String)| {
            serde_json::from_str::<Policy>(text).map_err(|e| CertError::Internal(format!("a stored policy: {e}")))
        };
        let chain = self.ctx.policies.iter().map(own).collect::<Result<Vec<_>>>()?;
        Ok(Policy::effective(&chain))
    }
}

/// The GUID of the object at `path` (`existing`, or a new one) and the folders down to it, each
/// with a GUID for the ones a write creates (the object's own: that GUID).
pub(super) fn place(path: &FolderPath, existing: Option<&ObjectGuid>, rng: &dyn Random) -> (ObjectGuid, Vec<(FolderPath, ObjectGuid)>) {
    let guid = existing.cloned().unwrap_or_else(|| ObjectGuid::generate(rng));
    let mut lineage = lineage_with_guids(path, rng);
    if let Some(last) = lineage.last_mut() {
        last.1 = guid.clone();
    }
    (guid, lineage)
}

/// The row of a certificate object that holds no certificate yet (made by `Config/Create`, or
/// waiting for approval): `sans` as stored (JSON), no template.
pub(super) fn unissued(
    path: &FolderPath,
    guid: ObjectGuid,
    ca_key: String,
    cn: String,
    sans: String,
    now: strongroom_core::time::UnixTime,
) -> CertRecord {
    CertRecord {
        path: path.clone(),
        guid,
        ca_key,
        cn,
        sans,
        serial: String::new(),
        thumbprint: String::new(),
        valid_from: 0,
        valid_to: 0,
        cert_vault_id: VaultId(0),
        key_vault_id: None,
        csr_vault_id: None,
        disabled: false,
        revoked: false,
        version: 0,
        created_at: now,
        issued_at: now,
        template: String::new(),
    }
}

/// A new request's target: object `name` under the policy folder `folder`, which must be one and
/// in which the caller holds Create.
async fn target(app: &App, c: &Caller, folder: FolderPath, name: &str) -> Result<Target> {
    let bad_name = || CertError::Invalid(format!("ObjectName {name:?} cannot be a certificate's name."));
    let path = FolderPath::parse(&format!("{}\\{name}", folder.as_str())).map_err(|_| bad_name())?;
    if path.check_new().is_err() {
        return Err(bad_name());
    }
    let t = Target::read(&*app.store, folder, path).await?;
    check_policy_folder(&t.folder, t.ctx.folder_exists, t.ctx.folder_is_certificate, &t.ctx.cas)?;
    if !c.perms.effective(&t.folder).implied().contains(Rights::CREATE) {
        return Err(CertError::Denied(format!("Requesting a certificate needs Create on {}.", t.folder.as_str())));
    }
    if t.ctx.folder_at_dn {
        return Err(CertError::Invalid(format!("{} is a folder, not a certificate.", t.path.as_str())));
    }
    Ok(t)
}

/// The data key entries are sealed under: (key name, key id, key).
type DataKey = (String, i64, crypto::Key);

fn sealed_entry(app: Authority<'_>, dk: &DataKey, id: VaultId, vault_type: i32, owner: &FolderPath, plain: &[u8]) -> Result<VaultEntry> {
    let (key_name, key_id, key) = (&dk.0, dk.1, &dk.2);
    let sealed = crypto::seal(key, &**app.rng, &crypto::aad_data(id, key_id), plain)
        .map_err(|_| CertError::Internal("sealing a certificate entry failed".into()))?;
    Ok(VaultEntry {
        vault_id: id,
        vault_type,
        key_name: key_name.to_owned(),
        key_id,
        sealed,
        owners: vec![owner.clone()],
        created_at: app.now(),
    })
}

/// Whether an issuance is a request (which may wait for approval) or an approval of one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    Request,
    /// The waiting request's version the approver saw.
    Approve(i64),
}

/// Issues a certificate for `input` (with its CSR, parsed) at `t` and writes it: the one write of a
/// Request or Renew. `need` is re-checked in the write on `t.folder` (a request: Create) or on the
/// object (a renewal: Write).
async fn enroll(
    app: &App,
    c: &Caller,
    input: &RequestInput,
    csr: Option<Csr>,
    t: Target,
    need: Rights,
    renewal: bool,
) -> Result<Requested> {
    let make = |kind: EventKind| c.event(app, kind, None);
    let actor = Actor { writer: Some(c.writer()), current_keys: c.current_keys.clone(), name: c.user_id.identity(), event: &make };
    enroll_as(app.authority(), &actor, input, csr, t, need, renewal, Mode::Request).await
}

/// [`enroll`] for any actor: the context `t` read, the decision asked of
/// [`strongroom_core::cert::enroll::decide`], then the key made (a central request), the
/// certificate signed and the one write. With [`Mode::Approve`], the approval of the waiting
/// request (`need` re-checked on the object, the waiting request taken in the write), never
/// parked again.
#[allow(clippy::too_many_arguments)]
pub(super) async fn enroll_as(
    app: Authority<'_>,
    c: &Actor<'_>,
    input: &RequestInput,
    csr: Option<Csr>,
    t: Target,
    need: Rights,
    renewal: bool,
    mode: Mode,
) -> Result<Requested> {
    let fields = request_fields(&t.ctx.fields, input, t.existing())?;
    let policy = t.policy()?;
    let mut sans = csr.as_ref().map(|x| x.sans.clone()).unwrap_or_default();
    sans.merge(&sans_of(input)?);
    let renewed_by = if renewal { t.existing().map(|e| e.ca_key.as_str()) } else { None };
    let ask = ask_of(input, csr.as_ref(), &sans, renewed_by);
    let now = app.now().secs();
    let decision = enroll::decide(&policy, &ask, &ca_views(&t.ctx.cas)?, now)?;
    let ca = &t.ctx.cas[decision.ca];
    let spec = decision.key;
    sans.dns = decision.dns.clone();
    let cn = decision.subject.iter().find(|(k, _)| k == "CN").map(|(_, v)| v.clone());
    if decision.wait_for_approval && mode == Mode::Request {
        return park(app, c, input, &t, need, renewal, ca, &cn, &sans, spec).await;
    }
    let not_after = decision.not_after;
    let (issued, generated) = app.sign(c, csr.as_ref(), &decision, ca, &sans, now).await?;
    let Sealed { entries, cert_id, key_vault_id, csr_vault_id } =
        app.seal_entries(c, &t.path, &issued.der, generated.as_ref(), csr.as_ref()).await?;
    let (guid, lineage) = t.place(&**app.rng);
    let existing = t.existing();
    let record = CertRecord {
        path: t.path.clone(),
        guid: guid.clone(),
        ca_key: ca.name.to_lowercase(),
        cn: cn.clone().unwrap_or_default(),
        sans: serde_json::to_string(&sans).map_err(|e| CertError::Internal(e.to_string()))?,
        serial: issued.serial.clone(),
        thumbprint: issued.thumbprint.clone(),
        valid_from: now - 60,
        valid_to: not_after,
        cert_vault_id: cert_id,
        key_vault_id,
        csr_vault_id,
        disabled: false,
        revoked: false,
        version: existing.map_or(0, |e| e.version + 1),
        created_at: existing.map_or(app.now(), |e| e.created_at),
        issued_at: app.now(),
        template: existing.map(|e| e.template.clone()).unwrap_or_default(),
    };
    let first = existing.is_some_and(|e| !e.issued());
    let how = match (&csr, renewal) {
        (Some(_), true) if first => "first enrollment, user CSR",
        (None, true) if first => "first enrollment, central key",
        (Some(_), false) => "user CSR",
        (None, false) => "central key",
        (Some(_), true) => "renewal, new CSR",
        (None, true) => "renewal, new central key",
    };
    let requested = match mode {
        Mode::Request => c.event(EventKind::CertificateRequested, Some(cert_id)).detail(format!(
            "certificate={} ca={} key={} how={how}",
            t.path,
            ca.name,
            spec.describe()
        )),
        Mode::Approve(version) => c.event(EventKind::CertificateApproved, Some(cert_id)).detail(format!(
            "certificate={} ca={} key={} how={how} request_version={version}",
            t.path,
            ca.name,
            spec.describe()
        )),
    };
    let issued_event = c.event(EventKind::CertificateIssued, Some(cert_id)).detail(format!(
        "certificate={} ca={} serial={} thumbprint={} not_after={not_after}",
        t.path, ca.name, issued.serial, issued.thumbprint
    ));
    let checked_at = if renewal || mode != Mode::Request { t.path.clone() } else { t.folder.clone() };
    let issue = Issuance { record, lineage, entries, by: c.writer.clone(), need, policy_folder: checked_at, fields };
    if let Mode::Approve(version) = mode {
        return match app.store.approve_certificate(issue, version, vec![requested, issued_event]).await? {
            Checked::Done(true) => Ok(Requested { dn: t.path.as_str().to_owned(), guid }),
            Checked::Done(false) => Err(CertError::Invalid(format!(
                "The request for {} was approved, rejected or replaced meanwhile: nothing was issued.",
                t.path
            ))),
            Checked::Denied => Err(CertError::Denied(format!("Approving the request for {} needs Manage Permissions on it.", t.path))),
        };
    }
    match app.store.issue_certificate(issue, vec![requested, issued_event]).await? {
        Checked::Done(()) => Ok(Requested { dn: t.path.as_str().to_owned(), guid }),
        Checked::Denied if renewal => Err(CertError::Denied(format!("Renewing {} needs Write on it.", t.path))),
        Checked::Denied => Err(CertError::Denied("Requesting a certificate needs Create on its policy folder.".into())),
    }
}

/// An issuance's entries, sealed, with their ids.
struct Sealed {
    entries: Vec<VaultEntry>,
    cert_id: VaultId,
    key_vault_id: Option<VaultId>,
    csr_vault_id: Option<VaultId>,
}

impl Authority<'_> {
    /// The certificate `d` decided, signed by `ca` for the CSR's key or one made now (off the
    /// async threads, within the generator's bounds: an RSA key takes a core for 0.1 s to
    /// seconds), and the key made, if any.
    async fn sign(
        &self,
        c: &Actor<'_>,
        csr: Option<&Csr>,
        d: &enroll::Decision,
        ca: &CaRecord,
        sans: &Sans,
        now: i64,
    ) -> Result<(pki::Issued, Option<PrivateKey>)> {
        let ca_cert =
            ca_certificate(ca).map(<[u8]>::to_vec).ok_or_else(|| CertError::Internal(format!("CA {}: no certificate", ca.name)))?;
        let generated = match csr {
            Some(_) => None,
            None => Some(match self.keygen {
                Some(k) => k.generate(&c.name, d.key, self.rng.clone()).await?,
                None => crate::keygen::unbounded(d.key, self.rng.clone()).await?,
            }),
        };
        let leaf_key = match (csr, &generated) {
            (Some(x), _) => x.key.clone(),
            (None, Some(k)) => pki::public_of(k)?,
            (None, None) => return Err(CertError::Internal("no key".into())),
        };
        let signer = ca_signer(self.store, self.keyring, ca).await?;
        let url = crl_url(self.public_url, &ca.name);
        let not_after = d.not_after;
        // Signed on the blocking pool: a token's key signs with blocking calls (its session is
        // one at a time per key, so concurrent requests queue there, not on the async threads).
        let (subject, sans, rng) = (d.subject.clone(), sans.clone(), self.rng.clone());
        let issued = tokio::task::spawn_blocking(move || {
            pki::issue(
                &Issuer { cert_der: &ca_cert, signer: &*signer },
                &pki::Leaf { subject: &subject, sans: &sans, key: &leaf_key, not_before: now - 60, not_after, crl_url: &url },
                &*rng,
            )
        })
        .await
        .map_err(|e| CertError::Internal(format!("signing the certificate: {e}")))??;
        Ok((issued, generated))
    }

    /// The certificate, the key made (if any) and the CSR (if any) as entries owned by `owner`,
    /// sealed under the current data key, with the ids one store call gives.
    async fn seal_entries(
        &self,
        c: &Actor<'_>,
        owner: &FolderPath,
        cert: &[u8],
        key: Option<&PrivateKey>,
        csr: Option<&Csr>,
    ) -> Result<Sealed> {
        let default = self.keyring.default_name().to_owned();
        let dk: DataKey = self
            .keyring
            .current(self.store, &**self.rng, self.now(), &default, &c.current_keys)
            .await
            .map_err(|e| CertError::Internal(format!("the key ring: {e}")))?;
        let plain: Vec<(i32, &[u8])> = [
            (vault_type::CERTIFICATE, Some(cert)),
            (vault_type::PKCS8, key.map(|k| &k.0[..])),
            (vault_type::PKCS10, csr.map(|x| &x.der[..])),
        ]
        .into_iter()
        .filter_map(|(t, p)| p.map(|p| (t, p)))
        .collect();
        let ids = self.store.allocate_vault_ids(plain.len()).await?;
        if ids.len() != plain.len() {
            return Err(CertError::Internal("too few vault ids".into()));
        }
        let entries = ids.iter().zip(&plain).map(|(id, (t, p))| sealed_entry(*self, &dk, *id, *t, owner, p)).collect::<Result<Vec<_>>>()?;
        let id_of = |t: i32| entries.iter().find(|e| e.vault_type == t).map(|e| e.vault_id);
        let cert_id = id_of(vault_type::CERTIFICATE).ok_or_else(|| CertError::Internal("no certificate entry".into()))?;
        Ok(Sealed { cert_id, key_vault_id: id_of(vault_type::PKCS8), csr_vault_id: id_of(vault_type::PKCS10), entries })
    }
}

/// A request judged by the policy whose CA (or folder) wants `Manual Approval`: kept, with the
/// object (made if need be, holding no certificate), waiting at [`PENDING_STAGE`]; nothing is
/// issued. One write, `need` re-checked as for an issuance.
#[allow(clippy::too_many_arguments)]
async fn park(
    app: Authority<'_>,
    c: &Actor<'_>,
    input: &RequestInput,
    t: &Target,
    need: Rights,
    renewal: bool,
    ca: &CaRecord,
    cn: &Option<String>,
    sans: &Sans,
    spec: KeySpec,
) -> Result<Requested> {
    let now = app.now();
    let (guid, lineage) = t.place(&**app.rng);
    // The object as it shows until the approval: no certificate (written only for a new DN).
    let sans_json = serde_json::to_string(sans).map_err(|e| CertError::Internal(e.to_string()))?;
    let placeholder = unissued(&t.path, guid.clone(), ca.name.to_lowercase(), cn.clone().unwrap_or_default(), sans_json, now);
    let mut kept = input.clone();
    kept.policy_dn = t.folder.as_str().to_owned();
    kept.object_name = Some(ccert_name(&t.path));
    let pending = PendingRecord {
        path: t.path.clone(),
        guid: guid.clone(),
        ca_key: ca.name.to_lowercase(),
        request: serde_json::to_string(&kept).map_err(|e| CertError::Internal(e.to_string()))?,
        renewal,
        requested_by: c.name.clone(),
        requested_at: now,
        rejected: false,
        status: PENDING_STATUS.to_owned(),
        version: 0,
    };
    let how = match (input.pkcs10.as_ref().is_some_and(|p| !p.trim().is_empty()), renewal) {
        (true, false) => "user CSR",
        (false, false) => "central key",
        (true, true) => "renewal, new CSR",
        (false, true) => "renewal, new central key",
    };
    let requested = c.event(EventKind::CertificateRequested, None).detail(format!(
        "certificate={} ca={} key={} how={how} waiting=manual approval",
        t.path,
        ca.name,
        spec.describe()
    ));
    let checked_at = if renewal { t.path.clone() } else { t.folder.clone() };
    let park = Parking { placeholder, lineage, pending, by: c.writer.clone(), need, policy_folder: checked_at };
    match app.store.park_certificate(park, vec![requested]).await? {
        Checked::Done(()) => Ok(Requested { dn: t.path.as_str().to_owned(), guid }),
        Checked::Denied if renewal => Err(CertError::Denied(format!("Renewing {} needs Write on it.", t.path))),
        Checked::Denied => Err(CertError::Denied("Requesting a certificate needs Create on its policy folder.".into())),
    }
}

/// `Certificates/Request`: Create on the policy folder. A DN that holds a certificate is
/// re-enrolled (its certificate, key and CSR archived).
pub async fn request(app: &App, c: &Caller, input: RequestInput) -> Result<Requested> {
    let folder = policy_path(&input.policy_dn)?;
    let csr = parsed_csr(&input)?;
    // The CN (the CSR's, else `Subject` without the spaces around it), refused here if it is no
    // name: the object may be named after it.
    let csr_cn = csr.as_ref().and_then(|x| x.get("CN")).map(str::to_owned);
    let cn = csr_cn.or_else(|| input.subject.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned));
    if let Some(cn) = &cn {
        ccert::names::attribute("CN", cn).map_err(CertError::Invalid)?;
    }
    let name = object_name(&input, cn.as_deref(), &sans_of(&input)?)?;
    let t = target(app, c, folder, &name).await?;
    enroll(app, c, &input, csr, t, Rights::CREATE, false).await
}

/// The request's CSR, parsed, if it brings one.
pub(super) fn parsed_csr(input: &RequestInput) -> Result<Option<Csr>> {
    Ok(input.pkcs10.as_ref().filter(|p| !p.trim().is_empty()).map(|text| pki::parse_csr(text)).transpose()?)
}

/// The policy folder an object sits in.
pub(super) fn parent_folder(path: &FolderPath) -> Result<FolderPath> {
    let dn = strongroom_core::tree::parent_of(path.as_str()).unwrap_or_else(|| "\\VED\\Policy".into());
    FolderPath::parse(&dn).map_err(|_| no_certificate(path.as_str()))
}

/// `Certificates/Renew`: Write on the object. A new CSR, or (none given) a new central key
/// when the object had one, else the CSR on file is signed again. An object made with
/// `Config/Create` is enrolled from its attributes. A disabled object only with `reenable`
/// (the new certificate's object is enabled).
pub async fn renew(app: &App, c: &Caller, dn: &str, pkcs10: Option<String>, reenable: bool) -> Result<Requested> {
    // The object and what its renewal is decided on, in one call.
    let Ok(path) = FolderPath::parse(&policy_dn(dn)) else { return Err(no_certificate(dn.trim())) };
    let t = Target::read(&*app.store, parent_folder(&path)?, path).await?;
    let r = match t.existing() {
        Some(r) if c.perms.effective(&r.path).implied() != Rights::NONE => r.clone(),
        _ => return Err(no_certificate(t.path.as_str())),
    };
    if !c.perms.effective(&r.path).implied().contains(Rights::WRITE) {
        return Err(CertError::Denied(format!("Renewing {} needs Write on it.", r.path)));
    }
    if r.disabled && !reenable {
        return Err(CertError::Invalid(format!("{} is disabled: renew it with Reenable true, which enables it again.", r.path)));
    }
    let entries = app.store.cert_entries(r.path.clone()).await?;
    if !r.template.is_empty() {
        // An object made with Config/Create: enrolled (the first time too) from its attributes.
        let tpl: Template =
            serde_json::from_str(&r.template).map_err(|e| CertError::Internal(format!("the attributes of {}: {e}", r.path)))?;
        let mut pkcs10 = pkcs10.filter(|p| !p.trim().is_empty());
        if pkcs10.is_none() && tpl.manual_csr == Some(true) {
            match r.csr_vault_id.and_then(|id| entries.iter().find(|e| e.vault_id == id)) {
                Some(e) => pkcs10 = Some(pki::pem("CERTIFICATE REQUEST", &open_entry(app, e).await?)),
                None => {
                    return Err(CertError::Invalid(format!("{} takes the requester's CSR (Manual Csr is 1): give a PKCS10.", r.path)));
                }
            }
        }
        let input = template_input(&tpl, &t.folder, &r.path, pkcs10);
        let csr = parsed_csr(&input)?;
        let mut out = enroll(app, c, &input, csr, t, Rights::WRITE, true).await?;
        out.dn = r.path.as_str().to_owned();
        return Ok(out);
    }
    let cert_entry = entries.iter().find(|e| e.vault_id == r.cert_vault_id).ok_or_else(|| no_certificate(r.path.as_str()))?;
    let old = open_entry(app, cert_entry).await?;
    let facts = pki::cert_facts(&old)?;
    let pkcs10 = match pkcs10.filter(|p| !p.trim().is_empty()) {
        Some(p) => Some(p),
        None if r.key_vault_id.is_some() => None,
        None => match r.csr_vault_id.and_then(|id| entries.iter().find(|e| e.vault_id == id)) {
            Some(e) => Some(pki::pem("CERTIFICATE REQUEST", &open_entry(app, e).await?)),
            None => return Err(CertError::Invalid("Give a PKCS10: the certificate has no CSR on file.".into())),
        },
    };
    let sans: Sans = serde_json::from_str(&r.sans).unwrap_or_default();
    let mut san_list: Vec<(String, String)> = Vec::new();
    for (k, list) in [("dns", &sans.dns), ("ip", &sans.ip), ("email", &sans.email), ("uri", &sans.uri), ("upn", &sans.upn)] {
        for v in list {
            san_list.push((k.into(), v.clone()));
        }
    }
    let input = RequestInput {
        policy_dn: t.folder.as_str().to_owned(),
        object_name: Some(ccert_name(&r.path)),
        pkcs10: pkcs10.clone(),
        subject: if pkcs10.is_none() { Some(r.cn.clone()) } else { None },
        organization: facts.subject.iter().find(|(k, _)| k == "O").map(|(_, v)| v.clone()),
        organizational_unit: facts.subject.iter().filter(|(k, _)| k == "OU").map(|(_, v)| v.clone()).collect(),
        sans: if pkcs10.is_none() { san_list } else { Vec::new() },
        key_algorithm: Some(facts.key.algorithm().to_owned()),
        key_bit_size: match facts.key {
            KeySpec::Rsa(b) => Some(b),
            KeySpec::Ec(_) => None,
        },
        elliptic_curve: match facts.key {
            KeySpec::Ec(c) => Some(c.as_str().to_owned()),
            KeySpec::Rsa(_) => None,
        },
        ..RequestInput::default()
    };
    let csr = parsed_csr(&input)?;
    let mut out = enroll(app, c, &input, csr, t, Rights::WRITE, true).await?;
    out.dn = r.path.as_str().to_owned();
    Ok(out)
}

/// What an object made with `Config/Create` asks, as a request: its subject, SANs (with a CSR,
/// the CSR's), key (without one), CA.
fn template_input(t: &Template, folder: &FolderPath, path: &FolderPath, pkcs10: Option<String>) -> RequestInput {
    let mut sans = Vec::new();
    if pkcs10.is_none() {
        for (k, list) in [("dns", &t.dns), ("ip", &t.ip), ("email", &t.email), ("uri", &t.uri), ("upn", &t.upn)] {
            for v in list {
                sans.push((k.to_owned(), v.clone()));
            }
        }
    }
    RequestInput {
        policy_dn: folder.as_str().to_owned(),
        object_name: Some(ccert_name(path)),
        pkcs10,
        subject: t.common_name.clone(),
        organization: t.organization.clone(),
        organizational_unit: t.organizational_unit.clone(),
        city: t.city.clone(),
        state: t.state.clone(),
        country: t.country.clone(),
        sans,
        key_algorithm: t.key_algorithm.clone(),
        key_bit_size: t.key_bit_strength,
        elliptic_curve: t.elliptic_curve.clone(),
        pkix_parameter_set: t.pkix_parameter_set.clone(),
        cadn: t.certificate_authority.clone(),
        end_date: None,
        disable_automatic_renewal: t.disable_automatic_renewal,
        custom_fields: Vec::new(),
    }
}
