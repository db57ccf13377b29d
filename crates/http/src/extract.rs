//! Extractors, one per surface, each reading, authenticating and refusing
//! in its surface's own shape before a handler runs:
//! - `/vedsdk`: [`Caller`] (the bearer checked and the scope `S` required),
//!   [`Sdk`] (that, then the body read within the limit as an [`SdkBody`]),
//!   [`Vault`] (the vault's one context read: the caller and the entry the
//!   body's `VaultID` names together). The bearer is judged before the body,
//!   so a bad token is 401 whatever the body. The scope is a type
//!   ([`scope`]), so a handler's signature says what it needs.
//! - `/vedauth`: [`FormOrJson`] (JSON or form bodies, refused as
//!   `{error, error_description}`).
//! - every surface: [`Origin`] (the caller's address and the request id).
//!
//! The console's session is read by `console::Session`.

use axum::body::Bytes;
use axum::extract::{ConnectInfo, FromRequest, FromRequestParts, Request};
use axum::http::{HeaderMap, StatusCode, header, request::Parts};
use serde::de::DeserializeOwned;
use std::marker::PhantomData;
use std::net::SocketAddr;

use super::client_addr::client_addr;
use crate::respond::{AuthRefusal, SdkFailure};
use crate::state::HttpState;
use strongroom_app::service::bearer::{self, BearerError};
use strongroom_app::service::groups::GroupError;
use strongroom_app::service::{AuthError, Origin};
use strongroom_app::service::{credentials, vault};
use strongroom_core::grant::AccessContext;
use strongroom_core::vault::VaultId;
use strongroom_proto::read::{self, SdkBody};
use strongroom_store::Found;

/// The request's id as text (set by `tower_http`'s `SetRequestIdLayer`).
pub(crate) fn request_id_of(ext: &axum::http::Extensions) -> String {
    ext.get::<tower_http::request_id::RequestId>().and_then(|r| r.header_value().to_str().ok()).unwrap_or_default().to_owned()
}

/// A `/vedauth` body: JSON or `application/x-www-form-urlencoded`
/// ([`read::form_or_json`]). Any failure is an [`AuthError`], so clients
/// always get `{error, error_description}`.
#[derive(Debug)]
pub(crate) struct FormOrJson<T>(pub(crate) T);

/// The `Content-Type` of a request, if it is text.
pub(crate) fn content_type(headers: &HeaderMap) -> Option<&str> {
    headers.get(header::CONTENT_TYPE)?.to_str().ok()
}

/// Reads the whole body within the configured limit.
pub(crate) async fn read_body<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, AuthError> {
    Bytes::from_request(req, state).await.map_err(|e| {
        if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
            AuthError::BodyTooLarge
        } else {
            AuthError::InvalidRequest("The request body could not be read.")
        }
    })
}

impl<S, T> FromRequest<S> for FormOrJson<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = AuthRefusal;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let kind = read::body_kind(content_type(req.headers()));
        let bytes = read_body(req, state).await?;
        Ok(FormOrJson(read::form_or_json(kind, &bytes).map_err(AuthError::InvalidRequest)?))
    }
}

impl FromRequestParts<HttpState> for Origin {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, app: &HttpState) -> Result<Self, Self::Rejection> {
        let forwarded = parts.headers.get("x-forwarded-for").and_then(|v| v.to_str().ok());
        let addr = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(a)| client_addr(a.ip(), forwarded, &app.trusted_proxies).to_string())
            .unwrap_or_else(|| "unknown".to_owned());
        let request_id = request_id_of(&parts.extensions);
        Ok(Origin { addr, request_id })
    }
}

/// The client id of a `Basic` `Authorization` header ([`read::basic_client_id`]).
pub(crate) fn basic_client_id(headers: &HeaderMap) -> Option<String> {
    read::basic_client_id(headers.get(header::AUTHORIZATION)?.to_str().ok()?)
}

/// The bearer token of a request: `Authorization: Bearer <t>`, or the legacy
/// `X-Venafi-API-Key: Bearer <t>` that pyvenafi falls back to
/// ([`read::bearer`]). Never a query parameter (RFC 6750 §5.3).
pub(crate) fn bearer_token(headers: &HeaderMap) -> Option<String> {
    [header::AUTHORIZATION.as_str(), "x-venafi-api-key"]
        .iter()
        .find_map(|name| read::bearer(headers.get(*name)?.to_str().ok()?).map(str::to_owned))
}

// ------------------------------------------------------------------ /vedsdk

/// The scopes `/vedsdk` calls require, one type each.
pub(crate) mod scope {
    /// A scope a call requires (`None`: any valid token will do).
    pub(crate) trait Scope: Send + Sync + 'static {
        const NEEDS: Option<&'static str>;
    }

    macro_rules! scopes {
        ($($name:ident = $needs:literal;)*) => {
            $(
                #[doc = concat!("Scope `", $needs, "`.")]
                pub(crate) struct $name;
                impl Scope for $name {
                    const NEEDS: Option<&'static str> = Some($needs);
                }
            )*
        };
    }

    /// No scope: any valid token will do.
    pub(crate) struct Any;
    impl Scope for Any {
        const NEEDS: Option<&'static str> = None;
    }

    scopes! {
        Admin = "admin";
        AdminDelete = "admin:delete";
        AdminViewLogs = "admin:viewlogs";
        Configuration = "configuration";
        ConfigurationManage = "configuration:manage";
        ConfigurationDelete = "configuration:delete";
        Restricted = "restricted";
        RestrictedManage = "restricted:manage";
        RestrictedDelete = "restricted:delete";
        Security = "security";
        SecurityManage = "security:manage";
        SecurityDelete = "security:delete";
        Certificate = "certificate";
        CertificateManage = "certificate:manage";
        CertificateRevoke = "certificate:revoke";
        CertificateDelete = "certificate:delete";
    }
}

use scope::Scope;

/// How a family of `/vedsdk` calls answers a body it cannot read (400).
pub(crate) trait BodyShape: Send + Sync + 'static {
    fn unreadable(message: String) -> SdkFailure;
}

/// `{"Error": ...}`: the vault, the tree, OAuth integrations, the log.
pub(crate) struct Plain;

impl BodyShape for Plain {
    fn unreadable(message: String) -> SdkFailure {
        SdkFailure::BadJson(message)
    }
}

/// `{"Message": ...}`: the product's Identity and Teams calls.
pub(crate) struct Identity;

impl BodyShape for Identity {
    fn unreadable(message: String) -> SdkFailure {
        GroupError::Invalid(message).into()
    }
}

/// A `/vedsdk` caller: the bearer token checked and scope `S` required; no
/// body read.
pub(crate) struct Caller<S>(pub(crate) AccessContext, pub(crate) PhantomData<S>);

impl<S: Scope> FromRequestParts<HttpState> for Caller<S> {
    type Rejection = SdkFailure;

    async fn from_request_parts(parts: &mut Parts, app: &HttpState) -> Result<Self, Self::Rejection> {
        let ctx = bearer::authenticate(app, bearer_token(&parts.headers).as_deref()).await?;
        if let Some(needed) = S::NEEDS {
            bearer::require(&ctx, needed)?;
        }
        Ok(Caller(ctx, PhantomData))
    }
}

/// A `/vedsdk` call with a body: [`Caller`], then the body as an
/// [`SdkBody`]; one that cannot be read is refused in the shape `F`.
pub(crate) struct Sdk<S, F = Plain> {
    pub(crate) ctx: AccessContext,
    pub(crate) body: SdkBody,
    shape: PhantomData<(S, F)>,
}

impl<S: Scope, F: BodyShape> FromRequest<HttpState> for Sdk<S, F> {
    type Rejection = SdkFailure;

    async fn from_request(req: Request, app: &HttpState) -> Result<Self, Self::Rejection> {
        let (mut parts, body) = req.into_parts();
        let Caller(ctx, _) = Caller::<S>::from_request_parts(&mut parts, app).await?;
        let body = sdk_body::<F>(Request::from_parts(parts, body)).await?;
        Ok(Sdk { ctx, body, shape: PhantomData })
    }
}

/// The body of a `/vedsdk` call, within the configured limit (413 past it).
pub(crate) async fn sdk_body<F: BodyShape>(req: Request) -> Result<SdkBody, SdkFailure> {
    match Bytes::from_request(req, &()).await {
        Ok(bytes) => SdkBody::parse(&bytes).map_err(F::unreadable),
        Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => Err(SdkFailure::TooLarge),
        Err(_) => Err(F::unreadable("The request body could not be read.".into())),
    }
}

/// A vault call: the token, the caller and the entry the body's `VaultID`
/// names loaded in one context read ([`vault_call`]), scope `S` required,
/// and the body.
pub(crate) struct Vault<S> {
    pub(crate) caller: vault::Caller,
    pub(crate) body: SdkBody,
    scope: PhantomData<S>,
}

impl<S: Scope> FromRequest<HttpState> for Vault<S> {
    type Rejection = SdkFailure;

    async fn from_request(req: Request, app: &HttpState) -> Result<Self, Self::Rejection> {
        let (mut parts, body) = req.into_parts();
        let Ok(origin) = Origin::from_request_parts(&mut parts, app).await;
        let (caller, body) = vault_call(app, origin, Request::from_parts(parts, body), S::NEEDS, None).await?;
        Ok(Vault { caller, body, scope: PhantomData })
    }
}

/// A vault caller for the calls that read no body (`GET Log`): the token and
/// the caller in one context read, scope `S` required.
pub(crate) struct VaultCaller<S>(pub(crate) vault::Caller, pub(crate) PhantomData<S>);

impl<S: Scope> FromRequestParts<HttpState> for VaultCaller<S> {
    type Rejection = SdkFailure;

    async fn from_request_parts(parts: &mut Parts, app: &HttpState) -> Result<Self, Self::Rejection> {
        let Ok(origin) = Origin::from_request_parts(parts, app).await;
        let token = bearer::presented(app, bearer_token(&parts.headers).as_deref())?;
        let ctx = app.store.vault_context(token, None).await.map_err(BearerError::from)?.ok_or(BearerError::Unknown)?;
        bearer::admit(app, &ctx.access).await?;
        if let Some(needed) = S::NEEDS {
            bearer::require(&ctx.access, needed)?;
        }
        Ok(VaultCaller(vault::Caller::new(ctx, origin), PhantomData))
    }
}

/// The vault's one context read: the token's shape checked, then the caller
/// and the entry (`path_id`, else the body's `VaultID`) loaded together,
/// the grant admitted, the scope required; the body is judged last, so a
/// bad token is 401 whatever the body.
pub(crate) async fn vault_call(
    app: &HttpState,
    origin: Origin,
    req: Request,
    needed: Option<&'static str>,
    path_id: Option<VaultId>,
) -> Result<(vault::Caller, SdkBody), SdkFailure> {
    let token = bearer::presented(app, bearer_token(req.headers()).as_deref())?;
    let body = sdk_body::<Plain>(req).await;
    let id = path_id.or_else(|| body.as_ref().ok().and_then(|b| b.int64(&["VaultID"]).ok().flatten()).map(VaultId));
    let ctx = app.store.vault_context(token, id).await.map_err(BearerError::from)?.ok_or(BearerError::Unknown)?;
    bearer::admit(app, &ctx.access).await?;
    if let Some(needed) = needed {
        bearer::require(&ctx.access, needed)?;
    }
    Ok((vault::Caller::new(ctx, origin), body?))
}

/// `SecretStore/LookupByAssociation`: the body's association read first,
/// then the caller and the entries that have it in one context read
/// ([`strongroom_store::VaultStore::vault_lookup`]), scope `S` required.
/// A bad token is 401 whatever the body; a body without a valid `Name` or
/// value is then refused as the vault's other calls refuse it.
pub(crate) struct VaultLookup<S> {
    pub(crate) caller: vault::Caller,
    /// The entries with the association, each with its owners.
    pub(crate) found: Found,
    scope: PhantomData<S>,
}

impl<S: Scope> FromRequest<HttpState> for VaultLookup<S> {
    type Rejection = SdkFailure;

    async fn from_request(req: Request, app: &HttpState) -> Result<Self, Self::Rejection> {
        let (mut parts, body) = req.into_parts();
        let Ok(origin) = Origin::from_request_parts(&mut parts, app).await;
        let token = bearer::presented(app, bearer_token(&parts.headers).as_deref())?;
        let body = sdk_body::<Plain>(Request::from_parts(parts, body)).await;
        let asked = body.and_then(|b| crate::secretstore::association(&b));
        let (ctx, found) = match &asked {
            Ok((name, value)) => {
                let lookup = value.as_ref().map(|v| vault::association_lookup(app, name, v));
                app.store.vault_lookup(token, name.clone(), lookup).await.map_err(BearerError::from)?.ok_or(BearerError::Unknown)?
            }
            Err(_) => (app.store.vault_context(token, None).await.map_err(BearerError::from)?.ok_or(BearerError::Unknown)?, Vec::new()),
        };
        bearer::admit(app, &ctx.access).await?;
        if let Some(needed) = S::NEEDS {
            bearer::require(&ctx.access, needed)?;
        }
        asked?;
        Ok(VaultLookup { caller: vault::Caller::new(ctx, origin), found, scope: PhantomData })
    }
}

/// A certificate call (`Certificates/*`): the token, the caller
/// and their rights in one context read ([`vault_call`]), scope `S`
/// required, then the body.
pub(crate) struct CertCall<S> {
    pub(crate) caller: vault::Caller,
    pub(crate) body: SdkBody,
    scope: PhantomData<S>,
}

impl<S: Scope> FromRequest<HttpState> for CertCall<S> {
    type Rejection = SdkFailure;

    async fn from_request(req: Request, app: &HttpState) -> Result<Self, Self::Rejection> {
        let (mut parts, body) = req.into_parts();
        let Ok(origin) = Origin::from_request_parts(&mut parts, app).await;
        let (caller, body) = vault_call(app, origin, Request::from_parts(parts, body), S::NEEDS, None).await?;
        Ok(CertCall { caller, body, scope: PhantomData })
    }
}

/// A credential call (`Credentials/*`): the token judged and scope `S`
/// required first (one context read), then the body, then the entry of the
/// credential its `CredentialPath` names (if any), read with the caller's
/// rights again in one context read, so the rights are those of now.
pub(crate) struct Credential<S> {
    pub(crate) access: AccessContext,
    pub(crate) caller: vault::Caller,
    pub(crate) origin: Origin,
    pub(crate) body: SdkBody,
    scope: PhantomData<S>,
}

impl<S: Scope> FromRequest<HttpState> for Credential<S> {
    type Rejection = SdkFailure;

    async fn from_request(req: Request, app: &HttpState) -> Result<Self, Self::Rejection> {
        let (mut parts, body) = req.into_parts();
        let Ok(origin) = Origin::from_request_parts(&mut parts, app).await;
        let header = bearer_token(&parts.headers);
        let token = bearer::presented(app, header.as_deref())?;
        let body = sdk_body::<Plain>(Request::from_parts(parts, body)).await;
        let mut ctx = app.store.vault_context(token, None).await.map_err(BearerError::from)?.ok_or(BearerError::Unknown)?;
        bearer::admit(app, &ctx.access).await?;
        if let Some(needed) = S::NEEDS {
            bearer::require(&ctx.access, needed)?;
        }
        let body = body?;
        if let Ok(Some(dn)) = body.string(&["CredentialPath"])
            && let Some(id) = credentials::entry_id(app, &dn).await.map_err(BearerError::from)?
        {
            let again = bearer::presented(app, header.as_deref())?;
            ctx = app.store.vault_context(again, Some(id)).await.map_err(BearerError::from)?.ok_or(BearerError::Unknown)?;
        }
        let access = ctx.access.clone();
        Ok(Credential { access, caller: vault::Caller::new(ctx, origin.clone()), origin, body, scope: PhantomData })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn the_authorization_header_comes_first() {
        let mut h = HeaderMap::new();
        assert_eq!(bearer_token(&h), None);
        h.insert("x-venafi-api-key", HeaderValue::from_static("Bearer xyz"));
        assert_eq!(bearer_token(&h).as_deref(), Some("xyz"));
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("bearer abc=="));
        assert_eq!(bearer_token(&h).as_deref(), Some("abc=="));
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic YXBwOnNlY3JldA=="));
        assert_eq!(bearer_token(&h).as_deref(), Some("xyz"), "a Basic header is no bearer");
        assert_eq!(basic_client_id(&h).as_deref(), Some("app"));
    }
}
