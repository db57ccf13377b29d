//! The one shape of Strongroom's own TLS certificate checks (the client's
//! pinned certificate, the store's `sslmode`s): a check of the server's
//! certificate of their own, with the handshake's signatures checked by the
//! crypto provider's algorithms, as rustls's own verifier checks them.

use std::fmt;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

/// What a certificate check is given: the end entity, the intermediates,
/// the name the client asked for, the OCSP response and the time.
pub type CertificateCheck = dyn Fn(&CertificateDer<'_>, &[CertificateDer<'_>], &ServerName<'_>, &[u8], UnixTime) -> Result<ServerCertVerified, rustls::Error>
    + Send
    + Sync;

/// A [`ServerCertVerifier`] made of a certificate check and the provider's signature algorithms.
pub struct Verifier {
    name: &'static str,
    provider: Arc<CryptoProvider>,
    check: Box<CertificateCheck>,
}

impl Verifier {
    /// `name` says what it checks (shown by `Debug`).
    pub fn new<F>(name: &'static str, provider: Arc<CryptoProvider>, check: F) -> Arc<Verifier>
    where
        F: Fn(&CertificateDer<'_>, &[CertificateDer<'_>], &ServerName<'_>, &[u8], UnixTime) -> Result<ServerCertVerified, rustls::Error>
            + Send
            + Sync
            + 'static,
    {
        Arc::new(Verifier { name, provider, check: Box::new(check) })
    }
}

impl fmt::Debug for Verifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Verifier").field("name", &self.name).finish_non_exhaustive()
    }
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        (self.check)(end_entity, intermediates, server_name, ocsp, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}
