//! One server: its base URL and an HTTP client with the right TLS trust;
//! request helpers that turn every kind of failure into a [`ClientError`].

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::error::Error as _;

use crate::error::{ClientError, ClientResult};
use crate::tls::{Trust, http_client};

#[derive(Clone, Debug)]
pub struct Server {
    base: String,
    http: reqwest::Client,
}

/// What a `/vedsdk` call answered, before the `Result` code is looked at.
pub(crate) enum SdkAnswer {
    Ok(Value),
    Unauthorized,
}

impl Server {
    /// `base` is `https://host[:port]` (or `http://` for a server behind a
    /// TLS proxy on the same host, or in tests).
    pub fn new(base: &str, trust: &Trust) -> ClientResult<Server> {
        let base = base.trim_end_matches('/').to_owned();
        if !(base.starts_with("https://") || base.starts_with("http://")) || base.len() < 9 {
            return Err(ClientError::Config(format!("{base:?} is not an http(s) URL")));
        }
        Ok(Server { base, http: http_client(trust)? })
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Sends and reads the whole answer. A failure before the whole answer
    /// arrived (refused, reset, timeout, body cut off) is
    /// [`ClientError::Unreachable`]: see [`ClientError::is_transport`].
    async fn send(&self, req: reqwest::RequestBuilder) -> ClientResult<(u16, String, Vec<u8>)> {
        let resp = req.send().await.map_err(classify)?;
        let status = resp.status().as_u16();
        let ct = resp.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
        // Nothing is decoded here: whatever breaks while reading the body is
        // the connection (reset, timeout, cut off), not the answer's content.
        let body = resp.bytes().await.map_err(|e| match classify(e) {
            ClientError::BadResponse(m) => ClientError::Unreachable(format!("the answer was cut off: {m}")),
            other => other,
        })?;
        let body = body.to_vec();
        Ok((status, ct, body))
    }

    /// A `/vedauth/Authorize/*` call with a JSON body.
    pub(crate) async fn auth_post<B: Serialize + ?Sized, T: DeserializeOwned>(&self, path: &str, body: &B) -> ClientResult<T> {
        let (status, ct, bytes) = self.send(self.http.post(self.url(path)).json(body)).await?;
        if status >= 500 {
            return Err(ClientError::ServerError { status });
        }
        if !ct.to_ascii_lowercase().starts_with("application/json") {
            return Err(ClientError::BadResponse(format!("HTTP {status} with content type {ct:?}")));
        }
        if status == 200 {
            return serde_json::from_slice(&bytes).map_err(|e| ClientError::BadResponse(format!("token response: {e}")));
        }
        let v: Value =
            serde_json::from_slice(&bytes).map_err(|_| ClientError::BadResponse(format!("HTTP {status} without a JSON error")))?;
        match v["error"].as_str() {
            Some(error) => Err(ClientError::Auth {
                status,
                error: error.to_owned(),
                description: v["error_description"].as_str().unwrap_or("").to_owned(),
            }),
            None => Err(ClientError::BadResponse(format!("HTTP {status} without an error code"))),
        }
    }

    /// A call with a bearer token: GET when `body` is `None`.
    pub(crate) async fn bearer<B: Serialize + ?Sized>(&self, path: &str, token: &str, body: Option<&B>) -> ClientResult<SdkAnswer> {
        let req = match body {
            Some(b) => self.http.post(self.url(path)).json(b),
            None => self.http.get(self.url(path)),
        };
        let (status, _ct, bytes) = self.send(req.bearer_auth(token)).await?;
        let json = || serde_json::from_slice::<Value>(&bytes).map_err(|_| ClientError::BadResponse(format!("HTTP {status}: not JSON")));
        match status {
            200 | 202 => Ok(SdkAnswer::Ok(json()?)),
            401 => Ok(SdkAnswer::Unauthorized),
            403 => Err(ClientError::Forbidden(json()?["error_description"].as_str().unwrap_or("insufficient scope").to_owned())),
            s if s >= 500 => Err(ClientError::ServerError { status: s }),
            s => {
                let v = json()?;
                let msg = v["Error"].as_str().or(v["error_description"].as_str()).unwrap_or("").to_owned();
                Err(ClientError::BadResponse(format!("HTTP {s}: {msg}")))
            }
        }
    }
}

/// Connection failures: TLS problems are told apart from transport failures
/// (DNS, refused, reset, timeout, an answer cut off), which are
/// [`ClientError::Unreachable`]: no HTTP answer arrived whole.
fn classify(e: reqwest::Error) -> ClientError {
    let mut src: Option<&(dyn std::error::Error + 'static)> = e.source();
    while let Some(s) = src {
        if let Some(tls) = s.downcast_ref::<rustls::Error>() {
            return ClientError::Tls(tls.to_string());
        }
        let text = s.to_string();
        if text.contains("certificate") || text.contains("InvalidCertificate") {
            return ClientError::Tls(text);
        }
        src = s.source();
    }
    if e.is_builder() {
        return ClientError::Config(format!("building the request: {}", e.without_url()));
    }
    if e.is_decode() || e.is_body() {
        return ClientError::BadResponse(e.without_url().to_string());
    }
    // reqwest's message names the URL, never a token.
    ClientError::Unreachable(e.without_url().to_string())
}
