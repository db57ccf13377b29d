//! A source of valid access tokens for one grant.
//!
//! `access_token` returns the token in memory while it is fresh. Otherwise it
//! takes the cache's cross-process lock, re-reads the cache (another process
//! may have refreshed, rotating the refresh token), and refreshes only if the
//! newest tokens still need it. Concurrent callers in one process wait for
//! that one refresh; other processes wait on the lock file. A refused refresh
//! reads the cache once more before reporting that a new login is needed.

use serde::Serialize;
use std::sync::Arc;

use strongroom_proto::SecretString;
use strongroom_proto::time::Clock;
use strongroom_proto::vedauth::{TokenRequest, TokenResponse};

use crate::cache::TokenCache;
use crate::error::{ClientError, ClientResult};
use crate::http::{SdkAnswer, Server};
use crate::tokens::{Decision, Tokens, decide};

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

    async fn refresh(&self, t: &Tokens) -> ClientResult<Tokens> {
        let rt = t.refresh_token.as_ref().ok_or_else(|| ClientError::LoginRequired("no refresh token".into()))?;
        let body = TokenRequest { client_id: Some(self.client_id.clone()), refresh_token: Some(rt.clone()), ..TokenRequest::default() };
        let r: TokenResponse = self.server.auth_post("/vedauth/authorize/token", &body).await?;
        tracing::debug!("access token refreshed");
        Ok(Tokens::from_response(r, self.clock.now()))
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
