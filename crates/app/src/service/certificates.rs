//! Certificates through the product's own API (issue 33): a built-in CA
//! behind `/vedsdk/Certificates/*`.
//!
//! A certificate object is a folder of the `\VED` tree at
//! `PolicyDN\ObjectName` (its GUID is the folder's, so `Config/DnToGuid`
//! and rights work as for any folder) with one row of facts in the store;
//! its certificate (VaultType 2, DER), its centrally made key (256, PKCS#8)
//! and its CSR (512, DER) are vault entries owned by that folder, sealed
//! like every entry. Issuance is synchronous: the key is made and the
//! certificate signed before the Request's one write, which archives the
//! DN's previous entries, writes the new ones and replaces the row (see
//! `strongroom_store::CertStore`). Every request, issuance, key export,
//! revocation, disabling and deletion is a chained event.
//!
//! Rights (the product's, on the tree, inherited downwards): Create on the
//! policy folder to request; Read on the object to retrieve, search and
//! read it, Private Key Read too for its key; Write to renew, reset and
//! disable; Revoke to revoke; Delete to delete. A missing right is
//! [`CertError::Denied`] (403), never a 401.

use std::collections::HashMap;

use serde_json::json;
use zeroize::Zeroizing;

use strongroom_core::cert::enroll::{self, Ask, CaView, Refused};
use strongroom_core::cert::{self as ccert, KeySpec, Policy, Template, fields, vault_type};
use strongroom_core::event::{Event, EventKind};
use strongroom_core::random::Random;
use strongroom_core::time::Clock;
use strongroom_core::tree::{ObjectGuid, lineage_with_guids};
use strongroom_core::vault::crypto;
use strongroom_core::vault::{FolderPath, Rights, VaultId};
use strongroom_keyring::{KeyRing, SigningAlgorithm, TokenCaSigner};
use strongroom_store::{
    CaRecord, CertField, CertRecord, Checked, FieldValues, Issuance, NewObject, ObjectContext, Parking, PendingChange, PendingRecord,
    RequestContext, Revocation, Store, StoreError, VaultEntry, Writer,
};

use super::caller::Caller;
use crate::App;
use crate::pki::{self, CaAlgorithm, CaSigner, Csr, Issuer, PkiError, PrivateKey, Sans, SoftwareSigner};

/// Why a certificate call did not succeed. The texts are the client's to read.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    /// Bad input or a policy violation: 400 `{"Error": …}`; nothing was issued.
    #[error("{0}")]
    Invalid(String),
    /// No such certificate (or one the caller may not see): 400, the product's
    /// `Certificate does not exist.` in the status line.
    #[error("{0}")]
    NoCertificate(String),
    /// No such policy folder: 400 `PolicyDN: … does not exist` (§0.10).
    #[error("{0}")]
    NoPolicy(String),
    /// A private key was asked for and none is stored: 400.
    #[error("{0}")]
    NoKey(String),
    /// A right is missing: 403.
    #[error("{0}")]
    Denied(String),
    /// What Strongroom does not do (external CAs, devices, SSH, Import): 400.
    #[error("{0}")]
    Unsupported(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Too many keys asked of the server at once (by this caller, or by all): 429 with
    /// `Retry-After`; nothing was requested.
    #[error("{message}")]
    Busy { message: String, retry_after_secs: u64 },
    /// The server's own failure (a key that does not open, a signature): 500, logged, generic text.
    #[error("{0}")]
    Internal(String),
    /// The certificate is not issued yet: its request waits for approval (Retrieve: 202
    /// `{"Stage", "Status"}`, §3.6).
    #[error("Certificate {dn} being processed, Status: {status}, Stage: {stage}.")]
    Pending { dn: String, stage: i64, status: String },
    /// Its request was rejected (Retrieve: 500 `{"Stage", "Status"}`, §3.6) until a Reset or Retry.
    #[error("Certificate {dn} has encountered an error while processing, Status: {status}, Stage: {stage}.")]
    Failed { dn: String, stage: i64, status: String },
}

impl From<PkiError> for CertError {
    fn from(e: PkiError) -> Self {
        match e {
            PkiError::Invalid(m) => CertError::Invalid(m),
            PkiError::Internal(m) => CertError::Internal(m),
        }
    }
}

impl From<crate::keygen::KeyGenError> for CertError {
    fn from(e: crate::keygen::KeyGenError) -> Self {
        match e {
            crate::keygen::KeyGenError::Busy { message, retry_after_secs } => CertError::Busy { message, retry_after_secs },
            crate::keygen::KeyGenError::Pki(e) => e.into(),
        }
    }
}

type Result<T, E = CertError> = std::result::Result<T, E>;

pub use strongroom_core::cert::enroll::{DEFAULT_VALIDITY_DAYS, parse_end_date};

// ------------------------------------------------------------------ CAs

/// The associated data of a CA's sealed key: its name and data key.
fn ca_key_aad(name_key: &str, key_id: i64) -> Vec<u8> {
    let mut a = b"strongroom/ca-key/v1".to_vec();
    a.extend_from_slice(&(name_key.len() as u32).to_be_bytes());
    a.extend_from_slice(name_key.as_bytes());
    a.extend_from_slice(&key_id.to_be_bytes());
    a
}

/// Seals a CA key under the key ring's current data key: (key name, key id, sealed).
pub async fn seal_ca_key(
    store: &dyn Store,
    keyring: &KeyRing,
    rng: &dyn strongroom_core::random::Random,
    now: strongroom_core::time::UnixTime,
    name: &str,
    key: &PrivateKey,
) -> Result<(String, i64, Vec<u8>)> {
    let default = keyring.default_name().to_owned();
    let (key_name, key_id, k) =
        keyring.current(store, rng, now, &default, &[]).await.map_err(|e| CertError::Internal(format!("the key ring: {e}")))?;
    let sealed = crypto::seal(&k, rng, &ca_key_aad(&name.to_lowercase(), key_id), &key.0)
        .map_err(|_| CertError::Internal("sealing a CA key failed".into()))?;
    Ok((key_name, key_id, sealed))
}

/// `key_id` of a CA whose key is a signing key in the token of the PKCS#11
/// key `key_name` (`admin ca create --key`); its `key_sealed` then holds
/// the token object's label, not a key. Data key ids start at 1.
pub const TOKEN_KEY_ID: i64 = 0;

/// The label of CA `name`'s signing key in its token.
pub fn token_label(name: &str) -> String {
    format!("strongroom CA {name}")
}

/// A CA's signer: its key in its token, or opened from the key ring.
pub async fn ca_signer(store: &dyn Store, keyring: &KeyRing, ca: &CaRecord) -> Result<Box<dyn CaSigner>> {
    if ca.key_id == TOKEN_KEY_ID {
        let label =
            String::from_utf8(ca.key_sealed.clone()).map_err(|_| CertError::Internal(format!("CA {}: its key's label", ca.name)))?;
        let algorithm = CaAlgorithm::parse(&ca.algorithm)
            .map(SigningAlgorithm::from)
            .ok_or_else(|| CertError::Internal(format!("CA {}: a token key of algorithm {}", ca.name, ca.algorithm)))?;
        let signer = keyring.signer(&ca.key_name, &label).map_err(|e| CertError::Internal(format!("CA {}: {e}", ca.name)))?;
        return Ok(Box::new(TokenCaSigner { signer, algorithm }));
    }
    let k = keyring.key(store, ca.key_id).await.map_err(|e| CertError::Internal(format!("the CA key's data key: {e}")))?;
    let plain = crypto::open(&k, &ca_key_aad(&ca.name.to_lowercase(), ca.key_id), &ca.key_sealed)
        .map_err(|_| CertError::Internal(format!("the key of CA {} does not open", ca.name)))?;
    Ok(Box::new(SoftwareSigner(PrivateKey(Zeroizing::new(plain)))))
}

/// A CA's own certificate (DER); `None` for an intermediate whose certificate is not installed yet.
pub fn ca_certificate(ca: &CaRecord) -> Option<&[u8]> {
    pki::split_certs(&ca.cert_der).into_iter().next()
}

/// A CA named by its DN (`\VED\Policy\CA Templates\NAME`) or its name, in any case.
pub fn find_ca<'a>(cas: &'a [CaRecord], name_or_dn: &str) -> Option<&'a CaRecord> {
    let t = name_or_dn.trim();
    cas.iter().find(|c| c.dn.eq_ignore_ascii_case(t) || c.name.eq_ignore_ascii_case(t))
}

/// Where a CA's CRL is served (without authentication): `{public_url}/crl/{name}.crl`.
pub fn crl_url(public_url: &str, ca_name: &str) -> String {
    format!("{}/crl/{}.crl", public_url.trim_end_matches('/'), ca_name.to_lowercase().replace(' ', "%20"))
}

/// How long the revocation of a certificate is kept after the certificate
/// expired (days): it left the CRL [`pki::CRL_VALIDITY_SECS`] after the
/// expiry; the row serves `PreviousVersions`' `Revoked` until the janitor
/// deletes it (`purge_revocations`, every ten minutes). The revocation's
/// event stays in the log.
pub const REVOCATION_KEEP_DAYS: i64 = 30;

/// The cut of the janitor's purge at `now`: revocations of certificates that
/// ended before it are deleted.
pub fn revocation_purge_cut(now: i64) -> i64 {
    now - REVOCATION_KEEP_DAYS * 86_400
}

/// A kept CRL is signed again once it is this old (seconds), though nothing it lists
/// changed: its `thisUpdate` stays within the hour, its `nextUpdate` a day after that.
pub const CRL_RESIGN_SECS: i64 = 3_600;

/// The CRLs signed so far, one per CA. `/crl/{name}` answers anyone: signing on
/// every request (with an HSM's key, or RSA-4096) would let any client spend the
/// CA's key and the server's CPU at will. A kept CRL is answered while the
/// revocations it lists are still exactly those a new one would list (a
/// revocation, or one leaving the list after its certificate's end, makes a new
/// one), the CA's certificate is the same, and it is younger than
/// [`CRL_RESIGN_SECS`]. Requests for one CA's CRL take turns: one signs, those
/// waiting behind it find what it signed (a CA whose token hangs holds up only
/// its own CRL's requests).
#[derive(Default)]
pub struct CrlCache(std::sync::Mutex<HashMap<String, std::sync::Arc<tokio::sync::Mutex<Option<SignedCrl>>>>>);

struct SignedCrl {
    ca_cert: Vec<u8>,
    list: Vec<pki::Revoked>,
    signed_at: i64,
    der: Vec<u8>,
}

impl std::fmt::Debug for CrlCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CrlCache")
    }
}

/// The CRL of CA `name` (DER), from its revocations whose certificates have not
/// expired, or expired less than a CRL's validity ago (so each appears on one CRL issued
/// after its certificate's end, RFC 5280 §3.3): the one kept ([`CrlCache`]) if it
/// lists exactly those, else signed now. `None`: no such CA (or an intermediate whose
/// certificate is not installed yet).
pub async fn crl(app: &App, name: &str) -> Result<Option<Vec<u8>>> {
    let name = name.strip_suffix(".crl").unwrap_or(name);
    let cas = app.store.cert_authorities().await?;
    let Some(ca) = cas.iter().find(|c| c.name.eq_ignore_ascii_case(name)) else { return Ok(None) };
    let Some(cert) = ca_certificate(ca) else { return Ok(None) };
    let key = ca.name.to_lowercase();
    let slot = app.signed_crls.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).entry(key.clone()).or_default().clone();
    // The revocations are read while holding the CA's turn: a request that starts after a
    // revocation committed reads it, and a CRL listing it replaces the kept one.
    let mut kept = slot.lock().await;
    let now = app.now().secs();
    let revoked = app.store.revocations(key, now - pki::CRL_VALIDITY_SECS).await?;
    let list: Vec<pki::Revoked> =
        revoked.into_iter().map(|r| pki::Revoked { serial_hex: r.serial, at: r.revoked_at, reason: r.reason }).collect();
    if let Some(s) = kept.as_ref()
        && s.ca_cert == cert
        && s.list == list
        && (s.signed_at..s.signed_at + CRL_RESIGN_SECS).contains(&now)
    {
        return Ok(Some(s.der.clone()));
    }
    let signer = ca_signer(&*app.store, &app.keyring, ca).await?;
    // A token's key signs with blocking calls: off the async threads.
    let (issuer_cert, listed) = (cert.to_vec(), list.clone());
    let der = tokio::task::spawn_blocking(move || pki::crl(&Issuer { cert_der: &issuer_cert, signer: &*signer }, &listed, now))
        .await
        .map_err(|e| CertError::Internal(format!("signing the CRL: {e}")))??;
    *kept = Some(SignedCrl { ca_cert: cert.to_vec(), list, signed_at: now, der: der.clone() });
    Ok(Some(der))
}

// ------------------------------------------------------------------ policies

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
fn policy_path(dn: &str) -> Result<FolderPath> {
    let shown = policy_dn(dn);
    match FolderPath::parse(&shown) {
        Ok(p) if p.key() == "\\ved\\policy" || p.key().starts_with("\\ved\\policy\\") => Ok(p),
        _ => Err(no_policy(&shown)),
    }
}

/// Whether `p` is a policy folder: it exists, and is neither a certificate object nor a CA's folder.
fn check_policy_folder(p: &FolderPath, exists: bool, is_certificate: bool, cas: &[CaRecord]) -> Result<()> {
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

// ------------------------------------------------------------------ requests

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
    let field = |k: &str, v: &Option<String>| csr.map_or_else(|| v.clone(), |x| x.get(k).map(str::to_owned));
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
struct Target {
    folder: FolderPath,
    path: FolderPath,
    ctx: RequestContext,
}

impl Target {
    /// The context of a request at `path` under the policy folder `folder`.
    async fn read(store: &dyn Store, folder: FolderPath, path: FolderPath) -> Result<Target> {
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
fn place(path: &FolderPath, existing: Option<&ObjectGuid>, rng: &dyn Random) -> (ObjectGuid, Vec<(FolderPath, ObjectGuid)>) {
    let guid = existing.cloned().unwrap_or_else(|| ObjectGuid::generate(rng));
    let mut lineage = lineage_with_guids(path, rng);
    if let Some(last) = lineage.last_mut() {
        last.1 = guid.clone();
    }
    (guid, lineage)
}

/// The row of a certificate object that holds no certificate yet (made by `Config/Create`, or
/// waiting for approval): `sans` as stored (JSON), no template.
fn unissued(
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

/// A new request's target: object `name` under the policy folder `folder`, which must be one.
async fn target(app: &App, folder: FolderPath, name: &str) -> Result<Target> {
    let bad_name = || CertError::Invalid(format!("ObjectName {name:?} cannot be a certificate's name."));
    let path = FolderPath::parse(&format!("{}\\{name}", folder.as_str())).map_err(|_| bad_name())?;
    if path.check_new().is_err() {
        return Err(bad_name());
    }
    let t = Target::read(&*app.store, folder, path).await?;
    check_policy_folder(&t.folder, t.ctx.folder_exists, t.ctx.folder_is_certificate, &t.ctx.cas)?;
    if t.ctx.folder_at_dn {
        return Err(CertError::Invalid(format!("{} is a folder, not a certificate.", t.path.as_str())));
    }
    Ok(t)
}

/// The data key entries are sealed under: (key name, key id, key).
type DataKey = (String, i64, crypto::Key);

fn sealed_entry(app: Desk<'_>, dk: &DataKey, id: VaultId, vault_type: i32, owner: &FolderPath, plain: &[u8]) -> Result<VaultEntry> {
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

/// What an issuance needs of the application: the store, the clock, randomness, the key ring and
/// the public URL (CRL distribution points). The API's `App` and the administrative `Admin`
/// (with the configured URL) both give one.
#[derive(Clone, Copy)]
pub struct Desk<'a> {
    pub store: &'a dyn Store,
    pub clock: &'a dyn Clock,
    pub rng: &'a std::sync::Arc<dyn Random>,
    pub keyring: &'a KeyRing,
    pub public_url: &'a str,
    /// Where central keys are made within bounds (the API's callers); `None`: without (an
    /// operator's own act: the CLI on the store, the console's approvals).
    pub keygen: Option<&'a crate::keygen::KeyGenerator>,
}

impl std::fmt::Debug for Desk<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Desk").field("public_url", &self.public_url).finish_non_exhaustive()
    }
}

impl Desk<'_> {
    fn now(&self) -> strongroom_core::time::UnixTime {
        self.clock.now()
    }
}

impl App {
    /// What an issuance needs of it.
    pub fn desk(&self) -> Desk<'_> {
        Desk {
            store: &*self.store,
            clock: &*self.clock,
            rng: &self.rng,
            keyring: &self.keyring,
            public_url: &self.public_url,
            keygen: Some(&self.keygen),
        }
    }
}

/// Who acts in an issuance: an API caller, or an approver (the console's, the CLI's).
pub struct Actor<'a> {
    /// Their rights re-checked in the write (`None`: the CLI on the store, or a Master Admin's
    /// console act, checked before).
    pub writer: Option<Writer>,
    /// The newest data key of each named key, as they were read.
    pub current_keys: Vec<(String, i64)>,
    /// How the log names them.
    pub name: String,
    /// An event of theirs of a kind.
    pub event: &'a (dyn Fn(EventKind) -> Event + Send + Sync),
}

impl std::fmt::Debug for Actor<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Actor").field("name", &self.name).finish_non_exhaustive()
    }
}

impl Actor<'_> {
    fn event(&self, kind: EventKind, id: Option<VaultId>) -> Event {
        let mut e = (self.event)(kind);
        if let Some(id) = id {
            e.object = id.to_string();
        }
        e
    }
}

/// The `Stage` a request waiting for approval is parked at (the product's PostCSR, §3.4; vcert
/// and cert-manager read 500 as in progress).
pub const PENDING_STAGE: i64 = 500;
/// The `Status` of a request waiting for approval: pyvenafi's `wait_for_stage` looks for
/// `pending workflow resolution` in it.
pub const PENDING_STATUS: &str = "Pending workflow resolution: manual approval";

/// Whether an issuance is a request (which may wait for approval) or an approval of one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
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
    enroll_as(app.desk(), &actor, input, csr, t, need, renewal, Mode::Request).await
}

/// [`enroll`] for any actor: the context `t` read, the decision asked of
/// [`strongroom_core::cert::enroll::decide`], then the key made (a central request), the
/// certificate signed and the one write. With [`Mode::Approve`], the approval of the waiting
/// request (`need` re-checked on the object, the waiting request taken in the write), never
/// parked again.
#[allow(clippy::too_many_arguments)]
async fn enroll_as(
    app: Desk<'_>,
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
    let ca_cert = ca_certificate(ca).map(<[u8]>::to_vec).ok_or_else(|| CertError::Internal(format!("CA {}: no certificate", ca.name)))?;
    let not_after = decision.not_after;
    let generated = match &csr {
        Some(_) => None,
        // Off the async threads, within the generator's bounds: an RSA key takes a core for
        // 0.1 s to seconds.
        None => Some(match app.keygen {
            Some(k) => k.generate(&c.name, spec, app.rng.clone()).await?,
            None => crate::keygen::unbounded(spec, app.rng.clone()).await?,
        }),
    };
    let leaf_key = match (&csr, &generated) {
        (Some(x), _) => x.key.clone(),
        (None, Some(k)) => pki::public_of(k)?,
        (None, None) => return Err(CertError::Internal("no key".into())),
    };
    let signer = ca_signer(app.store, app.keyring, ca).await?;
    let url = crl_url(app.public_url, &ca.name);
    // Signed on the blocking pool: a token's key signs with blocking calls (its session is
    // one at a time per key, so concurrent requests queue there, not on the async threads).
    let issued = {
        let (subject, sans, leaf_key, rng) = (decision.subject.clone(), sans.clone(), leaf_key.clone(), app.rng.clone());
        tokio::task::spawn_blocking(move || {
            pki::issue(
                &Issuer { cert_der: &ca_cert, signer: &*signer },
                &pki::Leaf { subject: &subject, sans: &sans, key: &leaf_key, not_before: now - 60, not_after, crl_url: &url },
                &*rng,
            )
        })
        .await
        .map_err(|e| CertError::Internal(format!("signing the certificate: {e}")))??
    };
    // The entries, sealed under the current data key, with the ids one call gives.
    let default = app.keyring.default_name().to_owned();
    let dk: DataKey = app
        .keyring
        .current(app.store, &**app.rng, app.now(), &default, &c.current_keys)
        .await
        .map_err(|e| CertError::Internal(format!("the key ring: {e}")))?;
    let mut ids = app.store.allocate_vault_ids(1 + usize::from(generated.is_some()) + usize::from(csr.is_some())).await?.into_iter();
    let mut next_id = || ids.next().ok_or_else(|| CertError::Internal("too few vault ids".into()));
    let cert_id = next_id()?;
    let mut entries = vec![sealed_entry(app, &dk, cert_id, vault_type::CERTIFICATE, &t.path, &issued.der)?];
    let key_vault_id = match &generated {
        Some(k) => {
            let id = next_id()?;
            entries.push(sealed_entry(app, &dk, id, vault_type::PKCS8, &t.path, &k.0)?);
            Some(id)
        }
        None => None,
    };
    let csr_vault_id = match &csr {
        Some(x) => {
            let id = next_id()?;
            entries.push(sealed_entry(app, &dk, id, vault_type::PKCS10, &t.path, &x.der)?);
            Some(id)
        }
        None => None,
    };
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

/// A request judged by the policy whose CA (or folder) wants `Manual Approval`: kept, with the
/// object (made if need be, holding no certificate), waiting at [`PENDING_STAGE`]; nothing is
/// issued. One write, `need` re-checked as for an issuance.
#[allow(clippy::too_many_arguments)]
async fn park(
    app: Desk<'_>,
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
pub async fn approve(app: Desk<'_>, actor: &Actor<'_>, p: &PendingRecord, version: Option<i64>) -> Result<Requested> {
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
    app: Desk<'_>,
    actor: &Actor<'_>,
    p: &PendingRecord,
    version: Option<i64>,
    change: PendingChange,
    need: Rights,
) -> Result<()> {
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
    approve(app.desk(), &caller_actor(c, &make), p, None).await
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
    settle(app.desk(), &caller_actor(c, &make), p, None, PendingChange::Reject(rejected_status(reason)), APPROVE_RIGHT).await
}

/// An API caller as an [`Actor`] (their rights re-checked in the write).
pub fn caller_actor<'a>(c: &Caller, event: &'a (dyn Fn(EventKind) -> Event + Send + Sync)) -> Actor<'a> {
    Actor { writer: Some(c.writer()), current_keys: c.current_keys.clone(), name: c.user_id.identity(), event }
}

/// `Certificates/Request`: Create on the policy folder. A DN that holds a certificate is
/// re-enrolled (its certificate, key and CSR archived).
pub async fn request(app: &App, c: &Caller, input: RequestInput) -> Result<Requested> {
    let folder = policy_path(&input.policy_dn)?;
    if !c.perms.effective(&folder).implied().contains(Rights::CREATE) {
        return Err(CertError::Denied(format!("Requesting a certificate needs Create on {}.", folder.as_str())));
    }
    let csr = parsed_csr(&input)?;
    // The CN (the CSR's, else `Subject` without the spaces around it), refused here if it is no
    // name: the object may be named after it.
    let csr_cn = csr.as_ref().and_then(|x| x.get("CN")).map(str::to_owned);
    let cn = csr_cn.or_else(|| input.subject.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned));
    if let Some(cn) = &cn {
        ccert::names::attribute("CN", cn).map_err(CertError::Invalid)?;
    }
    let name = object_name(&input, cn.as_deref(), &sans_of(&input)?)?;
    let t = target(app, folder, &name).await?;
    enroll(app, c, &input, csr, t, Rights::CREATE, false).await
}

/// The request's CSR, parsed, if it brings one.
fn parsed_csr(input: &RequestInput) -> Result<Option<Csr>> {
    Ok(input.pkcs10.as_ref().filter(|p| !p.trim().is_empty()).map(|text| pki::parse_csr(text)).transpose()?)
}

/// The policy folder an object sits in.
fn parent_folder(path: &FolderPath) -> Result<FolderPath> {
    let dn = strongroom_core::tree::parent_of(path.as_str()).unwrap_or_else(|| "\\VED\\Policy".into());
    FolderPath::parse(&dn).map_err(|_| no_certificate(path.as_str()))
}

// ------------------------------------------------------------------ objects

fn no_certificate(dn: &str) -> CertError {
    CertError::NoCertificate(format!("Certificate {dn} does not exist."))
}

/// An object made with `Config/Create` that holds no certificate yet.
fn not_enrolled(r: &CertRecord) -> CertError {
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

async fn open_entry(app: &App, e: &VaultEntry) -> Result<Zeroizing<Vec<u8>>> {
    let k = app.keyring.key(&*app.store, e.key_id).await.map_err(|err| CertError::Internal(format!("a data key: {err}")))?;
    crypto::open(&k, &crypto::aad_data(e.vault_id, e.key_id), &e.sealed)
        .map(Zeroizing::new)
        .map_err(|_| CertError::Internal(format!("vault entry {} does not open", e.vault_id)))
}

/// How `Certificates/Retrieve` packs its answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// PEM, CRLF (`Base64`, `base64`); a key as PBES2 PKCS#8.
    Base64,
    /// The same, named `Base64 (PKCS #8)` (its spellings).
    Pkcs8,
    /// The certificate alone, DER.
    Der,
    /// PKCS#12 under the request's `Password`: the certificate, its chain with `IncludeChain`, its
    /// key with `IncludePrivateKey` (PBES2 AES-256-CBC; MAC HMAC-SHA256).
    Pkcs12,
    /// The certificate (and its chain with `IncludeChain`) as PKCS #7, DER; no key.
    Pkcs7,
}

impl Format {
    pub fn parse(s: &str) -> Result<Format> {
        let t: String = s.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_ascii_lowercase();
        match t.as_str() {
            "base64" | "pem" => Ok(Format::Base64),
            "base64(pkcs#8)" | "base64(pkcs8)" | "pkcs#8" | "pkcs8" => Ok(Format::Pkcs8),
            "der" => Ok(Format::Der),
            "pkcs#12" | "pkcs12" | "pfx" => Ok(Format::Pkcs12),
            "pkcs#7" | "pkcs7" | "p7b" => Ok(Format::Pkcs7),
            "jks" => Err(CertError::Unsupported(format!(
                "Format {s:?} is not served: no maintained Rust writer of Java key stores exists; use PKCS #12, which Java reads \
                 (keytool -importkeystore -srcstoretype PKCS12)."
            ))),
            _ => Err(CertError::Invalid(format!("Format {s:?} is not one of Base64, Base64 (PKCS #8), DER, PKCS #7, PKCS #12."))),
        }
    }

    /// The product's name of the format, as answered.
    pub fn name(self) -> &'static str {
        match self {
            Format::Base64 => "Base64",
            Format::Pkcs8 => "Base64 (PKCS #8)",
            Format::Der => "DER",
            Format::Pkcs12 => "PKCS #12",
            Format::Pkcs7 => "PKCS #7",
        }
    }
}

/// The answer to a key asked of a certificate whose key the server does not
/// hold. vcert's CLI (`pickup --no-prompt`) falls back to the certificate
/// alone only when the text after the last `:` is exactly "Failed to lookup
/// private key vault id" (vcert v5.13.9 `cmd/vcert/cmdCertificates.go`).
pub const NO_KEY: &str = "Private key not found, please modify your selection: Failed to lookup private key vault id";

/// What `Retrieve` is asked.
#[derive(Clone, Debug)]
pub struct RetrieveInput {
    pub format: Format,
    pub include_chain: bool,
    pub root_first: bool,
    pub include_private_key: bool,
    pub password: Option<strongroom_proto::SecretString>,
    pub friendly_name: Option<String>,
}

/// A packed certificate: the bytes (before base64), a file name and the format's name.
#[derive(Clone)]
pub struct Retrieved {
    pub data: Zeroizing<Vec<u8>>,
    pub filename: String,
    pub format: &'static str,
}

impl std::fmt::Debug for Retrieved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Retrieved").field("filename", &self.filename).field("format", &self.format).finish_non_exhaustive()
    }
}

/// The chain of an object's CA (DER): its certificate, then those above it up to the root.
fn ca_chain(cas: &[CaRecord], r: &CertRecord) -> Vec<Vec<u8>> {
    find_ca(cas, &r.ca_key).map(|c| pki::split_certs(&c.cert_der).into_iter().map(<[u8]>::to_vec).collect()).unwrap_or_default()
}

/// The object of `dn` (else of `thumbprint`) with what is read to answer for it, if the caller
/// may know of it: one store call by DN.
pub async fn object_context(app: &App, c: &Caller, dn: Option<&str>, thumbprint: Option<&str>) -> Result<ObjectContext> {
    let path = match dn.filter(|d| !d.trim().is_empty()) {
        Some(dn) => FolderPath::parse(&policy_dn(dn)).map_err(|_| no_certificate(dn.trim()))?,
        None => object_by_dn_or_thumbprint(app, c, None, thumbprint).await?.path,
    };
    match app.store.object_context(path.key().to_owned()).await? {
        Some(o) if c.perms.effective(&o.record.path).implied() != Rights::NONE => Ok(o),
        _ => Err(no_certificate(path.as_str())),
    }
}

/// `Certificates/Retrieve`: Read on the object; Private Key Read too for its key, which is
/// handed out only as PBES2 PKCS#8 under the request's `Password`, with a
/// `certificate.key_exported` event written first.
pub async fn retrieve(app: &App, c: &Caller, o: &ObjectContext, input: &RetrieveInput) -> Result<Retrieved> {
    let r = &o.record;
    if !c.perms.effective(&r.path).implied().contains(Rights::READ) {
        return Err(CertError::Denied(format!("Retrieving {} needs Read on it.", r.path)));
    }
    // A request waiting for approval (or rejected) hides the previous certificate.
    if let Some(p) = &o.pending {
        return Err(processing_error(p));
    }
    retrieve_vault(app, c, o, r.cert_vault_id, r.key_vault_id, input).await
}

/// The longest wait for an approval a call honours (`WorkToDoTimeout`; the product's bound).
pub const MAX_WORK_TO_DO_SECS: i64 = 120;
/// How often a waiting call looks at a request waiting for approval again (milliseconds).
const WORK_POLL_MS: i64 = 250;

/// [`retrieve`] of `dn`, waiting up to `wait_secs` (at most [`MAX_WORK_TO_DO_SECS`], measured on
/// the application's clock) while its request waits for approval; past it, the waiting answer
/// ([`CertError::Pending`]).
pub async fn retrieve_waiting(app: &App, c: &Caller, dn: &str, input: &RetrieveInput, wait_secs: i64) -> Result<Retrieved> {
    let wait_ms = wait_secs.clamp(0, MAX_WORK_TO_DO_SECS) * 1000;
    let until = app.now().millis() + wait_ms;
    // Bounded by the polls too, so a clock that does not move (a test's) cannot hold it for ever.
    for _ in 0..wait_ms / WORK_POLL_MS {
        match retrieve(app, c, &object_context(app, c, Some(dn), None).await?, input).await {
            Err(CertError::Pending { .. }) if app.now().millis() + WORK_POLL_MS <= until => {
                tokio::time::sleep(std::time::Duration::from_millis(WORK_POLL_MS.unsigned_abs())).await;
            }
            other => return other,
        }
    }
    retrieve(app, c, &object_context(app, c, Some(dn), None).await?, input).await
}

async fn retrieve_vault(
    app: &App,
    c: &Caller,
    o: &ObjectContext,
    cert_id: VaultId,
    key_id: Option<VaultId>,
    input: &RetrieveInput,
) -> Result<Retrieved> {
    let r = &o.record;
    let rights = c.perms.effective(&r.path).implied();
    if !rights.contains(Rights::READ) {
        return Err(CertError::Denied(format!("Retrieving {} needs Read on it.", r.path)));
    }
    if !r.issued() {
        return Err(not_enrolled(r));
    }
    if input.include_private_key && !rights.contains(Rights::PRIVATE_KEY_READ) {
        return Err(CertError::Denied(format!("Retrieving the private key of {} needs Private Key Read on it.", r.path)));
    }
    let entries = &o.entries;
    let cert_entry = entries.iter().find(|e| e.vault_id == cert_id).ok_or_else(|| no_certificate(r.path.as_str()))?;
    let cert = open_entry(app, cert_entry).await?;
    let base = input
        .friendly_name
        .clone()
        .filter(|f| !f.is_empty())
        .unwrap_or_else(|| if r.cn.is_empty() { r.path.to_string() } else { r.cn.clone() });
    let base: String = base.chars().map(|ch| if ch.is_alphanumeric() || ".-_".contains(ch) { ch } else { '_' }).collect();
    if input.format == Format::Der {
        if input.include_private_key {
            return Err(CertError::Invalid("DER holds the certificate alone: ask Base64 (PKCS #8) for the key.".into()));
        }
        return Ok(Retrieved { data: cert, filename: format!("{base}.cer"), format: Format::Der.name() });
    }
    let chain = if input.include_chain { ca_chain(&o.cas, r) } else { Vec::new() };
    if input.format == Format::Pkcs7 {
        if input.include_private_key {
            return Err(CertError::Invalid("PKCS #7 holds certificates alone: ask PKCS #12 or Base64 (PKCS #8) for the key.".into()));
        }
        let mut certs: Vec<&[u8]> = vec![&cert];
        certs.extend(chain.iter().map(Vec::as_slice));
        return Ok(Retrieved { data: Zeroizing::new(pki::pkcs7(&certs)), filename: format!("{base}.p7b"), format: Format::Pkcs7.name() });
    }
    if input.format == Format::Pkcs12 {
        let password = input.password.as_ref().map(|p| p.expose().to_owned()).unwrap_or_default();
        if password.is_empty() {
            return Err(CertError::Invalid("A Password is required for PKCS #12.".into()));
        }
        let key = if input.include_private_key { Some(export_key(app, c, r, entries, key_id, "PKCS #12", &password).await?) } else { None };
        let mut certs: Vec<&[u8]> = vec![&cert];
        certs.extend(chain.iter().map(Vec::as_slice));
        let p12 = pki::pkcs12(&certs, key.as_ref(), &Zeroizing::new(password), &*app.rng)?;
        return Ok(Retrieved { data: Zeroizing::new(p12), filename: format!("{base}.pfx"), format: Format::Pkcs12.name() });
    }
    // Leaf, its CA, …, the root; or with RootFirstOrder the root first and the leaf last.
    let mut order: Vec<&[u8]> = vec![&cert];
    order.extend(chain.iter().map(Vec::as_slice));
    if input.root_first {
        order.reverse();
    }
    let mut out = String::new();
    for der in order {
        out.push_str(&pki::pem("CERTIFICATE", der));
    }
    if input.include_private_key {
        let password = input.password.as_ref().map(|p| p.expose().to_owned()).unwrap_or_default();
        if password.is_empty() {
            return Err(CertError::Invalid("A Password is required to retrieve a private key.".into()));
        }
        let key = export_key(app, c, r, entries, key_id, "PBES2 PKCS#8", &password).await?;
        let encrypted = pki::encrypt_pkcs8(&key, &password, &*app.rng)?;
        out.push_str(&pki::pem("ENCRYPTED PRIVATE KEY", &encrypted));
    }
    let ext = if input.format == Format::Pkcs8 { "pem" } else { "cer" };
    Ok(Retrieved { data: Zeroizing::new(out.into_bytes()), filename: format!("{base}.{ext}"), format: input.format.name() })
}

/// The object's key, opened for export under `password` after its `certificate.key_exported`
/// event is written. The password must be one a user could choose as theirs
/// ([`strongroom_core::password::weakness`]): a key under `a` or `password` is as good as
/// handed out in the clear.
async fn export_key(
    app: &App,
    c: &Caller,
    r: &CertRecord,
    entries: &[VaultEntry],
    key_id: Option<VaultId>,
    how: &str,
    password: &str,
) -> Result<PrivateKey> {
    let missing = || CertError::NoKey(NO_KEY.into());
    let kid = key_id.ok_or_else(missing)?;
    let key_entry = entries.iter().find(|e| e.vault_id == kid).ok_or_else(missing)?;
    if let Some(why) = strongroom_core::password::weakness(password) {
        return Err(CertError::Invalid(format!(
            "The Password that would protect the private key is refused: {why}. Nothing was exported."
        )));
    }
    let key = PrivateKey(open_entry(app, key_entry).await?);
    let event =
        c.event(app, EventKind::CertificateKeyExported, Some(kid)).detail(format!("certificate={} serial={} as={how}", r.path, r.serial));
    app.store.append_event(event).await?;
    Ok(key)
}

/// The event of a certificate object's private key (current or archived)
/// handed out by `SecretStore/Retrieve`, the vault view VenafiPS's
/// `Find-VdcVaultId` and `Export-VdcVaultObject` use; `None` for any other entry.
pub(crate) async fn vault_key_export(app: &App, c: &Caller, e: &VaultEntry) -> Result<Option<Event>, StoreError> {
    if e.vault_type != vault_type::PKCS8 && e.vault_type != vault_type::ARCHIVED_PKCS8 {
        return Ok(None);
    }
    for owner in &e.owners {
        if let Some(r) = app.store.certificate(owner.key().to_owned()).await? {
            let event = c
                .event(app, EventKind::CertificateKeyExported, Some(e.vault_id))
                .detail(format!("certificate={} vault_type={} as=SecretStore/Retrieve (PKCS#8, not encrypted)", r.path, e.vault_type));
            return Ok(Some(event));
        }
    }
    Ok(None)
}

/// `Certificates/Retrieve/{vaultId}`: an entry of the object (current or archived), by id.
pub async fn retrieve_by_vault_id(app: &App, c: &Caller, id: VaultId, input: &RetrieveInput) -> Result<Retrieved> {
    let missing = || CertError::NoCertificate(format!("Vault ID {id} is not a certificate."));
    let owners = app.store.owners_of(vec![id]).await?;
    let owner = owners.into_iter().next().and_then(|(_, o)| o.into_iter().next()).ok_or_else(missing)?;
    let o = app.store.object_context(owner.key().to_owned()).await?.ok_or_else(missing)?;
    if c.perms.effective(&o.record.path).implied() == Rights::NONE {
        return Err(missing());
    }
    let e = o.entries.iter().find(|e| e.vault_id == id).ok_or_else(missing)?;
    if e.vault_type != vault_type::CERTIFICATE && e.vault_type != vault_type::ARCHIVED_CERTIFICATE {
        return Err(CertError::Invalid(format!("Vault ID {id} is not a certificate.")));
    }
    retrieve_vault(app, c, &o, id, None, &RetrieveInput { include_private_key: false, ..input.clone() }).await
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

fn ccert_name(p: &FolderPath) -> String {
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

/// `Certificates/Reset` (§0.15, §3.4): Write on the object. A request waiting for approval, or
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
            settle(app.desk(), &caller_actor(c, &make), &p, None, PendingChange::Cancel, Rights::WRITE).await
        }
        Err(CertError::NoCertificate(_)) => Err(CertError::Invalid(format!(
            "Certificate {} does not exist or you do not have sufficient rights to the object.",
            policy_dn(dn)
        ))),
        Err(e) => Err(e),
    }
}

/// `Certificates/Retry` (§3.4): Write on the object. A rejected request waits for approval again;
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
    settle(app.desk(), &caller_actor(c, &make), &p, None, PendingChange::Retry(PENDING_STATUS.to_owned()), Rights::WRITE).await
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

// ------------------------------------------------------------------ custom fields

/// The class of an object: one made with `Config/Create` is the class it was made as.
pub fn class_of(r: &CertRecord) -> &'static str {
    if r.template.is_empty() { ccert::CERTIFICATE_CLASS } else { ccert::CREATED_CLASS }
}

fn field_error(text: impl std::fmt::Display) -> CertError {
    CertError::Invalid(format!("Custom Field error. {text}"))
}

/// The values a Request's `CustomFields` write with the object (by the field's name, any case):
/// a field that is not defined, does not apply to the object's class or refuses a value is a
/// 400 `Custom Field error. …` and nothing is issued. A new object starts with only these; an
/// existing one keeps the values of fields not named.
fn request_fields(defined: &[CertField], input: &RequestInput, existing: Option<&CertRecord>) -> Result<FieldValues> {
    let mut out = FieldValues { replace: existing.is_none(), values: Vec::new() };
    if input.custom_fields.is_empty() {
        return Ok(out);
    }
    let class = existing.map_or(ccert::CERTIFICATE_CLASS, class_of);
    for (name, values) in &input.custom_fields {
        let Some(f) = defined.iter().find(|f| f.name.eq_ignore_ascii_case(name.trim())) else {
            return Err(field_error(format!("Custom Field {} does not exist.", name.trim())));
        };
        if !fields::applies(&f.classes, class) {
            return Err(field_error(format!("Custom Field {} does not apply to class {class}.", f.name)));
        }
        fields::check_values(&f.name, f.kind, &f.allowed, values).map_err(|r| field_error(r.text))?;
        match out.values.iter_mut().find(|(g, _)| *g == f.guid) {
            Some((_, v)) => v.extend(values.iter().cloned()),
            None => out.values.push((f.guid.clone(), values.clone())),
        }
    }
    Ok(out)
}

/// The object of `dn` when the caller holds `need` on it (else 403; an object the caller may not
/// know of is one that does not exist).
async fn object_with(app: &App, c: &Caller, dn: &str, need: Rights, what: &str) -> Result<CertRecord> {
    let r = object(app, c, dn).await?;
    if !c.perms.effective(&r.path).implied().contains(need) {
        return Err(CertError::Denied(format!(
            "{what} of {} needs {} on it.",
            r.path,
            if need == Rights::READ { "Read" } else { "Write" }
        )));
    }
    Ok(r)
}

/// Object `r`'s custom field values with their definitions, by the field's name.
pub async fn field_values(app: &App, r: &CertRecord) -> Result<Vec<(CertField, Vec<String>)>> {
    let values = app.store.cert_field_values(r.path.key().to_owned()).await?;
    if values.is_empty() {
        return Ok(Vec::new());
    }
    let defined = app.store.cert_fields().await?;
    Ok(defined.into_iter().filter_map(|f| values.iter().find(|(g, _)| *g == f.guid).map(|(_, v)| (f.clone(), v.clone()))).collect())
}

/// `Metadata/Get`: Read on the object; its fields that hold values (with `all`, every field
/// that applies to it, those without values with none).
pub async fn metadata_get(app: &App, c: &Caller, dn: &str, all: bool) -> Result<Vec<(CertField, Vec<String>)>> {
    let r = object_with(app, c, dn, Rights::READ, "Reading the custom fields").await?;
    if !all {
        return field_values(app, &r).await;
    }
    let values = app.store.cert_field_values(r.path.key().to_owned()).await?;
    let class = class_of(&r);
    Ok(app
        .store
        .cert_fields()
        .await?
        .into_iter()
        .filter(|f| fields::applies(&f.classes, class) || values.iter().any(|(g, _)| *g == f.guid))
        .map(|f| {
            let v = values.iter().find(|(g, _)| *g == f.guid).map(|(_, v)| v.clone()).unwrap_or_default();
            (f, v)
        })
        .collect())
}

/// `Metadata/GetItems`: Read on the object; the fields that apply to its class.
pub async fn metadata_items(app: &App, c: &Caller, dn: &str) -> Result<Vec<CertField>> {
    let r = object_with(app, c, dn, Rights::READ, "Reading the custom fields").await?;
    let class = class_of(&r);
    Ok(app.store.cert_fields().await?.into_iter().filter(|f| fields::applies(&f.classes, class)).collect())
}

/// The fields that apply to `class` (`Metadata/GetItemsForClass`; every field for `None`).
pub async fn fields_for_class(app: &App, class: Option<&str>) -> Result<Vec<CertField>> {
    let all = app.store.cert_fields().await?;
    Ok(match class {
        None => all,
        Some(k) => all.into_iter().filter(|f| fields::applies(&f.classes, k)).collect(),
    })
}

/// `Metadata/Set`: Write on the object (re-checked in the write); each `(ItemGuid, List)` sets
/// that field's values (an empty list clears it); without `keep_existing` every other field is
/// cleared. Answers the product's result code: 0, or why nothing was written
/// (`fields::result`: an unknown item 4, not for this class 18, a value not in the list 17).
pub async fn metadata_set(app: &App, c: &Caller, dn: &str, data: &[(String, Vec<String>)], keep_existing: bool) -> Result<i64> {
    let r = object_with(app, c, dn, Rights::WRITE, "Setting the custom fields").await?;
    let defined = app.store.cert_fields().await?;
    let class = class_of(&r);
    let mut set = FieldValues { replace: !keep_existing, values: Vec::new() };
    for (item, values) in data {
        let Some(f) = ObjectGuid::parse(item).and_then(|g| defined.iter().find(|f| f.guid == g.braced())) else {
            return Ok(fields::result::INVALID_ITEM);
        };
        if !fields::applies(&f.classes, class) {
            return Ok(fields::result::ITEM_NOT_VALID_FOR_CLASS);
        }
        if let Err(refused) = fields::check_values(&f.name, f.kind, &f.allowed, values) {
            return Ok(refused.code);
        }
        set.values.push((f.guid.clone(), values.clone()));
    }
    let names: Vec<&str> = set.values.iter().filter_map(|(g, _)| defined.iter().find(|f| f.guid == *g).map(|f| f.name.as_str())).collect();
    let event = c.event(app, EventKind::CertificateFieldsSet, r.cert_id()).detail(format!(
        "certificate={} fields={} keep_existing={keep_existing}",
        r.path,
        names.join(",")
    ));
    match app.store.set_cert_field_values(r.path.key().to_owned(), set, Some(c.writer()), event).await? {
        Checked::Done(true) => Ok(fields::result::SUCCESS),
        Checked::Done(false) => Err(no_certificate(r.path.as_str())),
        Checked::Denied => Err(CertError::Denied(format!("Setting the custom fields of {} needs Write on it.", r.path))),
    }
}
