//! Whom to trust: the public web PKI, a CA file (for example a server's own
//! self-signed certificate), or one pinned certificate by SHA-256.

use rustls::client::danger::ServerCertVerified;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;
use rustls::{ClientConfig, RootCertStore};
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use strongroom_proto::tls::Verifier;

use crate::error::{ClientError, ClientResult};

#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trust {
    /// The public web PKI (webpki roots).
    #[default]
    WebPki,
    /// Certificates in a PEM file are the roots.
    CaFile(PathBuf),
    /// Exactly the certificate with this SHA-256 (hex, colons allowed).
    Pin(String),
}

/// Parses `AB:CD:…` or `abcd…` into 32 bytes.
pub fn parse_pin(s: &str) -> ClientResult<[u8; 32]> {
    let hex: String = s.chars().filter(|c| *c != ':').collect();
    strongroom_proto::hex::decode(&hex)
        .ok_or_else(|| ClientError::Config("a pin is the certificate's SHA-256: 64 hexadecimal characters".into()))
}

/// Accepts exactly the certificate whose SHA-256 is `sha256`.
fn pinned(sha256: [u8; 32], provider: Arc<CryptoProvider>) -> Arc<Verifier> {
    Verifier::new("pinned certificate", provider, move |end_entity, _, _, _, _| {
        let got: [u8; 32] = Sha256::digest(end_entity.as_ref()).into();
        if got == sha256 {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General("the server's certificate does not match the pinned fingerprint".into()))
        }
    })
}

/// An HTTP client that trusts what `trust` says.
pub fn http_client(trust: &Trust) -> ClientResult<reqwest::Client> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| ClientError::Config(format!("TLS: {e}")))?;
    let config = match trust {
        Trust::WebPki => {
            let roots = RootCertStore { roots: webpki_roots_list() };
            builder.with_root_certificates(roots).with_no_client_auth()
        }
        Trust::CaFile(path) => {
            let mut roots = RootCertStore::empty();
            let certs = CertificateDer::pem_file_iter(path)
                .and_then(|it| it.collect::<Result<Vec<_>, _>>())
                .map_err(|e| ClientError::Config(format!("reading CA file {}: {e}", path.display())))?;
            for c in certs {
                roots.add(c).map_err(|e| ClientError::Config(format!("CA file {}: {e}", path.display())))?;
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
        Trust::Pin(pin) => {
            let sha256 = parse_pin(pin)?;
            builder.dangerous().with_custom_certificate_verifier(pinned(sha256, provider)).with_no_client_auth()
        }
    };
    reqwest::Client::builder()
        .use_preconfigured_tls(config)
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(60))
        .user_agent(concat!("strongroom-client/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| ClientError::Config(format!("HTTP client: {e}")))
}

fn webpki_roots_list() -> Vec<rustls::pki_types::TrustAnchor<'static>> {
    webpki_roots::TLS_SERVER_ROOTS.to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_parse_with_or_without_colons() {
        let hex = "ab".repeat(32);
        assert_eq!(parse_pin(&hex).unwrap(), [0xab; 32]);
        let colons = vec!["AB"; 32].join(":");
        assert_eq!(parse_pin(&colons).unwrap(), [0xab; 32]);
        assert!(parse_pin("abc").is_err());
        assert!(parse_pin(&"zz".repeat(32)).is_err());
    }
}
