//! Certificate objects: found by DN, GUID or thumbprint, made by `Config/Create`, revoked,
//! disabled, deleted, searched; their previous versions and facts.

use super::*;

pub(super) fn no_certificate(dn: &str) -> CertError {
    CertError::NoCertificate(format!("Certificate {dn} does not exist."))
}

/// An object made with `Config/Create` that holds no certificate yet.
pub(super) fn not_enrolled(r: &CertRecord) -> CertError {
    CertError::Invalid(format!("Certificate {} has no certificate yet: Certificates/Renew enrolls it.", r.path))
}

/// The certificate object at `dn`, if the caller may know of it (any right on it).
pub async fn object(app: &App, c: &Caller, dn: &str) -> Result<CertRecord> {
    let Ok(p) = FolderPath::parse(&policy_dn(dn)) else { return Err(no_certificate(dn.trim())) };
    match app.store.certificate(p.key().to_owned()).await? {
        Some(r) if c.perms.effective(&r.path).implied() != Rights::NONE => Ok(r),
        _ => Err(no_certificate(p.as_str())),
    }
}

/// The certificate object of GUID `guid`, if the caller may know of it.
pub async fn object_by_guid(app: &App, c: &Caller, guid: &str) -> Result<CertRecord> {
    let missing = || CertError::NoCertificate(format!("Certificate {guid} does not exist."));
    let g = ObjectGuid::parse(guid).ok_or_else(missing)?;
    let f = app.store.folder_object_by_guid(g).await?.ok_or_else(missing)?;
    object(app, c, f.path.as_str()).await.map_err(|_| missing())
}

/// The object found by `CertificateDN` or `Thumbprint` (exactly one).
pub async fn object_by_dn_or_thumbprint(app: &App, c: &Caller, dn: Option<&str>, thumbprint: Option<&str>) -> Result<CertRecord> {
    if let Some(dn) = dn.filter(|d| !d.trim().is_empty()) {
        return object(app, c, dn).await;
    }
    let Some(t) = thumbprint.map(ccert::normalize_thumbprint).filter(|t| !t.is_empty()) else {
        return Err(CertError::Invalid("CertificateDN or Thumbprint is required.".into()));
    };
    let found: Vec<CertRecord> = app
        .store
        .certificates()
        .await?
        .into_iter()
        .filter(|r| r.thumbprint == t && c.perms.effective(&r.path).implied() != Rights::NONE)
        .collect();
    match found.len() {
        1 => Ok(found.into_iter().next().ok_or_else(|| CertError::Internal("unreachable".into()))?),
        0 => Err(CertError::NoCertificate(format!("Certificate with thumbprint {t} does not exist."))),
        _ => Err(CertError::Invalid(format!("More than one certificate has thumbprint {t}."))),
    }
}

/// The attributes of an object made with `Config/Create` (`None` for one made by a Request).
pub fn template_of(r: &CertRecord) -> Option<Template> {
    if r.template.is_empty() { None } else { serde_json::from_str(&r.template).ok() }
}

/// What `Config/Create` of a certificate object answers: the object made, or the product's
/// `Config` result and its text.
pub type Made = std::result::Result<CertRecord, ccert::AttributeError>;

/// `Config/Create` of class `X509 Certificate` (pyvenafi's `certificate.create`): a certificate
/// object at `path` holding no certificate, with the attributes it is given (see
/// [`Template::from_attributes`]); `Certificates/Renew` enrolls it from them, where the policy
/// judges them as it judges a request. Create on the parent, a policy folder (re-checked in the
/// one write, which makes the object's folder and row together), read with the rest in one
/// context read. Refusals are the product's `Config` results: 400 (no such parent, or one the
/// caller cannot see), 401 (something is at that DN), 7, 405, 407, 112 and 2 (attributes).
pub async fn create_object(app: &App, c: &Caller, path: &FolderPath, attributes: &[(String, Vec<String>)]) -> Result<Made, StoreError> {
    use strongroom_core::tree::result;
    let refuse = |code: i32, text: String| Ok(Err(ccert::AttributeError { code, text }));
    let parent_dn = strongroom_core::tree::parent_of(path.as_str()).unwrap_or_default();
    let Ok(parent) = FolderPath::parse(&parent_dn) else {
        return refuse(result::OBJECT_DOES_NOT_EXIST, format!("The parent {parent_dn} does not exist."));
    };
    if !(parent.key() == "\\ved\\policy" || parent.key().starts_with("\\ved\\policy\\")) {
        return refuse(result::OBJECT_INVALID_CONTAINMENT, "A certificate is created in a policy folder under \\VED\\Policy.".into());
    }
    let ctx = app.store.request_context(parent.clone(), path.clone()).await?;
    let held = c.perms.effective(&parent).implied();
    if !ctx.folder_exists || !held.contains(Rights::VIEW) {
        return refuse(result::OBJECT_DOES_NOT_EXIST, format!("The parent {parent_dn} does not exist."));
    }
    if ctx.folder_is_certificate || ctx.cas.iter().any(|ca| ca.dn.eq_ignore_ascii_case(parent.as_str())) {
        return refuse(
            result::OBJECT_INVALID_CONTAINMENT,
            format!("{parent_dn} is not a policy folder: a certificate cannot be made in it."),
        );
    }
    if ctx.existing.is_some() || ctx.folder_at_dn {
        return if c.perms.effective(path).implied().contains(Rights::VIEW) {
            refuse(result::OBJECT_ALREADY_EXISTS, "Object already exists.".into())
        } else {
            refuse(result::INSUFFICIENT_PRIVILEGES, "Insufficient privileges to create an object here.".into())
        };
    }
    if !held.contains(Rights::CREATE) {
        return refuse(result::INSUFFICIENT_PRIVILEGES, format!("Creating under {parent_dn} needs the Create permission."));
    }
    if let Err(e) = path.check_new() {
        return refuse(result::OBJECT_INVALID_NAME, format!("{e}."));
    }
    let tpl = match Template::from_attributes(attributes) {
        Ok(t) => t,
        Err(e) => return Ok(Err(e)),
    };
    let ca_key = match tpl.certificate_authority.as_deref() {
        Some(dn) => match find_ca(&ctx.cas, dn) {
            Some(ca) => ca.name.to_lowercase(),
            None => {
                return refuse(
                    ccert::RESULT_INVALID_ARGUMENT,
                    format!("Certificate Authority {dn:?} is not a certificate authority of this server (external CAs are not supported)."),
                );
            }
        },
        None => String::new(),
    };
    let sans = Sans { dns: tpl.dns.clone(), ip: tpl.ip.clone(), email: tpl.email.clone(), uri: tpl.uri.clone(), upn: tpl.upn.clone() };
    let internal = |e: serde_json::Error| StoreError::other(e.to_string());
    let (guid, lineage) = place(path, None, &*app.rng);
    let record = CertRecord {
        template: serde_json::to_string(&tpl).map_err(internal)?,
        ..unissued(
            path,
            guid,
            ca_key,
            tpl.common_name.clone().unwrap_or_default(),
            serde_json::to_string(&sans).map_err(internal)?,
            app.now(),
        )
    };
    let event = c
        .event(app, EventKind::FolderCreated, None)
        .object(path.as_str())
        .detail(format!("class={} (a certificate object without a certificate)", ccert::CREATED_CLASS));
    let object = NewObject { record: record.clone(), lineage, by: Some(c.writer()), parent };
    match app.store.create_certificate_object(object, event).await? {
        Checked::Done(true) => Ok(Ok(record)),
        Checked::Done(false) => refuse(result::OBJECT_ALREADY_EXISTS, "Object already exists.".into()),
        Checked::Denied => refuse(result::INSUFFICIENT_PRIVILEGES, format!("Creating under {parent_dn} needs the Create permission.")),
    }
}

pub(super) fn ccert_name(p: &FolderPath) -> String {
    strongroom_core::tree::name_of(p.as_str()).to_owned()
}

/// `Certificates/Revoke`: Revoke on the object; the serial goes on its CA's CRL in the same
/// write (with `Disable`, the object is disabled too).
pub async fn revoke(app: &App, c: &Caller, r: &CertRecord, reason: i64, disable: bool, comments: Option<&str>) -> Result<bool> {
    if !c.perms.effective(&r.path).implied().contains(Rights::REVOKE) {
        return Err(CertError::Denied(format!("Revoking {} needs Revoke on it.", r.path)));
    }
    if !r.issued() {
        return Err(not_enrolled(r));
    }
    let rev = Revocation {
        ca_key: r.ca_key.clone(),
        serial: r.serial.clone(),
        revoked_at: app.now().secs(),
        reason: ccert::revocation_reason(reason).map_err(CertError::Invalid)?,
        not_after: r.valid_to,
    };
    let comment = comments.map(|x| x.chars().take(200).collect::<String>()).unwrap_or_default();
    let event = c
        .event(app, EventKind::CertificateRevoked, Some(r.cert_vault_id))
        .detail(format!("certificate={} serial={} reason={} disable={disable} comments={comment:?}", r.path, r.serial, rev.reason));
    match app.store.revoke_certificate(r.path.key().to_owned(), rev, disable, Some(c.writer()), event).await? {
        Checked::Done(new) => Ok(new),
        Checked::Denied => Err(CertError::Denied(format!("Revoking {} needs Revoke on it.", r.path))),
    }
}

/// Disables (retires) or enables an object: Write on it.
pub async fn set_disabled(app: &App, c: &Caller, r: &CertRecord, disabled: bool) -> Result<()> {
    if !c.perms.effective(&r.path).implied().contains(Rights::WRITE) {
        return Err(CertError::Denied(format!("Changing {} needs Write on it.", r.path)));
    }
    let event = c.event(app, EventKind::CertificateDisabled, r.cert_id()).detail(format!("certificate={} disabled={disabled}", r.path));
    match app.store.set_certificate_disabled(r.path.key().to_owned(), disabled, Some(c.writer()), event).await? {
        Checked::Done(true) => Ok(()),
        Checked::Done(false) => Err(no_certificate(r.path.as_str())),
        Checked::Denied => Err(CertError::Denied(format!("Changing {} needs Write on it.", r.path))),
    }
}

/// `DELETE Certificates/{guid}`: Delete on the object; its entries go with it.
pub async fn delete(app: &App, c: &Caller, r: &CertRecord) -> Result<()> {
    if !c.perms.effective(&r.path).implied().contains(Rights::DELETE) {
        return Err(CertError::Denied(format!("Deleting {} needs Delete on it.", r.path)));
    }
    let event = c.event(app, EventKind::CertificateDeleted, r.cert_id()).detail(format!("certificate={} serial={}", r.path, r.serial));
    match app.store.delete_certificate(r.path.key().to_owned(), Some(c.writer()), event).await? {
        Checked::Done(true) => Ok(()),
        Checked::Done(false) => Err(no_certificate(r.path.as_str())),
        Checked::Denied => Err(CertError::Denied(format!("Deleting {} needs Delete on it.", r.path))),
    }
}

/// An archived version of an object: its vault id and facts.
#[derive(Clone, Debug)]
pub struct PreviousVersion {
    pub vault_id: VaultId,
    pub facts: pki::CertFacts,
    pub revoked: bool,
}

/// `Certificates/{guid}/PreviousVersions`: the archived certificates, newest first.
pub async fn previous_versions(app: &App, r: &CertRecord) -> Result<Vec<PreviousVersion>> {
    let cas = app.store.cert_authorities().await?;
    let revoked: Vec<String> = match find_ca(&cas, &r.ca_key) {
        Some(ca) => app.store.revocations(ca.name.to_lowercase(), i64::MIN).await?.into_iter().map(|x| x.serial).collect(),
        None => Vec::new(),
    };
    let mut out = Vec::new();
    for e in app.store.cert_entries(r.path.clone()).await?.iter().rev() {
        if e.vault_type != vault_type::ARCHIVED_CERTIFICATE {
            continue;
        }
        let facts = pki::cert_facts(&open_entry(app, e).await?)?;
        let is_revoked = revoked.contains(&facts.serial);
        out.push(PreviousVersion { vault_id: e.vault_id, facts, revoked: is_revoked });
    }
    Ok(out)
}

/// The facts of an object's current certificate.
pub async fn current_facts(app: &App, r: &CertRecord) -> Result<pki::CertFacts> {
    if !r.issued() {
        return Err(not_enrolled(r));
    }
    let entries = app.store.cert_entries(r.path.clone()).await?;
    let e = entries.iter().find(|e| e.vault_id == r.cert_vault_id).ok_or_else(|| no_certificate(r.path.as_str()))?;
    Ok(pki::cert_facts(&open_entry(app, e).await?)?)
}

/// The filters of `GET Certificates/` (names in any case).
#[derive(Clone, Debug, Default)]
pub struct Search {
    pub cn: Option<String>,
    pub san_dns: Vec<String>,
    pub thumbprint: Option<String>,
    pub serial: Option<String>,
    pub parent_dn: Option<String>,
    pub parent_dn_recursive: Option<String>,
    pub valid_to_greater: Option<i64>,
    pub valid_to_less: Option<i64>,
    pub disabled: Option<bool>,
    pub limit: usize,
    pub offset: usize,
}

/// `GET Certificates/`: the objects the caller may see (any right on them) matching every
/// filter given, by DN; and how many matched in all.
pub async fn search(app: &App, c: &Caller, s: &Search) -> Result<(Vec<CertRecord>, usize)> {
    let parent = s.parent_dn.as_deref().map(|p| FolderPath::parse(&policy_dn(p)).map(|f| f.key().to_owned()));
    let below = s.parent_dn_recursive.as_deref().map(|p| FolderPath::parse(&policy_dn(p)).map(|f| f.key().to_owned()));
    let (Ok(parent), Ok(below)) = (parent.transpose(), below.transpose()) else {
        return Err(CertError::Invalid("ParentDn must be a DN under \\VED\\Policy.".into()));
    };
    let thumb = s.thumbprint.as_deref().map(ccert::normalize_thumbprint);
    let serial = s.serial.as_deref().map(ccert::normalize_thumbprint);
    let mut all: Vec<CertRecord> = app
        .store
        .certificates()
        .await?
        .into_iter()
        .filter(|r| c.perms.effective(&r.path).implied() != Rights::NONE)
        .filter(|r| s.cn.as_ref().is_none_or(|cn| r.cn.eq_ignore_ascii_case(cn)))
        .filter(|r| thumb.as_ref().is_none_or(|t| &r.thumbprint == t))
        .filter(|r| serial.as_ref().is_none_or(|t| r.serial.trim_start_matches('0') == t.trim_start_matches('0')))
        .filter(|r| {
            let parent_key = strongroom_core::tree::parent_of(r.path.key()).unwrap_or_default();
            parent.as_ref().is_none_or(|p| &parent_key == p) && below.as_ref().is_none_or(|b| r.path.key().starts_with(&format!("{b}\\")))
        })
        .filter(|r| s.valid_to_greater.is_none_or(|t| r.valid_to > t))
        .filter(|r| s.valid_to_less.is_none_or(|t| r.valid_to < t))
        .filter(|r| s.disabled.is_none_or(|d| r.disabled == d))
        .filter(|r| {
            if s.san_dns.is_empty() {
                return true;
            }
            let sans: Sans = serde_json::from_str(&r.sans).unwrap_or_default();
            s.san_dns.iter().all(|want| sans.dns.iter().any(|d| d.eq_ignore_ascii_case(want)))
        })
        .collect();
    all.sort_by(|a, b| a.path.key().cmp(b.path.key()));
    let total = all.len();
    let page = all.into_iter().skip(s.offset).take(if s.limit == 0 { usize::MAX } else { s.limit }).collect();
    Ok((page, total))
}

/// The JSON of an object's SANs for search (`SANS`).
pub fn sans_json(r: &CertRecord) -> serde_json::Value {
    let s: Sans = serde_json::from_str(&r.sans).unwrap_or_default();
    let mut m = serde_json::Map::new();
    for (k, v) in [("DNS", s.dns), ("IP", s.ip), ("Email", s.email), ("URI", s.uri), ("UPN", s.upn)] {
        if !v.is_empty() {
            m.insert(k.into(), json!(v));
        }
    }
    serde_json::Value::Object(m)
}
