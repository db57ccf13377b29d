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
    ///
    /// With `again`, a 503 (`temporarily_unavailable`: the server's database
    /// busy or out of reach for a moment) is sent again after its
    /// `Retry-After`, up to [`UNAVAILABLE_RETRIES`] times; the last answer
    /// stands.
    async fn send(&self, req: reqwest::RequestBuilder, again: bool) -> ClientResult<(u16, String, Vec<u8>)> {
        let mut req = req;
        let mut retries = 0;
        let resp = loop {
            let next = if again && retries < UNAVAILABLE_RETRIES { req.try_clone() } else { None };
            let resp = req.send().await.map_err(classify)?;
            match next {
                Some(next) if resp.status() == reqwest::StatusCode::SERVICE_UNAVAILABLE => {
                    let wait = retry_after(resp.headers());
                    tracing::debug!(wait_ms = wait.as_millis() as u64, "the server answered 503; sending again");
                    drop(resp);
                    tokio::time::sleep(wait).await;
                    retries += 1;
                    req = next;
                }
                _ => break resp,
            }
        };
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
        // The token endpoints make a repeat safe: a refresh token or device
        // code presented again is answered by the server's retry rules.
        let (status, ct, bytes) = self.send(self.http.post(self.url(path)).json(body), true).await?;
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
        // Reads only: a vault write whose 503 came after its commit must
        // not be made twice.
        let (status, _ct, bytes) = self.send(req.bearer_auth(token), body.is_none()).await?;
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

impl Server {
    /// An administrative call with a bearer token: any method, a query,
    /// a JSON body or none. Answers the status and the body as they came
    /// (the caller classifies them, see `admin`); only a failure to get an
    /// answer is an error here. A GET's 503 is sent again after its
    /// `Retry-After`, as for reads; a change is sent once.
    pub(crate) async fn bearer_call<B: Serialize + ?Sized>(
        &self,
        method: reqwest::Method,
        path: &str,
        query: &[(&str, String)],
        token: &str,
        body: Option<&B>,
    ) -> ClientResult<(u16, Vec<u8>)> {
        let again = method == reqwest::Method::GET;
        let mut req = self.http.request(method, self.url(path)).bearer_auth(token);
        if !query.is_empty() {
            req = req.query(query);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        let (status, _ct, bytes) = self.send(req, again).await?;
        Ok((status, bytes))
    }
}

/// Times a 503 is sent again (see [`Server::send`]).
const UNAVAILABLE_RETRIES: u32 = 2;

/// How long to wait before sending a 503's request again: its
/// `Retry-After` in seconds, 1 without one, at most 5.
fn retry_after(headers: &reqwest::header::HeaderMap) -> std::time::Duration {
    let secs = headers.get(reqwest::header::RETRY_AFTER).and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<u64>().ok());
    std::time::Duration::from_secs(secs.unwrap_or(1).min(5))
}

/// `e` as a `T`, looking inside `io::Error`s: tokio-rustls hands rustls's
/// error up inside one (or two), and an `io::Error`'s `source()` skips
/// what it wraps.
fn unwrapped<'a, T: std::error::Error + 'static>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a T> {
    let mut e = e;
    loop {
        if let Some(t) = e.downcast_ref::<T>() {
            return Some(t);
        }
        e = e.downcast_ref::<std::io::Error>()?.get_ref()?;
    }
}

/// Connection failures, classified by the types in the error's chain of
/// sources, never by its text: a `rustls::Error` is TLS (or, for a
/// message that is not TLS at all, an `https://` URL for a plain-HTTP
/// port), an `io::Error` says refused, reset or timed out, a `hyper::Error`
/// that could not parse the answer is an `http://` URL for a TLS port. What
/// is neither TLS nor the wrong protocol is [`ClientError::Unreachable`]:
/// no HTTP answer arrived whole. Messages name the server (scheme, host and
/// port), never a path, query or token.
fn classify(e: reqwest::Error) -> ClientError {
    let server = e.url().map(|u| format!("{}://{}", u.scheme(), u.authority())).unwrap_or_else(|| "the server".to_owned());
    let plain = e.url().is_some_and(|u| u.scheme() == "http");
    let mut src: Option<&(dyn std::error::Error + 'static)> = e.source();
    while let Some(s) = src {
        if let Some(tls) = unwrapped::<rustls::Error>(s) {
            return match tls {
                rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. } => ClientError::WrongProtocol(format!(
                    "{server} does not answer in TLS ({tls}): is it a plain-HTTP port? Then use http://"
                )),
                other => ClientError::Tls(format!("{server}: {other}")),
            };
        }
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind as K;
            let why = match io.kind() {
                K::ConnectionRefused => Some("connection refused: nothing listens there (is the server running, and is the port right?)"),
                K::TimedOut => Some("timed out"),
                K::ConnectionReset | K::ConnectionAborted => Some("the connection was reset"),
                K::UnexpectedEof => Some("the connection was closed before the answer was complete"),
                K::HostUnreachable | K::NetworkUnreachable => Some("no route to the host"),
                _ => None,
            };
            if let Some(why) = why {
                return ClientError::Unreachable(format!("{server}: {why}"));
            }
        }
        if let Some(h) = s.downcast_ref::<hyper::Error>() {
            if h.is_parse() || h.is_parse_status() {
                let hint = if plain { ": is it a TLS port? Then use https://" } else { "" };
                return ClientError::WrongProtocol(format!("{server} answered something that is not HTTP ({h}){hint}"));
            }
            if h.is_incomplete_message() {
                let hint = if plain { " (a TLS port closes plain-HTTP connections like this: then use https://)" } else { "" };
                return ClientError::Unreachable(format!("{server} closed the connection before answering{hint}"));
            }
        }
        src = s.source();
    }
    if e.is_timeout() {
        return ClientError::Unreachable(format!("{server}: timed out waiting for the answer"));
    }
    if e.is_builder() {
        return ClientError::Config(format!("building the request: {}", e.without_url()));
    }
    if e.is_decode() || e.is_body() {
        return ClientError::BadResponse(e.without_url().to_string());
    }
    // The innermost cause says most ("dns error: failed to lookup address").
    let mut cause = None;
    let mut src: Option<&(dyn std::error::Error + 'static)> = e.source();
    while let Some(s) = src {
        cause = Some(s.to_string());
        src = s.source();
    }
    ClientError::Unreachable(format!("{server}: {}", cause.unwrap_or_else(|| e.without_url().to_string())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read as _, Write as _};

    /// Sends one request to a socket that behaves as `serve` says.
    async fn failure(url: &str) -> ClientError {
        let server = Server::new(url, &Trust::WebPki).unwrap();
        let req = server.http.get(format!("{url}/vedauth/authorize/verify")).timeout(std::time::Duration::from_secs(2));
        server.send(req, false).await.err().unwrap()
    }

    /// A listener that does `f` with its first connection.
    fn listener(f: impl FnOnce(std::net::TcpStream) + Send + 'static) -> u16 {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        std::thread::spawn(move || {
            if let Ok((sock, _)) = l.accept() {
                f(sock);
            }
        });
        port
    }

    #[tokio::test]
    async fn transport_failures_name_their_cause() {
        // Refused: a port bound and never listened on, held while it is used.
        let closed = strongroom_testkit::process::ClosedPort::new();
        let port = closed.port;
        let e = failure(&format!("http://127.0.0.1:{port}")).await;
        assert!(matches!(&e, ClientError::Unreachable(m) if m.contains("connection refused") && m.contains(&port.to_string())), "{e}");
        assert!(e.is_transport());
        // Plain HTTP to a TLS port: a TLS server answers a request it cannot read with an alert.
        let port = listener(|mut s| {
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf);
            let _ = s.write_all(&[0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x32]);
        });
        let e = failure(&format!("http://127.0.0.1:{port}")).await;
        assert!(matches!(&e, ClientError::WrongProtocol(m) if m.contains("use https://")), "{e}");
        assert!(!e.is_transport(), "sending again cannot help");
        // TLS to a plain-HTTP port.
        let port = listener(|mut s| {
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf);
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n");
        });
        let e = failure(&format!("https://127.0.0.1:{port}")).await;
        assert!(matches!(&e, ClientError::WrongProtocol(m) if m.contains("use http://")), "{e}");
        // Timed out: a server that reads and never answers.
        let port = listener(|mut s| {
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf);
            std::thread::park_timeout(std::time::Duration::from_secs(5));
        });
        let e = failure(&format!("http://127.0.0.1:{port}")).await;
        assert!(matches!(&e, ClientError::Unreachable(m) if m.contains("timed out")), "{e}");
        // Closed before answering.
        let port = listener(|mut s| {
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf);
        });
        let e = failure(&format!("http://127.0.0.1:{port}")).await;
        assert!(matches!(&e, ClientError::Unreachable(m) if m.contains("closed the connection")), "{e}");
        assert!(e.to_string().starts_with("cannot reach the server: http://127.0.0.1:"), "{e}");
    }

    #[test]
    fn a_tls_failure_is_found_by_its_type_inside_io_errors() {
        let tls = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let wrapped = std::io::Error::other(std::io::Error::new(std::io::ErrorKind::InvalidData, tls));
        assert!(matches!(unwrapped::<rustls::Error>(&wrapped), Some(rustls::Error::InvalidCertificate(_))));
        // A message that merely mentions certificates is not a TLS failure.
        let words = std::io::Error::other("certificate of deposit");
        assert!(unwrapped::<rustls::Error>(&words).is_none());
    }

    #[test]
    fn retry_after_is_read_in_seconds_and_bounded() {
        let mut h = reqwest::header::HeaderMap::new();
        assert_eq!(retry_after(&h), std::time::Duration::from_secs(1));
        h.insert(reqwest::header::RETRY_AFTER, "0".parse().unwrap());
        assert_eq!(retry_after(&h), std::time::Duration::ZERO);
        h.insert(reqwest::header::RETRY_AFTER, "3600".parse().unwrap());
        assert_eq!(retry_after(&h), std::time::Duration::from_secs(5));
        h.insert(reqwest::header::RETRY_AFTER, "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap());
        assert_eq!(retry_after(&h), std::time::Duration::from_secs(1));
    }
}
