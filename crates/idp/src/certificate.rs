//! The certificate grant's TLS side: a listener of its own
//! (`[certificate] listen`) whose rustls configuration asks every client for
//! a certificate, without naming any CA (so that a client sends its
//! certificate whatever its issuer), and lets a client without one finish
//! the handshake, so that it gets a JSON error naming what is missing rather
//! than a TLS alert. The main listener (the approval page) never asks
//! browsers for a certificate.
//!
//! Who decides: the grant, which checks the presented chain against each
//! certificate mapping's own CAs as read from the store in that request
//! ([`match_mappings`]: webpki, validity, key usage and the clientAuth EKU,
//! the CRLs of `[certificate] crl_files`), so a mapping added or changed with
//! `admin mappings` counts at once, on every replica. The same check is how
//! a certificate passed by a trusted proxy in `[certificate] proxy_header` is
//! verified. The handshake proves the client holds the key, and refuses
//! early (a TLS alert) a chain that fails against the mappings' CAs as last
//! read (at start and every `[certificate] reload_secs`) for any reason but
//! an issuer it does not know yet: that one goes on to the grant, which reads
//! the mappings afresh.

use std::sync::Arc;
use std::time::Duration;

use rustls::RootCertStore;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, CertificateRevocationListDer, UnixTime as PkiTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, SignatureScheme};
use x509_cert::der::Decode as _;
use x509_cert::der::oid::ObjectIdentifier;

use strongroom_core::identity::UserId;
use strongroom_core::machine::{CertField, Mapping, MappingRule};
use strongroom_core::time::UnixTime;

const CN: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.4.3");
const SAN: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.17");
const UPN: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.4.1.311.20.2.3");

#[derive(Debug, thiserror::Error)]
pub enum CertError {
    #[error("reading {path}: {message}")]
    Read { path: String, message: String },
    #[error("mapping {mapping}: its CA bundle: {message}")]
    Bundle { mapping: String, message: String },
    #[error("the client certificate verifier: {0}")]
    Verifier(String),
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The CRLs of `[certificate] crl_files` (PEM or DER).
pub fn load_crls(files: &[std::path::PathBuf]) -> Result<Vec<CertificateRevocationListDer<'static>>, CertError> {
    let mut out = Vec::new();
    for f in files {
        let read = |message: String| CertError::Read { path: f.display().to_string(), message };
        let bytes = std::fs::read(f).map_err(|e| read(e.to_string()))?;
        if bytes.starts_with(b"-----") {
            for crl in CertificateRevocationListDer::pem_slice_iter(&bytes) {
                out.push(crl.map_err(|e| read(e.to_string()))?);
            }
        } else {
            out.push(CertificateRevocationListDer::from(bytes));
        }
    }
    Ok(out)
}

/// The CA certificates of a PEM bundle.
pub fn bundle_certs(pem: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(pem.as_bytes()).collect::<Result<_, _>>().map_err(|e| e.to_string())?;
    if certs.is_empty() {
        return Err("no certificate in it".into());
    }
    Ok(certs)
}

fn verifier(roots: RootCertStore, crls: &[CertificateRevocationListDer<'static>]) -> Result<Arc<dyn ClientCertVerifier>, CertError> {
    let mut b = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider()).allow_unauthenticated();
    if !crls.is_empty() {
        b = b.with_crls(crls.iter().cloned()).only_check_end_entity_revocation().allow_unknown_revocation_status();
    }
    b.build().map_err(|e| CertError::Verifier(e.to_string()))
}

fn roots_of(pem: &str, mapping: &str) -> Result<RootCertStore, CertError> {
    let mut roots = RootCertStore::empty();
    for c in bundle_certs(pem).map_err(|message| CertError::Bundle { mapping: mapping.to_owned(), message })? {
        roots.add(c).map_err(|e| CertError::Bundle { mapping: mapping.to_owned(), message: e.to_string() })?;
    }
    Ok(roots)
}

/// The listener's verifier: asks every client for a certificate (naming no
/// CA), checks the handshake's signature with the presented key, and refuses
/// a chain that fails against the CAs of `mappings` for any reason but an
/// unknown issuer (which the grant decides on the mappings it reads).
pub fn listener_verifier(
    mappings: &[Mapping],
    crls: &[CertificateRevocationListDer<'static>],
) -> Result<Arc<dyn ClientCertVerifier>, CertError> {
    let mut roots = RootCertStore::empty();
    for m in mappings {
        if let MappingRule::Cert { ca_bundle, .. } = &m.rule {
            roots.roots.extend(roots_of(ca_bundle, &m.name)?.roots);
        }
    }
    let known = if roots.is_empty() { None } else { Some(verifier(roots, crls)?) };
    Ok(Arc::new(ListenerVerifier { known, algorithms: provider().signature_verification_algorithms }))
}

/// See [`listener_verifier`].
#[derive(Debug)]
struct ListenerVerifier {
    /// Over the mappings' CAs as last read; `None` while there are none.
    known: Option<Arc<dyn ClientCertVerifier>>,
    algorithms: rustls::crypto::WebPkiSupportedAlgorithms,
}

impl ClientCertVerifier for ListenerVerifier {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    /// None: a client whose certificate's issuer was named nowhere would
    /// otherwise send none (Go's `crypto/tls` does so), and a mapping added
    /// a moment ago would not count until the next read.
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: PkiTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        let Some(known) = &self.known else { return Ok(ClientCertVerified::assertion()) };
        match known.verify_client_cert(end_entity, intermediates, now) {
            Err(rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer)) => Ok(ClientCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// The certificate mappings `chain` (end entity first) satisfies at `now`:
/// the chain verifies against the mapping's own CAs (and the CRLs), and the
/// mapping's field gives a usable name. Each with the identity it gives and
/// the end entity's issuer (for the event).
pub fn match_mappings<'m>(
    chain: &[Vec<u8>],
    mappings: &'m [Mapping],
    crls: &[CertificateRevocationListDer<'static>],
    now: UnixTime,
) -> Vec<(&'m Mapping, UserId, String)> {
    let Some((end, rest)) = chain.split_first() else { return Vec::new() };
    let Ok(cert) = x509_cert::Certificate::from_der(end) else { return Vec::new() };
    let end_entity = CertificateDer::from(end.as_slice());
    let intermediates: Vec<CertificateDer<'_>> = rest.iter().map(|c| CertificateDer::from(c.as_slice())).collect();
    let at = PkiTime::since_unix_epoch(Duration::from_secs(u64::try_from(now.secs()).unwrap_or(0)));
    let issuer = cert.tbs_certificate.issuer.to_string();
    let mut out = Vec::new();
    for m in mappings {
        let MappingRule::Cert { ca_bundle, field } = &m.rule else { continue };
        let Ok(roots) = roots_of(ca_bundle, &m.name) else { continue };
        let Ok(v) = verifier(roots, crls) else { continue };
        if v.verify_client_cert(&end_entity, &intermediates, at).is_err() {
            continue;
        }
        if let Some(name) = name_of(&cert, *field).filter(|n| strongroom_core::machine::valid_subject(n)) {
            out.push((m, m.identity(&name), issuer.clone()));
        }
    }
    out
}

/// The name `field` gives: the subject's CN, the first e-mail SAN, or the first UPN SAN.
fn name_of(cert: &x509_cert::Certificate, field: CertField) -> Option<String> {
    let text = |any: &x509_cert::der::Any| std::str::from_utf8(any.value()).ok().map(str::to_owned);
    match field {
        CertField::Cn => {
            cert.tbs_certificate.subject.0.iter().flat_map(|rdn| rdn.0.iter()).find(|atv| atv.oid == CN).and_then(|atv| text(&atv.value))
        }
        CertField::Email | CertField::Upn => {
            let ext = cert.tbs_certificate.extensions.as_ref()?.iter().find(|e| e.extn_id == SAN)?;
            let san = x509_cert::ext::pkix::SubjectAltName::from_der(ext.extn_value.as_bytes()).ok()?;
            san.0.iter().find_map(|g| match (g, field) {
                (x509_cert::ext::pkix::name::GeneralName::Rfc822Name(m), CertField::Email) => Some(m.as_str().to_owned()),
                (x509_cert::ext::pkix::name::GeneralName::OtherName(o), CertField::Upn) if o.type_id == UPN => text(&o.value),
                _ => None,
            })
        }
    }
}

/// A chain as DER, from the PEM a proxy put in a header (URL-encoded, as
/// nginx's `$ssl_client_escaped_cert` and HAProxy give it).
pub fn chain_from_header(value: &str) -> Option<Vec<Vec<u8>>> {
    let decoded = percent_decode(value)?;
    let chain: Vec<Vec<u8>> =
        CertificateDer::pem_slice_iter(decoded.as_bytes()).map(|c| c.map(|c| c.as_ref().to_vec())).collect::<Result<_, _>>().ok()?;
    (!chain.is_empty()).then_some(chain)
}

fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}
