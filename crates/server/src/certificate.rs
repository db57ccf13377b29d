//! The certificate grant's listener (`[certificate] listen`): rustls with
//! the verifier `strongroom_idp::certificate::listener_verifier` builds,
//! which asks every client for a certificate (naming no CA) but lets one
//! without finish the handshake (so that it gets a JSON error naming what is
//! missing), and refuses early what fails against the mappings' CAs as last
//! read, every `[certificate] reload_secs`, for any reason but an unknown
//! issuer. The grant decides, on the mappings it reads in the request
//! (`strongroom_idp::certificate::match_mappings`): a mapping counts at once.

use std::time::Duration;

use strongroom_core::machine::{Mapping, MappingRule};
use strongroom_idp::certificate::{CertError, listener_verifier};

/// The certificate listener's acceptor: rustls, then the verified client
/// chain (if any) as a request extension ([`ClientCertificate`]).
#[derive(Clone)]
struct CertAcceptor {
    inner: axum_server::tls_rustls::RustlsAcceptor,
}

impl std::fmt::Debug for CertAcceptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CertAcceptor")
    }
}

impl<I, S> axum_server::accept::Accept<I, S> for CertAcceptor
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    S: Send + 'static,
{
    type Stream = tokio_rustls::server::TlsStream<I>;
    type Service = axum::middleware::AddExtension<S, ClientCertificate>;
    type Future = futures_util::future::BoxFuture<'static, std::io::Result<(Self::Stream, Self::Service)>>;

    fn accept(&self, stream: I, service: S) -> Self::Future {
        let acceptor = self.inner.clone();
        Box::pin(async move {
            let (stream, service) = acceptor.accept(stream, service).await?;
            let chain = stream.get_ref().1.peer_certificates().map(|c| c.iter().map(|d| d.as_ref().to_vec()).collect());
            Ok((stream, tower::Layer::layer(&axum::Extension(ClientCertificate(chain)), service)))
        })
    }
}

use strongroom_app::service::machine::ClientCertificate;

/// What the listener's verifier was built from, to rebuild it only when the mappings change.
fn fingerprint(mappings: &[Mapping]) -> Vec<(String, String)> {
    mappings
        .iter()
        .filter_map(|m| match &m.rule {
            MappingRule::Cert { ca_bundle, .. } => Some((m.name.clone(), ca_bundle.clone())),
            MappingRule::Jwt { .. } => None,
        })
        .collect()
}

/// Serves the certificate grant on `listener` with TLS from `files`,
/// reading the mappings again every `reload` seconds.
pub(crate) async fn spawn(
    listener: std::net::TcpListener,
    state: strongroom_http::state::HttpState,
    limits: strongroom_http::Limits,
    files: crate::listener::TlsFiles,
    reload: i64,
) -> Result<crate::listener::Running, crate::error::ServeError> {
    let reload_every = Duration::from_secs(u64::try_from(reload).unwrap_or(10).max(1));
    let mappings = state.store.mappings().await?;
    let crls = state.machine.crls.clone();
    let loaded = crate::tls::load_with(&files.cert, &files.key, Some(listener_verifier(&mappings, &crls)?))?;
    let config = axum_server::tls_rustls::RustlsConfig::from_config(loaded.config);
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let handle = axum_server::Handle::new();
    let acceptor =
        CertAcceptor { inner: axum_server::tls_rustls::RustlsAcceptor::new(config.clone()).handshake_timeout(Duration::from_secs(10)) };
    let app = strongroom_http::certificate_app(state.clone(), limits);
    // As on the main listener: the first bytes after the handshake, and each request head, within 10 s.
    let read_timeout = Duration::from_secs(10);
    let mut server = axum_server::from_tcp(listener)
        .acceptor(acceptor)
        .handle(handle.clone())
        .map(|a| crate::first_bytes::FirstBytes::new(a, read_timeout));
    server.http_builder().http1().timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(read_timeout);
    let task = tokio::spawn(server.serve(app.into_make_service_with_connect_info::<std::net::SocketAddr>()));
    let reload = config.clone();
    tokio::spawn(async move {
        let mut seen = fingerprint(&mappings);
        loop {
            tokio::time::sleep(reload_every).await;
            let now = match state.store.mappings().await {
                Ok(m) => m,
                Err(e) => {
                    tracing::warn!(error = %e, "certificate listener: reading the mappings failed; the CAs in use stay");
                    continue;
                }
            };
            let next = fingerprint(&now);
            tracing::debug!(mappings = next.len(), changed = next != seen, "certificate listener: mappings read");
            if next == seen {
                continue;
            }
            match listener_verifier(&now, &crls)
                .and_then(|v| crate::tls::load_with(&files.cert, &files.key, Some(v)).map_err(|e| CertError::Verifier(e.to_string())))
            {
                Ok(l) => {
                    reload.reload_from_config(l.config);
                    tracing::info!(mappings = next.len(), "certificate listener: approved CAs reloaded");
                    seen = next;
                }
                Err(e) => {
                    tracing::error!(error = %e, "certificate listener: the new mappings' CAs could not be loaded; the ones in use stay")
                }
            }
        }
    });
    Ok(crate::listener::Running { addr, handle, task, tls: Some(config) })
}
