//! TLS: rustls with the ring provider. Without configured files, a
//! self-signed certificate is created in the data directory on first start
//! and reused afterwards; its SHA-256 fingerprint is printed so clients can
//! pin it.

use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strongroom_keyring::keys::write_private;

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{0}")]
    Io(String),
    #[error("generating the self-signed certificate: {0}")]
    Generate(String),
    #[error("TLS configuration: {0}")]
    Config(String),
}

/// A loaded certificate and where it came from.
#[derive(Debug)]
pub struct Loaded {
    pub config: Arc<ServerConfig>,
    /// SHA-256 of the leaf certificate (DER), colon-separated hex.
    pub fingerprint: String,
    pub cert_path: PathBuf,
    pub created: bool,
}

/// The self-signed certificate's files in the data directory.
pub fn self_signed_paths(data_dir: &Path) -> (PathBuf, PathBuf) {
    (data_dir.join("tls").join("cert.pem"), data_dir.join("tls").join("key.pem"))
}

/// Creates the self-signed certificate if absent. `hosts` go into the
/// subject alternative names besides `localhost`, `127.0.0.1` and `::1`.
pub fn ensure_self_signed(data_dir: &Path, hosts: &[String]) -> Result<(PathBuf, PathBuf, bool), TlsError> {
    let (cert, key) = self_signed_paths(data_dir);
    if cert.exists() && key.exists() {
        return Ok((cert, key, false));
    }
    let dir = data_dir.join("tls");
    strongroom_keyring::keys::create_private_dir(&dir).map_err(|e| TlsError::Io(format!("creating {}: {e}", dir.display())))?;
    let mut names = vec!["localhost".to_owned(), "127.0.0.1".to_owned(), "::1".to_owned()];
    for h in hosts {
        if !names.contains(h) {
            names.push(h.clone());
        }
    }
    let generated = rcgen::generate_simple_self_signed(names).map_err(|e| TlsError::Generate(e.to_string()))?;
    // Half a pair (a start stopped between the two writes) is of no use: both are made anew.
    for half in [&cert, &key] {
        let _ = std::fs::remove_file(half);
    }
    write_private(&key, generated.key_pair.serialize_pem().as_bytes())
        .map_err(|e| TlsError::Io(format!("writing {}: {e}", key.display())))?;
    // Public, but never writable by others, whatever the umask.
    strongroom_keyring::keys::write_new(&cert, generated.cert.pem().as_bytes(), 0o644)
        .map_err(|e| TlsError::Io(format!("writing {}: {e}", cert.display())))?;
    Ok((cert, key, true))
}

/// Loads a PEM chain and key into a rustls server configuration.
pub fn load(cert_path: &Path, key_path: &Path) -> Result<Loaded, TlsError> {
    load_with(cert_path, key_path, None)
}

/// [`load`], asking clients for certificates with `clients` (the
/// certificate grant's listener) when given.
pub fn load_with(
    cert_path: &Path,
    key_path: &Path,
    clients: Option<Arc<dyn rustls::server::danger::ClientCertVerifier>>,
) -> Result<Loaded, TlsError> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert_path)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| TlsError::Io(format!("reading {}: {e}", cert_path.display())))?;
    let leaf = certs.first().ok_or_else(|| TlsError::Config(format!("{} holds no certificate", cert_path.display())))?;
    let fingerprint = fingerprint(leaf);
    let key = PrivateKeyDer::from_pem_file(key_path).map_err(|e| TlsError::Io(format!("reading {}: {e}", key_path.display())))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder =
        ServerConfig::builder_with_provider(provider).with_safe_default_protocol_versions().map_err(|e| TlsError::Config(e.to_string()))?;
    let builder = match clients {
        Some(v) => builder.with_client_cert_verifier(v),
        None => builder.with_no_client_auth(),
    };
    let mut config = builder.with_single_cert(certs, key).map_err(|e| TlsError::Config(e.to_string()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Loaded { config: Arc::new(config), fingerprint, cert_path: cert_path.to_owned(), created: false })
}

/// `AB:CD:...`, the form browsers and `openssl x509 -fingerprint -sha256` show.
pub fn fingerprint(cert: &CertificateDer<'_>) -> String {
    Sha256::digest(cert.as_ref()).iter().map(|b| format!("{b:02X}")).collect::<Vec<_>>().join(":")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_signed_is_created_once_and_loads() {
        let dir = tempfile::tempdir().unwrap();
        let (c, k, created) = ensure_self_signed(dir.path(), &["vault.example".into()]).unwrap();
        assert!(created);
        let first = load(&c, &k).unwrap();
        assert_eq!(first.fingerprint.len(), 32 * 3 - 1);
        let (_, _, created) = ensure_self_signed(dir.path(), &[]).unwrap();
        assert!(!created);
        assert_eq!(load(&c, &k).unwrap().fingerprint, first.fingerprint, "reused, not regenerated");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&k), 0o600, "the private key is private");
            assert_eq!(mode(&c) & 0o022, 0, "the certificate is not writable by others");
            assert_eq!(mode(&dir.path().join("tls")), 0o700);
        }
    }
}
