//! `Certificates/Retrieve` and the vault view of a certificate's entries: the object read with its
//! waiting request, entries and CAs in one call, packed as the product's formats; a key handed
//! out only under a strong password, after its event.

use super::*;

pub(super) async fn open_entry(app: &App, e: &VaultEntry) -> Result<Zeroizing<Vec<u8>>> {
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
