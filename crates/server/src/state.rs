//! What every request handler can reach: the application ([`App`], which
//! it dereferences to) and the edge's own settings. Built once at start-up.

use std::ops::Deref;
use std::sync::Arc;

use strongroom_app::App;

use crate::http::client_addr::Network;
use crate::metrics::Metrics;

/// The shared state of the HTTP edge.
#[derive(Clone, Debug)]
pub struct HttpState {
    pub app: App,
    /// Whether browsers reach the page over HTTPS (TLS here, or a
    /// `public_url` behind a TLS-terminating proxy): its cookie is then
    /// `__Host-` and `Secure`, and answers carry HSTS.
    pub secure_cookies: bool,
    /// Whether this process terminates TLS (the scheme requests arrive on).
    pub tls_here: bool,
    /// Peers whose `X-Forwarded-For` is believed.
    pub trusted_proxies: Vec<Network>,
    /// What `GET /metrics` reports (also the application's observer).
    pub metrics: Arc<Metrics>,
}

impl Deref for HttpState {
    type Target = App;

    fn deref(&self) -> &App {
        &self.app
    }
}
