//! Bearer tokens on `/vedsdk` and on `Verify`/`Revoke`.

use strongroom_core::grant::{AccessContext, AccessRefused};
use strongroom_core::token::{TokenKind, looks_like_token};
use strongroom_store::StoreError;

use crate::state::AppState;

#[derive(Debug, thiserror::Error)]
pub enum BearerError {
    #[error("no bearer token")]
    Missing,
    #[error("unknown bearer token")]
    Unknown,
    #[error("{0}")]
    Refused(AccessRefused),
    /// The scope the endpoint needs, as `category[:privilege]`.
    #[error("insufficient scope")]
    InsufficientScope(&'static str),
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<StoreError> for BearerError {
    fn from(e: StoreError) -> Self {
        BearerError::Internal(e.to_string())
    }
}

/// Finds the grant behind a presented token, if the token exists at all
/// (expired or not).
pub async fn lookup(app: &AppState, token: Option<&str>) -> Result<AccessContext, BearerError> {
    let token = token.ok_or(BearerError::Missing)?;
    if !looks_like_token(token) {
        return Err(BearerError::Unknown);
    }
    let hash = app.keys.token.hash(TokenKind::Access, token);
    app.store.access_context(hash).await?.ok_or(BearerError::Unknown)
}

/// The grant behind a token that may be used now.
pub async fn authenticate(app: &AppState, token: Option<&str>) -> Result<AccessContext, BearerError> {
    let ctx = lookup(app, token).await?;
    ctx.check(app.now()).map_err(BearerError::Refused)?;
    Ok(ctx)
}

/// Requires `category` (and `privilege`, if any) in the token's scope.
pub fn require(ctx: &AccessContext, needed: &'static str) -> Result<(), BearerError> {
    let (cat, privilege) = match needed.split_once(':') {
        Some((c, p)) => (c, Some(p)),
        None => (needed, None),
    };
    if ctx.grant.scope.allows(cat, privilege) { Ok(()) } else { Err(BearerError::InsufficientScope(needed)) }
}
