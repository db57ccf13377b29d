//! Grants for machines without a stored secret: `Authorize/Jwt` (a JWT from
//! a trusted issuer) and `Authorize/Certificate` (a TLS client certificate).
//!
//! Both end in a grant like any other, with an access token and **no
//! refresh token**: a workload presents a fresh JWT (or its certificate
//! again) when its access token nears its end, so nothing long-lived is
//! handed out. The grant lives as long as its access token (the
//! integration's access-token validity), so Verify, revocation and the
//! vault work unchanged. The identity is the mapping's:
//! `jwt+<mapping>:<subject>` or `cert+<mapping>:<name>`, a user row that can
//! never sign in with a password, made at its first grant (or by an
//! administrator naming it, to grant it rights first).
//!
//! The JWT grant: one read of the issuer (by `iss`) and its mappings, the
//! keys from [`strongroom_idp::jwks::KeyCache`], the pure checks of
//! [`strongroom_core::machine`], then one write
//! ([`strongroom_store::AuthStore::insert_machine_grant`]) whose first
//! statement records the JWT (its `jti`, or its signature's digest) until it
//! expires: a second presentation, on any replica, finds the record and is
//! refused (`token.jwt_replayed`).

use std::sync::Arc;

use strongroom_core::event::EventKind;
use strongroom_core::grant::Grant;
use strongroom_core::identity::UserId;
use strongroom_core::integration::Integration;
use strongroom_core::machine::{Jwt, JwtError, Mapping};
use strongroom_core::scope::Scope;
use strongroom_proto::vedauth::{CertificateRequest, JwtRequest};
use strongroom_store::{MachineGrant, MachineIssue, Replay};

use super::token::{Issued, first_pair};
use super::{AuthError, CLIENT_ID_REQUIRED, Origin, UNKNOWN_CLIENT};
use crate::App;
use crate::GrantType;
use strongroom_idp::jwks::KeyCache;

/// What the machine grants need beyond the shared state.
#[derive(Debug, Clone)]
pub struct MachineState {
    pub keys: Arc<KeyCache>,
    /// `[certificate] crl_files`, read at start.
    pub crls: Arc<Vec<rustls::pki_types::CertificateRevocationListDer<'static>>>,
    /// `[certificate] proxy_header`: where a trusted proxy puts the client certificate.
    pub proxy_header: Option<String>,
}

pub const KEYS_UNAVAILABLE: &str = "The issuer's keys could not be fetched; try again later.";
pub const JWT_REPLAYED: &str = "The JWT was presented before: each JWT (its jti) is accepted once.";
pub const NO_MAPPING: &str = "No mapping matches the presented identity's claims.";
pub const MAPPING_CLIENT: &str = "The mapping does not allow this API integration.";
pub const IDENTITY_DISABLED: &str = "The machine identity is disabled.";
pub const IDENTITY_TAKEN: &str = "The machine identity's name is taken by another identity.";
pub const NO_CERTIFICATE: &str =
    "No client certificate was presented: connect to the certificate listener ([certificate] listen) with a client certificate.";
/// Decided on the mappings as read in the request: a mapping set a moment
/// ago, on any replica, counts.
pub const CERT_REFUSED: &str = "No certificate mapping accepts this client certificate: its issuer is not the CA of any certificate mapping, \
    or it has expired, was revoked, or is not for client authentication.";

fn required(v: Option<String>) -> Option<String> {
    v.filter(|s| !s.is_empty())
}

/// The client id, integration and scope every grant starts with.
async fn start(app: &App, client_id: Option<String>, scope: Option<String>) -> Result<(String, Integration, Scope), AuthError> {
    let client_id = required(client_id).ok_or(AuthError::InvalidRequest(CLIENT_ID_REQUIRED))?;
    let integration = app.store.integration(client_id.clone()).await;
    started(client_id, integration, scope)
}

/// [`start`]'s checks, in its order, on an integration read meanwhile.
fn started(
    client_id: String,
    integration: Result<Option<Integration>, strongroom_store::StoreError>,
    scope: Option<String>,
) -> Result<(String, Integration, Scope), AuthError> {
    let integration = integration?.ok_or(AuthError::InvalidGrant(UNKNOWN_CLIENT))?;
    let scope = super::requested_scope(scope)?;
    Ok((client_id, integration, scope))
}

/// Counts the outcome of a machine grant of `kind`.
fn counted(app: &App, kind: GrantType, r: Result<Issued, AuthError>) -> Result<Issued, AuthError> {
    match &r {
        Ok(_) => {
            app.observer.token_issued();
            app.observer.grant_issued(kind);
        }
        Err(AuthError::Store(_) | AuthError::Internal(_)) => {}
        Err(_) => app.observer.grant_refused(kind),
    }
    r
}

/// `POST Authorize/Jwt`.
pub async fn jwt_grant(app: &App, req: JwtRequest, origin: &Origin) -> Result<Issued, AuthError> {
    let r = jwt_grant_inner(app, req, origin).await;
    if let Err(e) = &r {
        tracing::info!(error = %e.code(), description = %e.description(), "JWT grant refused");
    }
    counted(app, GrantType::Jwt, r)
}

async fn jwt_grant_inner(app: &App, req: JwtRequest, origin: &Origin) -> Result<Issued, AuthError> {
    let client_id = required(req.client_id).ok_or(AuthError::InvalidRequest(CLIENT_ID_REQUIRED))?;
    let bad = |e: JwtError| AuthError::InvalidGrant(e.description());
    // Size first, then the header's algorithm: `none` and HMAC never get further.
    let jwt = match req.jwt.filter(|j| !j.expose().is_empty()) {
        Some(text) => Jwt::parse(text.expose()).map_err(bad),
        None => Err(AuthError::InvalidRequest("jwt is required.")),
    };
    let iss = jwt.as_ref().ok().and_then(Jwt::issuer).map(str::to_owned);
    // The integration and the JWT's issuer are read at once; the refusals
    // come in the order of the checks (the client first, then the JWT).
    let (integration, context) = tokio::join!(app.store.integration(client_id.clone()), async {
        match iss {
            Some(iss) => app.store.jwt_context(iss).await,
            None => Ok(None),
        }
    });
    let (client_id, integration, scope) = started(client_id, integration, req.scope)?;
    let jwt = jwt?;
    // No `iss` read nothing: unknown, as an issuer nobody trusts.
    let (issuer, mappings) = context?.ok_or(bad(JwtError::UnknownIssuer))?;
    if !issuer.algorithms.contains(&jwt.alg) {
        return Err(bad(JwtError::AlgorithmNotAllowed));
    }
    let now = app.now();
    let keys = app
        .machine
        .keys
        .keys(&issuer, jwt.kid.as_deref(), now, |ok| app.observer.key_fetch(ok))
        .await
        .map_err(|_| AuthError::InvalidGrant(KEYS_UNAVAILABLE))?;
    jwt.verify(&keys).map_err(bad)?;
    let checked = jwt.check_claims(&issuer, now).map_err(bad)?;
    // The mappings whose conditions the claims meet; the first (by name) that allows this client.
    let matched: Vec<(&Mapping, UserId)> = mappings.iter().filter_map(|m| m.match_claims(&jwt.claims).map(|id| (m, id))).collect();
    let (mapping, identity) = match matched.iter().find(|(m, _)| m.client_ids.contains(&client_id)) {
        Some(found) => found.clone(),
        None if matched.is_empty() => return Err(AuthError::InvalidGrant(NO_MAPPING)),
        None => return Err(AuthError::UnauthorizedClient(MAPPING_CLIENT)),
    };
    let replay = Replay { issuer: issuer.name.clone(), key: checked.replay_key, expires: checked.expires };
    let detail = format!("jwt grant: issuer={} mapping={}", issuer.name, mapping.name);
    issue(app, &client_id, &integration, scope, mapping, identity, Some(replay), detail, origin).await
}

/// The grant itself, for either kind: the scope within the mapping's and
/// the integration's, then the one write.
#[allow(clippy::too_many_arguments)]
async fn issue(
    app: &App,
    client_id: &str,
    integration: &Integration,
    scope: Scope,
    mapping: &Mapping,
    identity: UserId,
    replay: Option<Replay>,
    detail: String,
    origin: &Origin,
) -> Result<Issued, AuthError> {
    if integration.disabled {
        return Err(AuthError::InvalidClient("The API integration is disabled."));
    }
    if !scope.is_subset_of(&mapping.max_scope) {
        return Err(AuthError::InvalidScope("The scope exceeds the scope of the mapping."));
    }
    if !scope.is_subset_of(&integration.max_scope) {
        return Err(AuthError::InvalidScope("The scope exceeds the scope of the API integration."));
    }
    let now = app.now();
    let mut settings = integration.settings(app.tokens);
    // No refresh token; the grant ends with its access token.
    settings.refreshable = false;
    settings.grant_validity = settings.access_validity;
    let (grant, tokens, event) = first_pair(app, Grant::new(&*app.rng, client_id, identity, scope, now, settings), origin, now, detail);
    let machine = MachineGrant { grant: grant.clone(), mapping: mapping.name.clone(), replay };
    match app.store.insert_machine_grant(machine, event).await? {
        MachineIssue::Issued => {
            tracing::debug!(grant = %grant.id, client_id, identity = %grant.user_id.identity(), "machine grant issued");
            Ok(Issued { grant, tokens, state: None })
        }
        MachineIssue::Replayed => {
            let e = app
                .event(EventKind::JwtReplayed, origin)
                .identity(grant.user_id.identity())
                .client_id(client_id)
                .detail(format!("a JWT presented again was refused: mapping={}", mapping.name));
            app.store.append_event(e).await?;
            tracing::warn!(identity = %grant.user_id.identity(), "JWT replay refused");
            Err(AuthError::InvalidGrant(JWT_REPLAYED))
        }
        MachineIssue::Disabled => Err(AuthError::InvalidGrant(IDENTITY_DISABLED)),
        MachineIssue::IdentityTaken => Err(AuthError::InvalidGrant(IDENTITY_TAKEN)),
    }
}

/// What the certificate listener learnt of the connection's client
/// certificate: the chain rustls verified, end entity first; `None`: none
/// was presented. Only the certificate listener's connections carry it.
#[derive(Clone, Debug, Default)]
pub struct ClientCertificate(pub Option<Vec<Vec<u8>>>);

/// `POST Authorize/Certificate`.
pub async fn certificate_grant(
    app: &App,
    req: CertificateRequest,
    cert: Option<Vec<Vec<u8>>>,
    origin: &Origin,
) -> Result<Issued, AuthError> {
    let r = certificate_inner(app, req, cert, origin).await;
    if let Err(e) = &r {
        tracing::info!(error = %e.code(), description = %e.description(), "certificate grant refused");
    }
    counted(app, GrantType::Certificate, r)
}

async fn certificate_inner(app: &App, req: CertificateRequest, cert: Option<Vec<Vec<u8>>>, origin: &Origin) -> Result<Issued, AuthError> {
    let (client_id, integration, scope) = start(app, req.client_id, req.scope).await?;
    let cert = cert.ok_or(AuthError::InvalidGrant(NO_CERTIFICATE))?;
    let mappings = app.store.mappings().await?;
    let matched = strongroom_idp::certificate::match_mappings(&cert, &mappings, &app.machine.crls, app.now());
    if matched.is_empty() {
        return Err(AuthError::InvalidGrant(CERT_REFUSED));
    }
    let (mapping, identity, issuer) = match matched.iter().find(|(m, _, _)| m.client_ids.contains(&client_id)) {
        Some(found) => found.clone(),
        None => return Err(AuthError::UnauthorizedClient(MAPPING_CLIENT)),
    };
    let detail = format!("certificate grant: issuer={issuer} mapping={}", mapping.name);
    issue(app, &client_id, &integration, scope, mapping, identity, None, detail, origin).await
}
