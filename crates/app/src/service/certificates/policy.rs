//! Folder policies as requests read them: each folder's own, the one in force at a folder, and
//! which DNs are policy folders (`Certificates/CheckPolicy`).

use super::*;

/// Every folder's own policy, by folder key.
pub async fn policies(store: &dyn Store) -> Result<HashMap<String, Policy>> {
    let mut out = HashMap::new();
    for (key, text) in store.cert_policies().await? {
        let p: Policy = serde_json::from_str(&text).map_err(|e| CertError::Internal(format!("a stored policy: {e}")))?;
        out.insert(key, p);
    }
    Ok(out)
}

/// The policy in force at `folder`: its own and its ancestors' (a locked value higher up wins).
pub fn effective_policy(all: &HashMap<String, Policy>, folder: &FolderPath) -> Policy {
    let chain: Vec<&Policy> = folder.lineage().iter().filter_map(|f| all.get(f.key())).collect();
    Policy::effective(chain)
}

/// A zone or policy DN as vcert sends it: one without `\VED\` gets `\VED\Policy\` before it.
pub fn policy_dn(s: &str) -> String {
    let t = s.trim().trim_end_matches('\\');
    if t.len() >= 4 && t[..4].eq_ignore_ascii_case("\\ved") {
        t.to_owned()
    } else {
        format!("\\VED\\Policy\\{}", t.trim_start_matches('\\'))
    }
}

fn no_policy(dn: &str) -> CertError {
    CertError::NoPolicy(format!("PolicyDN: {dn} does not exist"))
}

/// The folder a policy DN names, if it can be one: `\VED\Policy` or a folder below it.
pub(super) fn policy_path(dn: &str) -> Result<FolderPath> {
    let shown = policy_dn(dn);
    match FolderPath::parse(&shown) {
        Ok(p) if p.key() == "\\ved\\policy" || p.key().starts_with("\\ved\\policy\\") => Ok(p),
        _ => Err(no_policy(&shown)),
    }
}

/// Whether `p` is a policy folder: it exists, and is neither a certificate object nor a CA's folder.
pub(super) fn check_policy_folder(p: &FolderPath, exists: bool, is_certificate: bool, cas: &[CaRecord]) -> Result<()> {
    if !exists {
        return Err(no_policy(p.as_str()));
    }
    if is_certificate {
        return Err(CertError::Invalid(format!("PolicyDN: {p} is a certificate, not a policy folder.")));
    }
    if cas.iter().any(|c| c.dn.eq_ignore_ascii_case(p.as_str())) {
        return Err(CertError::Invalid(format!("PolicyDN: {p} is a certificate authority, not a policy folder.")));
    }
    Ok(())
}

/// A policy folder that exists: not a certificate object, not a CA's folder.
pub(crate) async fn policy_folder(app: &App, dn: &str) -> Result<FolderPath> {
    let p = policy_path(dn)?;
    let exists = p.key() == "\\ved\\policy" || app.store.folder_object(p.key().to_owned()).await?.is_some();
    let is_certificate = exists && app.store.certificate(p.key().to_owned()).await?.is_some();
    check_policy_folder(&p, exists, is_certificate, &app.store.cert_authorities().await?)?;
    Ok(p)
}

/// What `Certificates/CheckPolicy` answers for a folder: its effective policy and its CA's DN.
#[derive(Clone, Debug)]
pub struct PolicyView {
    pub policy: Policy,
    /// The DN of the policy's CA, as clients see CAs.
    pub ca_dn: Option<String>,
}

/// `Certificates/CheckPolicy`: Read on the folder (or anything below it: a caller who may
/// request there may read its rules).
pub async fn check_policy(app: &App, c: &Caller, dn: &str) -> Result<PolicyView> {
    let folder = policy_folder(app, dn).await?;
    if c.perms.effective(&folder).implied() == Rights::NONE && !holds_below(c, &folder) {
        return Err(no_policy(folder.as_str()));
    }
    let policy = effective_policy(&policies(&*app.store).await?, &folder);
    let cas = app.store.cert_authorities().await?;
    let ca_dn = policy.ca.as_ref().map(|s| find_ca(&cas, &s.value).map_or_else(|| s.value.clone(), |c| c.dn.clone()));
    Ok(PolicyView { policy, ca_dn })
}

fn holds_below(c: &Caller, folder: &FolderPath) -> bool {
    let below = format!("{}\\", folder.key());
    c.perms.master_admin || c.perms.grants.iter().any(|(k, r)| k.starts_with(&below) && *r != Rights::NONE)
}
