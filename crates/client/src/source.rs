//! A source of valid access tokens for one grant.
//!
//! `access_token` returns the token in memory while it is fresh. Otherwise it
//! takes the cache's cross-process lock, re-reads the cache (another process
//! may have refreshed, rotating the refresh token), and refreshes only if the
//! newest tokens still need it. Concurrent callers in one process wait for
//! that one refresh; other processes wait on the lock file. A refused refresh
//! reads the cache once more before reporting that a new login is needed.
//!
//! A refresh that fails in transport (refused, reset, timeout, answer cut
//! off) is sent once more with the same refresh token ([`retry_refresh`]):
//! the server may have rotated the token and lost the answer, and its retry
//! window answers a re-presented, just-rotated refresh token with a new
//! pair. An HTTP answer is final here; only a 503 (`temporarily_unavailable`)
//! is sent again, a few times after its `Retry-After`, by the transport
//! (`http`), the same refresh token each time.

use serde::Serialize;
use std::sync::Arc;

use strongroom_proto::SecretString;
use strongroom_proto::time::Clock;
use strongroom_proto::vedauth::{TokenRequest, TokenResponse};

use crate::cache::TokenCache;
use crate::error::{ClientError, ClientResult};
use crate::http::{SdkAnswer, Server};
use crate::tokens::{Decision, Tokens, decide};

/// Whether a refresh that failed with `error` on try number `attempt`
/// (1-based) is sent again: only after the first try, and only when no HTTP
/// answer arrived. Any status is the server's word and final (a 503 was
/// already sent again by the transport).
pub fn retry_refresh(error: &ClientError, attempt: u32) -> bool {
    attempt == 1 && error.is_transport()
}

#[derive(Debug)]
pub struct TokenSource {
    server: Server,
    client_id: String,
    cache: TokenCache,
    clock: Arc<dyn Clock>,
    memory: tokio::sync::Mutex<Option<Tokens>>,
}

impl TokenSource {
    pub fn new(server: Server, client_id: &str, cache: TokenCache, clock: Arc<dyn Clock>) -> TokenSource {
        TokenSource { server, client_id: client_id.to_owned(), cache, clock, memory: tokio::sync::Mutex::new(None) }
    }

    pub fn server(&self) -> &Server {
        &self.server
    }

    pub fn cache(&self) -> &TokenCache {
        &self.cache
    }

    /// Stores the tokens of a new login.
    pub async fn save_login(&self, tokens: Tokens) -> ClientResult<()> {
        let _lock = self.cache.lock().await?;
        self.cache.store(&tokens)?;
        *self.memory.lock().await = Some(tokens);
        Ok(())
    }

    /// The current tokens, without refreshing (for `status`).
    pub async fn current(&self) -> ClientResult<Option<Tokens>> {
        let mem = self.memory.lock().await.clone();
        let disk = self.cache.load()?;
        Ok(match (mem, disk) {
            (Some(m), Some(d)) => Some(if d.obtained_at >= m.obtained_at { d } else { m }),
            (m, d) => m.or(d),
        })
    }

    /// A valid access token, refreshed if needed.
    pub async fn access_token(&self) -> ClientResult<SecretString> {
        let mut memory = self.memory.lock().await;
        let now = self.clock.now();
        if let Some(t) = memory.as_ref().filter(|t| !t.needs_refresh(now)) {
            return Ok(t.access_token.clone());
        }
        let _lock = self.cache.lock().await?;
        let disk = self.cache.load()?;
        match decide(memory.as_ref(), disk.as_ref(), now) {
            Decision::Use(t) => {
                let token = t.access_token.clone();
                *memory = Some(t);
                Ok(token)
            }
            Decision::LoginRequired(why) => Err(ClientError::LoginRequired(why.into())),
            Decision::Refresh(t) => match self.refresh(&t).await {
                Ok(new) => {
                    self.cache.store(&new)?;
                    let token = new.access_token.clone();
                    *memory = Some(new);
                    Ok(token)
                }
                Err(ClientError::Auth { error, .. }) if error == "invalid_grant" => {
                    // Reload before failing: someone may have rotated it.
                    if let Some(d) = self.cache.load()?.filter(|d| d.refresh_token != t.refresh_token && !d.needs_refresh(now)) {
                        let token = d.access_token.clone();
                        *memory = Some(d);
                        return Ok(token);
                    }
                    *memory = None;
                    Err(ClientError::LoginRequired("the grant was revoked or has expired".into()))
                }
                Err(e) => Err(e),
            },
        }
    }

    /// One refresh, retried once with the same refresh token after a
    /// transport failure ([`retry_refresh`]). Runs under the cache lock.
    async fn refresh(&self, t: &Tokens) -> ClientResult<Tokens> {
        let rt = t.refresh_token.as_ref().ok_or_else(|| ClientError::LoginRequired("no refresh token".into()))?;
        let body = TokenRequest { client_id: Some(self.client_id.clone()), refresh_token: Some(rt.clone()), ..TokenRequest::default() };
        let mut attempt = 1;
        loop {
            match self.server.auth_post::<_, TokenResponse>("/vedauth/authorize/token", &body).await {
                Ok(r) => {
                    tracing::debug!(attempt, "access token refreshed");
                    return Ok(Tokens::from_response(r, self.clock.now()));
                }
                Err(e) if retry_refresh(&e, attempt) => {
                    tracing::debug!(error = %e, "refresh failed in transport; retrying once with the same refresh token");
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Forgets the in-memory token, so the next call refreshes (after a 401:
    /// the token may have been revoked or the clocks disagree).
    pub async fn expire_now(&self) {
        let mut m = self.memory.lock().await;
        let _lock = self.cache.lock().await;
        if let Some(t) = m.as_mut() {
            t.expires = t.obtained_at;
        }
        if let Ok(Some(mut d)) = self.cache.load() {
            d.expires = d.obtained_at;
            let _ = self.cache.store(&d);
        }
    }

    /// Calls `path` with a bearer token; on a 401, refreshes once and retries.
    pub(crate) async fn call<B: Serialize + ?Sized>(&self, path: &str, body: Option<&B>) -> ClientResult<serde_json::Value> {
        for attempt in 0..2 {
            let token = self.access_token().await?;
            match self.server.bearer(path, token.expose(), body).await? {
                SdkAnswer::Ok(v) => return Ok(v),
                SdkAnswer::Unauthorized if attempt == 0 => self.expire_now().await,
                SdkAnswer::Unauthorized => break,
            }
        }
        Err(ClientError::Unauthorized)
    }

    /// [`TokenSource::call`] for the administrative calls: any method and
    /// query; the status and body as they came. A 401 refreshes once and
    /// sends again; a second 401 is [`ClientError::Unauthorized`].
    pub(crate) async fn call_raw<B: Serialize + ?Sized>(
        &self,
        method: reqwest::Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&B>,
    ) -> ClientResult<(u16, Vec<u8>)> {
        for attempt in 0..2 {
            let token = self.access_token().await?;
            let (status, bytes) = self.server.bearer_call(method.clone(), path, query, token.expose(), body).await?;
            match status {
                401 if attempt == 0 => self.expire_now().await,
                401 => break,
                _ => return Ok((status, bytes)),
            }
        }
        Err(ClientError::Unauthorized)
    }

    /// Revokes the grant on the server (if it still knows the token) and
    /// deletes the cache. Returns whether the server revoked something.
    pub async fn logout(&self) -> ClientResult<bool> {
        let _lock = self.cache.lock().await?;
        let tokens = match self.cache.load() {
            Ok(t) => t,
            Err(ClientError::Cache { .. }) => None,
            Err(e) => return Err(e),
        };
        let mem = self.memory.lock().await.take();
        let token = tokens.or(mem).map(|t| t.access_token);
        let revoked = match token {
            Some(t) => match self.server.bearer::<()>("/vedauth/revoke/token", t.expose(), None).await? {
                SdkAnswer::Ok(v) => v["Success"].as_bool().unwrap_or(false),
                SdkAnswer::Unauthorized => false,
            },
            None => false,
        };
        self.cache.delete()?;
        Ok(revoked)
    }

    /// `GET /vedauth/authorize/verify` with the current token.
    pub async fn verify(&self) -> ClientResult<serde_json::Value> {
        self.call::<()>("/vedauth/authorize/verify", None).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use strongroom_proto::time::{ManualClock, UnixTime};
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio::net::{TcpListener, TcpStream};

    use crate::tls::Trust;

    #[test]
    fn only_a_first_transport_failure_is_retried() {
        let transport = ClientError::Unreachable("connection reset".into());
        assert!(retry_refresh(&transport, 1));
        assert!(!retry_refresh(&transport, 2), "exactly one retry");
        for answered in [
            ClientError::Auth { status: 400, error: "invalid_grant".into(), description: String::new() },
            ClientError::ServerError { status: 503 },
            ClientError::BadResponse("HTTP 200 with content type \"text/html\"".into()),
            ClientError::Tls("unknown issuer".into()),
            ClientError::Unauthorized,
        ] {
            assert!(!retry_refresh(&answered, 1), "{answered:?}");
        }
    }

    /// What the fake server does with one request.
    #[derive(Clone)]
    enum Reply {
        /// Reads the request, then closes the connection without a word.
        Drop,
        /// Answers 200 with a body announced longer than what is sent.
        CutBody,
        Answer(u16, String),
    }

    /// Reads one HTTP/1.1 request; returns its body.
    async fn read_request(s: &mut TcpStream) -> String {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                let len: usize =
                    head.lines().find_map(|l| l.strip_prefix("content-length:")).map(|v| v.trim().parse().unwrap()).unwrap_or(0);
                if buf.len() >= end + 4 + len {
                    return String::from_utf8_lossy(&buf[end + 4..end + 4 + len]).into_owned();
                }
            }
            let n = s.read(&mut chunk).await.unwrap();
            assert!(n > 0, "the client closed the connection mid-request");
            buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// A server on 127.0.0.1 that replies to the n-th request with
    /// `replies[n]` (a 500 past the end) and records every request body.
    async fn fake_server(replies: Vec<Reply>) -> (String, Arc<Mutex<Vec<String>>>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        tokio::spawn(async move {
            loop {
                let (mut s, _) = listener.accept().await.unwrap();
                let body = read_request(&mut s).await;
                let n = {
                    let mut seen = record.lock().unwrap();
                    seen.push(body);
                    seen.len() - 1
                };
                let (status, text) = match replies.get(n).cloned().unwrap_or(Reply::Answer(500, "{}".into())) {
                    Reply::Drop => continue,
                    Reply::CutBody => {
                        let _ =
                            s.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n{\"access").await;
                        continue;
                    }
                    Reply::Answer(status, text) => (status, text),
                };
                let resp = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nretry-after: 0\r\nconnection: close\r\n\r\n{text}",
                    text.len()
                );
                let _ = s.write_all(resp.as_bytes()).await;
                let _ = s.shutdown().await;
            }
        });
        (base, seen)
    }

    fn token_json(at: &str, rt: &str) -> String {
        serde_json::to_string(&TokenResponse {
            access_token: SecretString(at.into()),
            refresh_token: Some(SecretString(rt.into())),
            expires_in: 3600,
            expires: 0,
            token_type: "Bearer".into(),
            scope: "restricted".into(),
            refresh_until: 100_000,
            identity: "local:{x}".into(),
            state: None,
        })
        .unwrap()
    }

    /// A source whose cached tokens need a refresh (refresh token `RT1==`).
    fn source(base: &str, dir: &std::path::Path) -> TokenSource {
        let clock = ManualClock::new(UnixTime::from_secs(10_000));
        let cache = TokenCache::new(dir, base, "app");
        let old = Tokens {
            access_token: SecretString("AT1==".into()),
            refresh_token: Some(SecretString("RT1==".into())),
            expires: 4600,
            refresh_until: 100_000,
            scope: "restricted".into(),
            identity: "local:{x}".into(),
            obtained_at: 1000,
        };
        cache.store(&old).unwrap();
        TokenSource::new(Server::new(base, &Trust::WebPki).unwrap(), "app", cache, Arc::new(clock))
    }

    fn refresh_tokens_sent(seen: &Mutex<Vec<String>>) -> Vec<String> {
        seen.lock()
            .unwrap()
            .iter()
            .map(|b| {
                let r: TokenRequest = serde_json::from_str(b).unwrap();
                assert_eq!(r.client_id.as_deref(), Some("app"));
                r.refresh_token.unwrap().0
            })
            .collect()
    }

    #[tokio::test]
    async fn a_dropped_refresh_is_retried_once_with_the_same_token_and_cached() {
        for first in [Reply::Drop, Reply::CutBody] {
            let (base, seen) = fake_server(vec![first, Reply::Answer(200, token_json("AT2==", "RT2=="))]).await;
            let dir = tempfile::tempdir().unwrap();
            let src = source(&base, dir.path());
            let token = src.access_token().await.unwrap();
            assert_eq!(token.expose(), "AT2==");
            assert_eq!(refresh_tokens_sent(&seen), ["RT1==", "RT1=="], "one retry, same refresh token");
            let cached = src.cache().load().unwrap().unwrap();
            assert_eq!(cached.refresh_token, Some(SecretString("RT2==".into())));
            assert_eq!(cached.access_token.expose(), "AT2==");
            // The new tokens are used from memory: no further request.
            assert_eq!(src.access_token().await.unwrap().expose(), "AT2==");
            assert_eq!(seen.lock().unwrap().len(), 2);
        }
    }

    #[tokio::test]
    async fn a_second_transport_failure_is_not_retried() {
        let (base, seen) = fake_server(vec![Reply::Drop, Reply::Drop, Reply::Answer(200, token_json("AT2==", "RT2=="))]).await;
        let dir = tempfile::tempdir().unwrap();
        let src = source(&base, dir.path());
        let e = src.access_token().await.unwrap_err();
        assert!(e.is_transport(), "{e:?}");
        assert_eq!(seen.lock().unwrap().len(), 2, "exactly one retry");
        assert_eq!(src.cache().load().unwrap().unwrap().refresh_token, Some(SecretString("RT1==".into())), "cache untouched");
    }

    #[tokio::test]
    async fn http_answers_are_not_retried() {
        let error = r#"{"error":"invalid_request","error_description":"bad"}"#.to_owned();
        for (status, body) in [(400, error), (500, "{}".to_owned())] {
            let (base, seen) = fake_server(vec![Reply::Answer(status, body), Reply::Answer(200, token_json("AT2==", "RT2=="))]).await;
            let dir = tempfile::tempdir().unwrap();
            let src = source(&base, dir.path());
            let e = src.access_token().await.unwrap_err();
            match status {
                400 => assert!(matches!(&e, ClientError::Auth { status: 400, error, .. } if error == "invalid_request"), "{e:?}"),
                _ => assert!(matches!(e, ClientError::ServerError { status: 500 }), "{e:?}"),
            }
            assert_eq!(seen.lock().unwrap().len(), 1, "HTTP {status} is final");
        }
    }

    #[tokio::test]
    async fn a_503_is_sent_again_with_the_same_refresh_token_a_bounded_number_of_times() {
        let unavailable = || Reply::Answer(503, r#"{"error":"temporarily_unavailable","error_description":"busy"}"#.to_owned());
        let (base, seen) = fake_server(vec![unavailable(), unavailable(), Reply::Answer(200, token_json("AT2==", "RT2=="))]).await;
        let dir = tempfile::tempdir().unwrap();
        let src = source(&base, dir.path());
        assert_eq!(src.access_token().await.unwrap(), SecretString("AT2==".into()));
        assert_eq!(refresh_tokens_sent(&seen), ["RT1==", "RT1==", "RT1=="], "the same refresh token, three times");

        let (base, seen) =
            fake_server(vec![unavailable(), unavailable(), unavailable(), Reply::Answer(200, token_json("AT2==", "RT2=="))]).await;
        let dir = tempfile::tempdir().unwrap();
        let src = source(&base, dir.path());
        let e = src.access_token().await.unwrap_err();
        assert!(matches!(e, ClientError::ServerError { status: 503 }), "{e:?}");
        assert_eq!(seen.lock().unwrap().len(), 3, "two retries, then the 503 stands");
        assert_eq!(src.cache().load().unwrap().unwrap().refresh_token, Some(SecretString("RT1==".into())), "cache untouched");
    }
}
