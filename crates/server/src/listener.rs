//! A listener serving an application: plain or TLS, the first bytes and
//! each request head within a read timeout, graceful shutdown, and the TLS
//! pair read again on SIGHUP. `serve` runs the main listener with it; the
//! certificate grant's listener (`certificate`) has an acceptor of its own
//! and hands back the same [`Running`].

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum_server::Handle;
use axum_server::tls_rustls::RustlsConfig;
use hyper_util::rt::TokioTimer;
use tokio::task::JoinHandle;

use crate::first_bytes::FirstBytes;
use crate::tls::{self, TlsError};

/// A server running in the background.
#[derive(Debug)]
pub struct Running {
    pub addr: SocketAddr,
    pub handle: Handle,
    pub task: JoinHandle<std::io::Result<()>>,
    /// The TLS configuration in use, which [`reload_tls`] replaces (None: plain HTTP).
    pub tls: Option<RustlsConfig>,
}

impl Running {
    /// Stops accepting, lets requests in flight finish (up to `grace`), and waits.
    pub async fn shutdown(self, grace: Duration) -> std::io::Result<()> {
        self.handle.graceful_shutdown(Some(grace));
        self.task.await.map_err(std::io::Error::other)?
    }
}

/// Serves `app` on an already bound listener, with TLS when `tls` is given.
pub fn spawn(listener: std::net::TcpListener, app: axum::Router, tls: Option<Arc<rustls::ServerConfig>>) -> std::io::Result<Running> {
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let handle = Handle::new();
    let make = app.into_make_service_with_connect_info::<SocketAddr>();
    // Slow clients may not hold a connection open forever: the first bytes
    // (after the TLS handshake, itself limited to 10 s) within the read
    // timeout, and each request head within it too.
    let read_timeout = Duration::from_secs(10);
    let rustls = tls.map(RustlsConfig::from_config);
    let task = match rustls.clone() {
        Some(cfg) => {
            let mut server =
                axum_server::from_tcp_rustls(listener, cfg).handle(handle.clone()).map(|tls| FirstBytes::new(tls, read_timeout));
            server.http_builder().http1().timer(TokioTimer::new()).header_read_timeout(read_timeout);
            tokio::spawn(server.serve(make))
        }
        None => {
            let mut server = axum_server::from_tcp(listener).handle(handle.clone()).map(|plain| FirstBytes::new(plain, read_timeout));
            server.http_builder().http1().timer(TokioTimer::new()).header_read_timeout(read_timeout);
            tokio::spawn(server.serve(make))
        }
    };
    Ok(Running { addr, handle, task, tls: rustls })
}

/// Where `serve` reads its certificate and key, again on SIGHUP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert: std::path::PathBuf,
    pub key: std::path::PathBuf,
}

/// Reads the certificate and key again into `running`: the new pair serves
/// new connections (those open keep theirs), or, if it cannot be loaded
/// (missing, unreadable, not PEM, a key that does not fit), the pair in use
/// stays and the error says why. The fingerprint of what serves afterwards.
pub fn reload_tls(running: &RustlsConfig, files: &TlsFiles) -> Result<String, TlsError> {
    let loaded = tls::load(&files.cert, &files.key)?;
    running.reload_from_config(loaded.config);
    Ok(loaded.fingerprint)
}
