//! RFC 7009 token revocation (`POST Revoke/Token`): the holder of an access
//! or refresh token ends the grant behind it, as the product's
//! `GET Revoke/Token` does with a bearer token.

use strongroom_core::event::EventKind;
use strongroom_core::grant::Grant;
use strongroom_core::token::TokenKind;
use strongroom_proto::vedauth::RevocationRequest;

use super::{AuthError, Origin};
use crate::App;

/// What a revocation did; the client gets 200 either way (RFC 7009 §2.2:
/// an unknown or already invalid token is not an error).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Revocation {
    /// The token's grant was live and is revoked now.
    Revoked,
    /// No such token, or its grant had ended already: nothing changed.
    Nothing,
}

/// Revokes the grant of `req.token` for the public client `client_id` (from
/// the body, or the user name of a Basic `Authorization` header as
/// RFC 6749 §2.3.1 clients send it). `token_type_hint` says where to look
/// first; the other kind is looked at too (RFC 7009 §2.1). A token of another
/// client is refused with `unauthorized_client`, changing nothing.
pub async fn revoke(app: &App, req: RevocationRequest, basic_client: Option<String>, origin: &Origin) -> Result<Revocation, AuthError> {
    let token = req.token.as_ref().map(|t| t.0.as_str()).filter(|t| !t.is_empty()).ok_or(AuthError::InvalidRequest("token is required"))?;
    let client_id = req
        .client_id
        .filter(|c| !c.is_empty())
        .or(basic_client)
        .ok_or(AuthError::InvalidRequest("client_id is required: a public client names itself with client_id"))?;
    let kinds = match req.token_type_hint.as_deref() {
        Some("refresh_token") => [TokenKind::Refresh, TokenKind::Access],
        // `access_token`, none, or a hint this server does not know (ignored, RFC 7009 §2.1).
        _ => [TokenKind::Access, TokenKind::Refresh],
    };
    let mut grant: Option<Grant> = None;
    for kind in kinds {
        // Without a locator of this kind it is no token of this kind (nothing to read).
        let Some(presented) = app.keys.token.presented(kind, token) else { continue };
        let found = match kind {
            TokenKind::Refresh => app.store.refresh_context(presented).await.map(|c| c.map(|c| c.grant)),
            _ => app.store.access_context(presented).await.map(|c| c.map(|c| c.grant)),
        }?;
        if found.is_some() {
            grant = found;
            break;
        }
    }
    let Some(g) = grant else { return Ok(Revocation::Nothing) };
    if g.client_id != client_id {
        return Err(AuthError::UnauthorizedClient("the token was not issued to this client"));
    }
    if g.revoked_at.is_some() {
        return Ok(Revocation::Nothing);
    }
    let event = app
        .event(EventKind::GrantRevoked, origin)
        .identity(g.user_id.identity())
        .client_id(g.client_id.as_str())
        .object(g.id.as_str())
        .detail("revoked by the client (RFC 7009)");
    if app.store.revoke_grant(g.id.clone(), app.now(), event).await? {
        app.observer.grant_revoked();
        Ok(Revocation::Revoked)
    } else {
        Ok(Revocation::Nothing)
    }
}
