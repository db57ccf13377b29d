//! Issuing CAs as requests use them: a CA's sealed key and its signer (software, or a token's
//! key), its certificate, its CRL's URL, and the CRL itself, signed again only when it would change.

use super::*;

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
