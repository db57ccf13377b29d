//! Bearer tokens on `/vedsdk` and on `Verify`/`Revoke`.

use strongroom_core::grant::{AccessContext, AccessRefused};
use strongroom_core::token::{Presented, TokenKind, looks_like_token};
use strongroom_store::StoreError;

use crate::App;

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
    /// The store failed: the token could not be checked.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Finds the grant behind a presented token, if the token exists at all
/// (expired or not).
pub async fn lookup(app: &App, token: Option<&str>) -> Result<AccessContext, BearerError> {
    app.store.access_context(presented(app, token)?).await?.ok_or(BearerError::Unknown)
}

/// The grant behind a token that may be used now.
pub async fn authenticate(app: &App, token: Option<&str>) -> Result<AccessContext, BearerError> {
    let ctx = lookup(app, token).await?;
    admit(app, &ctx).await?;
    Ok(ctx)
}

/// Whether the token of `ctx` may be used now; records the first use of a
/// grant's newest pair (a used pair can no longer be replaced by a retry of
/// the refresh that produced it). That write happens once per pair.
pub async fn admit(app: &App, ctx: &AccessContext) -> Result<(), BearerError> {
    ctx.check(app.now()).map_err(BearerError::Refused)?;
    if ctx.first_use_of_pair() {
        app.store.mark_pair_used(ctx.grant.id.clone(), ctx.token_hash).await?;
    }
    Ok(())
}

/// A presented bearer token as the store looks it up (its hash and
/// locator), if it could be one: a token without a locator this server
/// tagged is unknown without a read.
pub fn presented(app: &App, token: Option<&str>) -> Result<Presented, BearerError> {
    let token = token.ok_or(BearerError::Missing)?;
    if !looks_like_token(token) {
        return Err(BearerError::Unknown);
    }
    app.keys.token.presented(TokenKind::Access, token).ok_or(BearerError::Unknown)
}

/// Requires `category` (and `privilege`, if any) in the token's scope.
pub fn require(ctx: &AccessContext, needed: &'static str) -> Result<(), BearerError> {
    let (cat, privilege) = match needed.split_once(':') {
        Some((c, p)) => (c, Some(p)),
        None => (needed, None),
    };
    if ctx.grant.scope.allows(cat, privilege) { Ok(()) } else { Err(BearerError::InsufficientScope(needed)) }
}
