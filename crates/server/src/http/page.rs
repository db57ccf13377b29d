//! The browser approval page at `/vedauth/device`.
//!
//! Server-rendered HTML that works without JavaScript, loads nothing from
//! elsewhere, and runs under a strict CSP. Three steps:
//! 1. `GET /vedauth/device[?user_code=...]`: a sign-in form (user name,
//!    password, the code, pre-filled from the link);
//! 2. `POST /vedauth/device`: checks them and shows the application's name
//!    and the requested scope in plain words, with Approve and Deny;
//! 3. `POST /vedauth/device/decision`: records the answer.
//!
//! And "applications I have approved" at `/vedauth/device/grants` (under the
//! same path, so the anti-forgery cookie serves both): sign in, see the live
//! grants, revoke any (`service::approved`).
//!
//! Anti-forgery: a token in a `SameSite=Strict`, `HttpOnly` cookie must equal
//! the form's hidden field. The token is random and signed by the server,
//! which adopts no token it did not issue (no cookie fixation); over HTTPS
//! the cookie is `__Host-` prefixed (`Secure`, `Path=/`, no `Domain`), so no
//! other origin, not even a sibling subdomain or plain HTTP, can plant one.
//! A post's `Origin` (or, without one, its `Referer`) must be this server:
//! scheme, host and port. The consent ticket of step 2 is signed and bound
//! to that token.

use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use maud::{DOCTYPE, Markup, html};
use serde::Deserialize;
use subtle::ConstantTimeEq as _;

use strongroom_core::random::bytes;
use strongroom_core::secret::Secret;
use strongroom_proto::SecretString;

use super::extract::read_body;
use super::respond::{Page, css};
use crate::state::HttpState;
use strongroom_app::service::Origin;
use strongroom_app::service::device::{self, PageError};

/// The anti-forgery cookie over HTTPS, and over plain HTTP (development and
/// tests, where browsers refuse `__Host-` cookies, which must be `Secure`).
const COOKIE_SECURE: &str = "__Host-sr_csrf";
const COOKIE_PLAIN: &str = "sr_csrf";

const STYLE: &str = "\
body{font-family:system-ui,sans-serif;background:#f4f5f7;color:#1d2330;margin:0}\
main{max-width:26rem;margin:4rem auto;background:#fff;border-radius:.5rem;padding:2rem;box-shadow:0 1px 4px #0002}\
h1{font-size:1.3rem;margin-top:0}label{display:block;margin:.8rem 0 .2rem;font-weight:600}\
input[type=text],input[type=password]{width:100%;box-sizing:border-box;padding:.5rem;font-size:1rem;border:1px solid #99a;border-radius:.3rem}\
button{margin-top:1.2rem;padding:.6rem 1.2rem;font-size:1rem;border:0;border-radius:.3rem;cursor:pointer}\
.primary{background:#1f5fbf;color:#fff}.secondary{background:#e3e6ec;color:#1d2330}\
.error{background:#fde8e8;color:#8a1c1c;padding:.6rem;border-radius:.3rem}\
.code{font-family:monospace;font-size:1.2rem;letter-spacing:.1em}ul{padding-left:1.2rem}";

#[utoipa::path(
    get,
    path = "/vedauth/device/style.css",
    tag = "approval page",
    responses((status = 200, description = "The page's style sheet.", body = String, content_type = "text/css")),
)]
pub(crate) async fn style() -> Response {
    css(STYLE)
}

fn layout(title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="robots" content="noindex";
                title { (title) " · Strongroom" }
                link rel="stylesheet" href="/vedauth/device/style.css";
            }
            body { main { h1 { (title) } (body) } }
        }
    }
}

fn sign_in_form(app: &HttpState, csrf: &str, user_code: &str, username: &str, error: Option<&PageError>) -> Markup {
    let oidc = app.oidc.as_ref().map(|o| o.config.name.clone());
    layout(
        "Sign in to approve a device",
        html! {
            @if let Some(e) = error { p.error role="alert" { (e) } }
            p { "An application asked to act on your behalf. Sign in and enter the code it shows you." }
            form method="post" action="/vedauth/device" {
                input type="hidden" name="csrf" value=(csrf);
                label for="user_code" { "Code" }
                input type="text" id="user_code" name="user_code" value=(user_code) autocomplete="off" required
                    autocapitalize="characters" spellcheck="false" maxlength="32";
                label for="username" { "User name" }
                input type="text" id="username" name="username" value=(username) autocomplete="username" required maxlength="64";
                label for="password" { "Password" }
                input type="password" id="password" name="password" autocomplete="current-password" required maxlength="1024";
                button.primary type="submit" id="sign_in" { "Sign in" }
            }
            @if let Some(name) = &oidc {
                // A link, not a form: the page's CSP allows forms to post only here,
                // and the provider is elsewhere.
                p { "Or " a.button #oidc href=(format!("/vedauth/device/oidc?{}", serde_urlencoded::to_string([("user_code", user_code)]).unwrap_or_default())) {
                    "sign in with " (name) } "." }
            }
        },
    )
}

fn message(title: &str, text: &str) -> Markup {
    layout(title, html! { p { (text) } })
}

pub(super) fn cookie_name(app: &HttpState) -> &'static str {
    if app.secure_cookies { COOKIE_SECURE } else { COOKIE_PLAIN }
}

/// The MAC of an anti-forgery token's random part.
fn csrf_mac(app: &HttpState, nonce: &str) -> String {
    let mac = strongroom_core::mac::hmac_sha256_of(&app.keys.page, &[b"strongroom/csrf-token/v1", &[0], nonce.as_bytes()]);
    URL_SAFE_NO_PAD.encode(&mac[..16])
}

/// A new anti-forgery token: 32 random bytes and the server's MAC of them.
pub(super) fn new_csrf(app: &HttpState) -> String {
    let nonce = URL_SAFE_NO_PAD.encode(bytes::<32>(&*app.rng));
    let mac = csrf_mac(app, &nonce);
    format!("{nonce}.{mac}")
}

/// The cookie's token, if this server issued it.
pub(super) fn cookie_csrf(app: &HttpState, headers: &HeaderMap) -> Option<String> {
    let name = cookie_name(app);
    headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(';')).find_map(|kv| {
        let (k, v) = kv.trim().split_once('=')?;
        let (nonce, mac) = v.split_once('.')?;
        let shaped = nonce.len() == 43 && nonce.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        (k == name && shaped && bool::from(mac.as_bytes().ct_eq(csrf_mac(app, nonce).as_bytes()))).then(|| v.to_owned())
    })
}

fn with_cookie(app: &HttpState, page: Page, csrf: &str) -> Response {
    let mut r = page.into_response();
    let cookie = if app.secure_cookies {
        format!("{COOKIE_SECURE}={csrf}; Path=/; Secure; HttpOnly; SameSite=Strict")
    } else {
        format!("{COOKIE_PLAIN}={csrf}; Path=/vedauth/device; HttpOnly; SameSite=Strict")
    };
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// `scheme://host[:port]` of a URL, in lower case (`None` if it has no scheme).
fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    (!scheme.is_empty() && !host.is_empty()).then(|| format!("{scheme}://{host}").to_ascii_lowercase())
}

/// Whether a post comes from this server's own pages: its `Origin`, or
/// without one its `Referer`, names this server: the configured
/// `public_url`, or the `Host` it was sent to under the scheme it arrived
/// on. A post with neither header (no browser sends such a post from
/// another site) is left to the cookie check.
pub(super) fn same_origin(app: &HttpState, headers: &HeaderMap) -> bool {
    let claimed = match (headers.get(header::ORIGIN), headers.get(header::REFERER)) {
        (Some(o), _) => o.to_str().ok().and_then(origin_of),
        (None, Some(r)) => r.to_str().ok().and_then(origin_of),
        (None, None) => return true,
    };
    let Some(claimed) = claimed else { return false };
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
    let scheme = if app.tls_here { "https" } else { "http" };
    let here = format!("{scheme}://{host}").to_ascii_lowercase();
    (!host.is_empty() && claimed == here) || origin_of(&app.public_url).is_some_and(|p| p == claimed)
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ShowQuery {
    /// The code to pre-fill (the link a device shows).
    #[param(example = "BCDF-GHJK")]
    user_code: Option<String>,
}

/// Step 1: the sign-in form.
#[utoipa::path(
    get,
    path = "/vedauth/device",
    tag = "approval page",
    params(ShowQuery),
    responses((status = 200, description = "The sign-in form; sets the anti-forgery cookie.", body = String, content_type = "text/html")),
)]
pub(crate) async fn show(State(app): State<HttpState>, headers: HeaderMap, Query(q): Query<ShowQuery>) -> Response {
    let csrf = cookie_csrf(&app, &headers).unwrap_or_else(|| new_csrf(&app));
    let code: String = q.user_code.unwrap_or_default().chars().take(32).collect();
    with_cookie(&app, Page::Ok(sign_in_form(&app, &csrf, &code, "", None)), &csrf)
}

/// The sign-in form, with the anti-forgery field equal to the `sr_csrf` cookie.
#[derive(Deserialize, utoipa::ToSchema)]
struct SignInForm {
    csrf: String,
    user_code: String,
    username: String,
    password: SecretString,
}

/// The consent form: the ticket of the consent screen and the answer.
#[derive(Deserialize, utoipa::ToSchema)]
struct DecisionForm {
    csrf: String,
    ticket: String,
    /// `approve` or `deny`.
    #[schema(example = "approve")]
    action: String,
}

/// A form our own page posts, carrying the anti-forgery field.
trait Posted: serde::de::DeserializeOwned {
    fn csrf(&self) -> &str;
}

impl Posted for SignInForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

impl Posted for DecisionForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// Parses a form posted by our own page, after the anti-forgery checks.
/// Returns the form and the browser's anti-forgery token.
async fn posted<T: Posted>(app: &HttpState, req: Request) -> Result<(T, String), PageError> {
    let headers = req.headers();
    if !same_origin(app, headers) {
        tracing::info!(origin = ?headers.get(header::ORIGIN), referer_sent = headers.contains_key(header::REFERER), "approval page: a post from another origin");
        return Err(PageError::BadForm);
    }
    let Some(cookie) = cookie_csrf(app, headers) else {
        tracing::info!("approval page: no anti-forgery cookie");
        return Err(PageError::BadForm);
    };
    let body = read_body(req, &()).await.map_err(|_| PageError::BadForm)?;
    let form: T = serde_urlencoded::from_bytes(&body).map_err(|_| PageError::BadForm)?;
    if !bool::from(form.csrf().as_bytes().ct_eq(cookie.as_bytes())) {
        tracing::info!("approval page: anti-forgery field does not match the cookie");
        return Err(PageError::BadForm);
    }
    Ok((form, cookie))
}

/// Step 2: sign in and show the request.
#[utoipa::path(
    post,
    path = "/vedauth/device",
    tag = "approval page",
    request_body(content = SignInForm, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "The consent screen: the application, the scope, Approve and Deny.", body = String, content_type = "text/html"),
        (status = 400, description = "The form is incomplete, or fails the anti-forgery checks (cookie, field, `Origin`).", body = String, content_type = "text/html"),
        (status = 401, description = "Wrong user name or password.", body = String, content_type = "text/html"),
        (status = 403, description = "The user may not use this integration.", body = String, content_type = "text/html"),
        (status = 404, description = "No such code, or it expired.", body = String, content_type = "text/html"),
        (status = 409, description = "The code was decided already.", body = String, content_type = "text/html"),
        (status = 429, description = "Too many wrong passwords or codes: locked for a while.", body = String, content_type = "text/html"),
        (status = 408, response = super::responses::Timeout),
        (status = 503, description = "The store did not answer.", body = String, content_type = "text/html"),
    ),
)]
pub(crate) async fn sign_in(State(app): State<HttpState>, origin: Origin, req: Request) -> Response {
    let (form, csrf) = match posted::<SignInForm>(&app, req).await {
        Ok(v) => v,
        Err(e) => return Page::Problem(e, message("Sign in again", "This page has expired. Open the link again.")).into_response(),
    };
    let password = Secret::new(form.password.0);
    match device::sign_in(&app, &form.username, &password, &form.user_code, &csrf, &origin).await {
        Ok(c) => {
            let page = consent_page(&c, &csrf);
            with_cookie(&app, Page::Ok(page), &csrf)
        }
        Err(e) => {
            let form_page = sign_in_form(&app, &csrf, &form.user_code, &form.username, Some(&e));
            with_cookie(&app, Page::Problem(e, form_page), &csrf)
        }
    }
}

/// The consent screen: the application, the scope, Approve and Deny.
fn consent_page(c: &device::Consent, csrf: &str) -> Markup {
    layout(
        "Approve access?",
        html! {
            p { "Signed in as " strong { (c.user.name) } "." }
            p { strong { (c.integration_name) } " (" code { (c.client_id) } ") asks for access with the code "
                span.code { (c.user_code) } ". Make sure the application shows this same code." }
            p { "It will be able to:" }
            ul { @for line in &c.scope_lines { li { (line) } } }
            p { small { "Scope: " code { (c.scope) } } }
            form method="post" action="/vedauth/device/decision" {
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="ticket" value=(c.ticket);
                button.primary type="submit" name="action" value="approve" id="approve" { "Approve" }
                " "
                button.secondary type="submit" name="action" value="deny" id="deny" { "Deny" }
            }
        },
    )
}

/// Step 3: approve or deny.
#[utoipa::path(
    post,
    path = "/vedauth/device/decision",
    tag = "approval page",
    request_body(content = DecisionForm, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "The decision is recorded.", body = String, content_type = "text/html"),
        (status = 400, description = "The form is incomplete, fails the anti-forgery checks, or its ticket is not valid (any more).", body = String, content_type = "text/html"),
        (status = 403, description = "The user may not use this integration.", body = String, content_type = "text/html"),
        (status = 404, description = "No such code, or it expired.", body = String, content_type = "text/html"),
        (status = 409, description = "The code was decided already.", body = String, content_type = "text/html"),
        (status = 429, description = "The user is locked out for a while.", body = String, content_type = "text/html"),
        (status = 408, response = super::responses::Timeout),
        (status = 503, description = "The store did not answer.", body = String, content_type = "text/html"),
    ),
)]
pub(crate) async fn decide(State(app): State<HttpState>, origin: Origin, req: Request) -> Response {
    let (form, csrf) = match posted::<DecisionForm>(&app, req).await {
        Ok(v) => v,
        Err(e) => return Page::Problem(e, message("Sign in again", "This page has expired. Open the link again.")).into_response(),
    };
    let approve = match form.action.as_str() {
        "approve" => true,
        "deny" => false,
        _ => return Page::Problem(PageError::BadForm, message("Sign in again", "This page has expired.")).into_response(),
    };
    match device::decide(&app, &form.ticket, &csrf, approve, &origin).await {
        Ok(d) if d.approved => {
            Page::Ok(message("Access approved", &format!("{} can now continue. You may close this window.", d.integration_name)))
                .into_response()
        }
        Ok(d) => Page::Ok(message("Access denied", &format!("{} was refused access. You may close this window.", d.integration_name)))
            .into_response(),
        Err(e) => {
            let text = e.to_string();
            Page::Problem(e, message("Not recorded", &text)).into_response()
        }
    }
}

// ------------------------------------------------------------------ applications I have approved

fn approved_sign_in_form(csrf: &str, username: &str, error: Option<&PageError>) -> Markup {
    layout(
        "Applications you have approved",
        html! {
            @if let Some(e) = error { p.error role="alert" { (e) } }
            p { "Sign in to see the applications that may act on your behalf, and to take that back." }
            form method="post" action="/vedauth/device/grants" {
                input type="hidden" name="csrf" value=(csrf);
                label for="username" { "User name" }
                input type="text" id="username" name="username" value=(username) autocomplete="username" required maxlength="300";
                label for="password" { "Password" }
                input type="password" id="password" name="password" autocomplete="current-password" required maxlength="1024";
                button.primary type="submit" id="sign_in" { "Sign in" }
            }
        },
    )
}

fn approved_list(csrf: &str, a: &strongroom_app::service::approved::Approved) -> Markup {
    layout(
        "Applications you have approved",
        html! {
            p { "Signed in as " strong { (a.user.name) } "." }
            @if let Some(r) = &a.revoked { p.error role="status" { "Access of " (r) " revoked: its tokens no longer work." } }
            @if a.grants.is_empty() {
                p { "No application may act on your behalf." }
            } @else {
                ul {
                    @for (g, application) in &a.grants {
                        li {
                            strong { (application) } " (" code { (g.client_id) } ")"
                            br; small { "Scope: " code { (g.scope) } }
                            br; small { "Approved " (g.created_at.iso8601()) "; tokens last issued " (g.access_issued_at.iso8601())
                                @if let Some(addr) = &g.last_addr { " to " span.addr { (addr) } }
                                @if g.pair.used { " and used since" } @else { ", not used since" }
                                "; ends " (g.refresh_until.iso8601()) }
                            form method="post" action="/vedauth/device/grants/revoke" {
                                input type="hidden" name="csrf" value=(csrf);
                                input type="hidden" name="ticket" value=(a.ticket);
                                input type="hidden" name="grant" value=(g.id.as_str());
                                button.secondary type="submit" { "Revoke" }
                            }
                        }
                    }
                }
            }
        },
    )
}

/// The sign-in form of "applications I have approved".
#[utoipa::path(
    get,
    path = "/vedauth/device/grants",
    tag = "approval page",
    responses((status = 200, description = "The sign-in form; sets the anti-forgery cookie.", body = String, content_type = "text/html")),
)]
pub(crate) async fn approved(State(app): State<HttpState>, headers: HeaderMap) -> Response {
    let csrf = cookie_csrf(&app, &headers).unwrap_or_else(|| new_csrf(&app));
    with_cookie(&app, Page::Ok(approved_sign_in_form(&csrf, "", None)), &csrf)
}

/// The sign-in form of "applications I have approved".
#[derive(Deserialize, utoipa::ToSchema)]
struct ApprovedSignInForm {
    csrf: String,
    username: String,
    password: SecretString,
}

/// A revocation from the list.
#[derive(Deserialize, utoipa::ToSchema)]
struct RevokeForm {
    csrf: String,
    ticket: String,
    grant: String,
}

impl Posted for ApprovedSignInForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

impl Posted for RevokeForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// Sign in: the person's live grants.
#[utoipa::path(
    post,
    path = "/vedauth/device/grants",
    tag = "approval page",
    request_body(content = ApprovedSignInForm, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "The person's live grants: application, scope, when approved, when tokens were last issued, each with Revoke.", body = String, content_type = "text/html"),
        (status = 400, description = "The form is incomplete, or fails the anti-forgery checks (cookie, field, `Origin`).", body = String, content_type = "text/html"),
        (status = 401, description = "Wrong user name or password.", body = String, content_type = "text/html"),
        (status = 429, description = "Too many wrong passwords: locked for a while.", body = String, content_type = "text/html"),
        (status = 408, response = super::responses::Timeout),
        (status = 503, description = "The store or the directory did not answer.", body = String, content_type = "text/html"),
    ),
)]
pub(crate) async fn approved_sign_in(State(app): State<HttpState>, origin: Origin, req: Request) -> Response {
    let (form, csrf) = match posted::<ApprovedSignInForm>(&app, req).await {
        Ok(v) => v,
        Err(e) => return Page::Problem(e, message("Sign in again", "This page has expired. Open it again.")).into_response(),
    };
    let password = Secret::new(form.password.0);
    match strongroom_app::service::approved::sign_in(&app, &form.username, &password, &csrf, &origin).await {
        Ok(a) => with_cookie(&app, Page::Ok(approved_list(&csrf, &a)), &csrf),
        Err(e) => {
            let page = approved_sign_in_form(&csrf, &form.username, Some(&e));
            with_cookie(&app, Page::Problem(e, page), &csrf)
        }
    }
}

/// Revoke one of the person's grants.
#[utoipa::path(
    post,
    path = "/vedauth/device/grants/revoke",
    tag = "approval page",
    request_body(content = RevokeForm, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "The grant is revoked (if it was the person's and live); the list again.", body = String, content_type = "text/html"),
        (status = 400, description = "The form is incomplete, fails the anti-forgery checks, or its ticket is not valid (any more).", body = String, content_type = "text/html"),
        (status = 403, description = "The person's account is disabled.", body = String, content_type = "text/html"),
        (status = 408, response = super::responses::Timeout),
        (status = 503, description = "The store did not answer.", body = String, content_type = "text/html"),
    ),
)]
pub(crate) async fn approved_revoke(State(app): State<HttpState>, origin: Origin, req: Request) -> Response {
    let (form, csrf) = match posted::<RevokeForm>(&app, req).await {
        Ok(v) => v,
        Err(e) => return Page::Problem(e, message("Sign in again", "This page has expired. Open it again.")).into_response(),
    };
    match strongroom_app::service::approved::revoke(&app, &form.ticket, &csrf, &form.grant, &origin).await {
        Ok(a) => with_cookie(&app, Page::Ok(approved_list(&csrf, &a)), &csrf),
        Err(e) => {
            let text = e.to_string();
            Page::Problem(e, message("Not revoked", &text)).into_response()
        }
    }
}

// ------------------------------------------------------------------ OpenID Connect

/// The cookie binding a started OpenID Connect sign-in to this browser:
/// `SameSite=Lax`, so that the provider's redirect back (a top-level
/// navigation from another site) carries it.
const OIDC_COOKIE: &str = "sr_oidc";

/// "Sign in with …": off to the OpenID provider, for the device code of the
/// link the page was opened with. A link like the device's own link, so
/// nothing more than opening `verification_uri_complete` is asked of the browser.
#[utoipa::path(
    get,
    path = "/vedauth/device/oidc",
    tag = "approval page",
    params(ShowQuery),
    responses(
        (status = 303, description = "To the provider's authorization endpoint (code flow, PKCE S256, state and nonce); sets the browser-binding cookie."),
        (status = 400, description = "No OpenID provider is configured.", body = String, content_type = "text/html"),
        (status = 408, response = super::responses::Timeout),
        (status = 503, description = "The provider or the store did not answer.", body = String, content_type = "text/html"),
    ),
)]
pub(crate) async fn oidc_start(State(app): State<HttpState>, Query(q): Query<ShowQuery>) -> Response {
    match strongroom_app::service::oidc::start(&app, q.user_code.as_deref().unwrap_or("")).await {
        Ok(started) => {
            let secure = if app.secure_cookies { "; Secure" } else { "" };
            let cookie = format!("{OIDC_COOKIE}={}; Path=/vedauth/device/oidc; HttpOnly; SameSite=Lax{secure}", started.binding);
            super::respond::see_other(&started.location, &cookie)
        }
        Err(e) => {
            let text = e.to_string();
            Page::Problem(e, message("Cannot sign in", &text)).into_response()
        }
    }
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    /// The provider's refusal (`access_denied`, …).
    error: Option<String>,
}

/// The provider's redirect back: the device's request, to approve or deny.
#[utoipa::path(
    get,
    path = "/vedauth/device/oidc/callback",
    tag = "approval page",
    params(CallbackQuery),
    responses(
        (status = 200, description = "The consent screen: the application, the scope, Approve and Deny.", body = String, content_type = "text/html"),
        (status = 400, description = "The sign-in was not started in this browser, was used already or expired, or the provider's answer was refused.", body = String, content_type = "text/html"),
        (status = 403, description = "The person may not use this integration.", body = String, content_type = "text/html"),
        (status = 404, description = "No such code, or it expired.", body = String, content_type = "text/html"),
        (status = 409, description = "The code was decided already.", body = String, content_type = "text/html"),
        (status = 429, description = "Too many wrong codes: locked for a while.", body = String, content_type = "text/html"),
        (status = 408, response = super::responses::Timeout),
        (status = 503, description = "The provider or the store did not answer.", body = String, content_type = "text/html"),
    ),
)]
pub(crate) async fn oidc_callback(
    State(app): State<HttpState>,
    origin: Origin,
    headers: HeaderMap,
    Query(q): Query<CallbackQuery>,
) -> Response {
    let binding = headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(';')).find_map(|kv| {
        let (k, v) = kv.trim().split_once('=')?;
        (k == OIDC_COOKIE).then(|| v.to_owned())
    });
    let (Some(code), Some(state), None, Some(binding)) = (q.code, q.state, q.error.as_ref(), binding) else {
        let e = PageError::SignInExpired;
        let text = if q.error.is_some() {
            "Your identity provider did not sign you in. Start again from the code's link.".to_owned()
        } else {
            e.to_string()
        };
        return Page::Problem(e, message("Not signed in", &text)).into_response();
    };
    // The strict anti-forgery cookie does not come with a redirect from
    // another site: a new token for the consent form when it is missing.
    let csrf = cookie_csrf(&app, &headers).unwrap_or_else(|| new_csrf(&app));
    match strongroom_app::service::oidc::finish(&app, &state, &code, &binding, &csrf, &origin).await {
        Ok(c) => with_cookie(&app, Page::Ok(consent_page(&c, &csrf)), &csrf),
        Err(e) => {
            let text = e.to_string();
            Page::Problem(e, message("Not signed in", &text)).into_response()
        }
    }
}
