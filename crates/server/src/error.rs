//! Why the server could not start or keep serving.

use std::net::SocketAddr;

use strongroom_idp::jwks::KeysError;
use strongroom_keyring::KeyRingError;
use strongroom_keyring::keys::KeyError;
use strongroom_store::StoreError;

use crate::tls::TlsError;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("opening the store: {0}")]
    Store(#[from] StoreError),
    #[error("{0}")]
    AlreadyServed(String),
    #[error("master key: {0}")]
    Keys(#[from] KeyError),
    #[error("TLS: {0}")]
    Tls(#[from] TlsError),
    #[error("a configured vault key cannot be used, so the server does not start: {0}")]
    VaultKey(#[from] KeyRingError),
    #[error("listening on {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
    #[error("server: {0}")]
    Io(#[from] std::io::Error),
    #[error("[jwt]: {0}")]
    Jwt(#[from] KeysError),
    #[error("[oidc]: {0}")]
    Oidc(KeysError),
    #[error("[certificate]: {0}")]
    Certificate(#[from] strongroom_idp::certificate::CertError),
}
