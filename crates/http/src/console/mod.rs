//! The admin console at `/admin`: server-rendered HTML like the approval
//! page (`http::page`), working without JavaScript, loading nothing from
//! elsewhere, under the same strict CSP, `no-store` and no framing.
//!
//! - Sign-in (`GET /admin`, `POST /admin`) with a user name and password
//!   through the login service's guessing limits; the session is a MAC'd
//!   cookie (`service::console`: 15 minutes idle, 8 hours at most), cleared
//!   by `POST /admin/signout`.
//! - Every request reads the person again (there, enabled, Master Admin, and
//!   their rights): nothing is cached, so a disabled user or a removed right
//!   applies at the next request.
//! - Anti-forgery: the approval page's scheme (a server-signed token in a
//!   `SameSite=Strict`, `HttpOnly` cookie, `__Host-` over HTTPS, equal to the
//!   form's `csrf` field; `Origin` or `Referer` must be this server). A post
//!   that fails it is refused with 403 before anything is read or changed.
//! - Pages (one file each): integrations, users and groups, folders and
//!   permissions, grants, keys, machine identities, certificate authorities
//!   and certificate policies, the event log. A Master Admin sees and changes
//!   everything; anyone else sees only the folders they hold a right on
//!   and the events they may read, and may change only the permissions of
//!   folders they hold ManagePermissions on (once `Rights` has it); every
//!   other post is refused with 403 on the server, whatever the page showed.
//! - Every change calls the one implementation in `strongroom_app::admin`, through
//!   an `Admin` acting as the signed-in person, so its chained event names them.

pub(crate) mod approvals;
pub(crate) mod certs;
pub(crate) mod folders;
pub(crate) mod grants;
pub(crate) mod integrations;
pub(crate) mod keys;
pub(crate) mod log;
pub(crate) mod machines;
pub(crate) mod server;
pub(crate) mod users;
pub(crate) mod vault;

use axum::extract::{FromRequest, FromRequestParts, Request, State};
use axum::http::{HeaderMap, header, request::Parts};
use axum::response::{IntoResponse as _, Response};
use maud::{DOCTYPE, Markup, html};
use subtle::ConstantTimeEq as _;
use utoipa::openapi::{ContentBuilder, RefOr, ResponseBuilder};

use strongroom_core::secret::Secret;

use super::extract::read_body;
use super::page::{cookie_csrf, new_csrf, same_origin};
use super::respond::{Console, css};
use crate::state::HttpState;
use strongroom_app::service::Origin;
use strongroom_app::service::console::{self, ConsoleError, Standing};

/// The session cookie over HTTPS (`__Host-`: `Secure`, `Path=/`, no
/// `Domain`) and over plain HTTP (development and tests).
const SESSION_SECURE: &str = "__Host-sr_admin";
const SESSION_PLAIN: &str = "sr_admin";

const STYLE: &str = "\
body{font-family:system-ui,sans-serif;background:#f4f5f7;color:#1d2330;margin:0;font-size:15px}\
a{color:#1f5fbf}:focus-visible{outline:3px solid #e08a00;outline-offset:2px}\
.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}.skip{position:absolute;left:-999px}.skip:focus{left:.5rem;top:.5rem;background:#fff;padding:.4rem}\
header{background:#1d2330;color:#fff;padding:.5rem 1rem;display:flex;flex-wrap:wrap;gap:.3rem 1rem;align-items:center}\
header a{color:#fff}header nav ul{list-style:none;display:flex;flex-wrap:wrap;gap:.2rem .9rem;margin:0;padding:0}\
header a[aria-current=page]{font-weight:700;text-decoration-thickness:3px}\
header .who{margin-left:auto}header form{display:inline}header button{margin:0 0 0 .5rem;padding:.25rem .6rem}\
main{max-width:60rem;margin:1rem auto;background:#fff;border-radius:.4rem;padding:1rem 1.5rem;box-shadow:0 1px 4px #0002}\
main.narrow{max-width:26rem;margin-top:4rem}\
h1{font-size:1.35rem;margin:.2rem 0 .8rem}h2{font-size:1.1rem;margin:1.2rem 0 .4rem}\
table{border-collapse:collapse;width:100%;margin:.4rem 0}th,td{text-align:left;padding:.3rem .4rem;border-bottom:1px solid #dde;vertical-align:top}\
th{background:#eef0f4}tbody th{background:none}td form{display:inline}table.log td{overflow-wrap:anywhere}table.log td.whole{white-space:nowrap}\
label{font-weight:600;margin-right:.3rem}label.inline{font-weight:400}\
.field{margin:.4rem 0}.field label{display:block;margin:.2rem 0}\
input[type=text],input[type=password],input[type=number],select,textarea{padding:.3rem;font-size:.95rem;border:1px solid #99a;border-radius:.25rem;max-width:100%}\
main.narrow input[type=text],main.narrow input[type=password]{width:100%;box-sizing:border-box}\
fieldset{border:1px solid #ccd;border-radius:.3rem;margin:.5rem 0;padding:.4rem .8rem}legend{font-weight:600}\
button{padding:.35rem .8rem;font-size:.95rem;border:0;border-radius:.25rem;cursor:pointer;background:#1f5fbf;color:#fff;margin-top:.3rem}\
button.secondary{background:#e3e6ec;color:#1d2330}button.danger{background:#a32020}\
.error{background:#fde8e8;color:#8a1c1c;padding:.5rem;border-radius:.3rem}\
.notice{background:#e6f4ea;color:#1e5631;padding:.5rem;border-radius:.3rem}\
.muted{color:#596070}code{font-size:.9em}ul.tree{list-style:none;padding-left:1.1rem}ul.tree ul{list-style:none;padding-left:1.1rem}ul.tree a[aria-current=page]{font-weight:700}";

/// The console's style sheet.
#[utoipa::path(
    get,
    path = "/admin/style.css",
    tag = "admin console",
    operation_id = "console_style",
    responses((status = 200, description = "The console's style sheet.", body = String, content_type = "text/css")),
)]
pub(crate) async fn style() -> Response {
    css(STYLE)
}

/// Which page is shown (for the navigation's `aria-current`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Nav {
    Home,
    Integrations,
    Users,
    Folders,
    Vault,
    Grants,
    Keys,
    Machines,
    Cas,
    Policies,
    Approvals,
    Log,
    Server,
}

impl Nav {
    const ALL: [(Nav, &'static str, &'static str, bool); 13] = [
        (Nav::Home, "/admin", "Overview", false),
        (Nav::Integrations, "/admin/integrations", "Integrations", true),
        (Nav::Users, "/admin/users", "Users and groups", true),
        (Nav::Folders, "/admin/folders", "Folders and permissions", false),
        (Nav::Vault, "/admin/vault", "Vault entries", true),
        (Nav::Grants, "/admin/grants", "Grants", true),
        (Nav::Keys, "/admin/keys", "Keys", true),
        (Nav::Machines, "/admin/machines", "Machine identities", true),
        (Nav::Cas, "/admin/cas", "Certificate authorities", true),
        (Nav::Policies, "/admin/policies", "Certificate policies", true),
        (Nav::Approvals, "/admin/certificates/pending", "Pending certificates", true),
        (Nav::Log, "/admin/log", "Event log", false),
        (Nav::Server, "/admin/server", "Server", true),
    ];
}

fn head(title: &str) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta name="viewport" content="width=device-width, initial-scale=1";
            meta name="robots" content="noindex";
            title { (title) " · Strongroom admin" }
            link rel="stylesheet" href="/admin/style.css";
        }
    }
}

/// A page of the signed-in console: navigation (only what they may see),
/// who is signed in, sign-out, and the page's heading and body.
fn layout(s: &Standing, csrf: &str, current: Nav, title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body {
                a.skip href="#content" { "Skip to content" }
                header {
                    strong { "Strongroom admin" }
                    nav aria-label="Console" {
                        ul {
                            @for (nav, href, label, master_only) in Nav::ALL {
                                @if nav == Nav::Home || (s.has_any() && (!master_only || s.master_admin())) {
                                    li { a href=(href) aria-current=[(nav == current).then_some("page")] { (label) } }
                                }
                            }
                        }
                    }
                    span.who {
                        "Signed in as " strong { (s.user.name) }
                        @if s.master_admin() { " (Master Admin)" }
                        form method="post" action="/admin/signout" {
                            input type="hidden" name="csrf" value=(csrf);
                            button.secondary type="submit" id="sign_out" { "Sign out" }
                        }
                    }
                }
                main id="content" { h1 { (title) } (body) }
            }
        }
    }
}

/// A page without a session (sign-in, messages).
fn bare(title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body { main.narrow id="content" { h1 { (title) } (body) } }
        }
    }
}

fn sign_in_form(csrf: &str, username: &str, error: Option<&ConsoleError>) -> Markup {
    bare(
        "Sign in to the admin console",
        html! {
            @if let Some(e) = error { p.error role="alert" { (e) } }
            p { "Sign in with your Strongroom user name and password." }
            form method="post" action="/admin" {
                input type="hidden" name="csrf" value=(csrf);
                div.field {
                    label for="username" { "User name" }
                    input type="text" id="username" name="username" value=(username) autocomplete="username" required maxlength="300" autofocus;
                }
                div.field {
                    label for="password" { "Password" }
                    input type="password" id="password" name="password" autocomplete="current-password" required maxlength="1024";
                }
                button type="submit" id="sign_in" { "Sign in" }
            }
        },
    )
}

fn session_cookie_name(app: &HttpState) -> &'static str {
    if app.secure_cookies { SESSION_SECURE } else { SESSION_PLAIN }
}

/// `Set-Cookie` values: the session (or its removal) and the anti-forgery token.
fn cookies(app: &HttpState, session: Option<&str>, csrf: &str) -> Vec<String> {
    let (attrs, csrf_name) = if app.secure_cookies {
        ("Path=/; Secure; HttpOnly; SameSite=Strict", "__Host-sr_csrf")
    } else {
        ("Path=/admin; HttpOnly; SameSite=Strict", "sr_csrf")
    };
    let name = session_cookie_name(app);
    let session = match session {
        Some(v) => format!("{name}={v}; {attrs}"),
        None => format!("{name}=; {attrs}; Max-Age=0"),
    };
    vec![session, format!("{csrf_name}={csrf}; {attrs}")]
}

fn cookie_value<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(';')).find_map(|kv| {
        let (k, v) = kv.trim().split_once('=')?;
        (k == name).then_some(v)
    })
}

/// A signed-in request: who, their browser's anti-forgery token, and from where.
pub(crate) struct Ctx {
    pub(crate) app: HttpState,
    pub(crate) standing: Standing,
    pub(crate) csrf: String,
    pub(crate) origin: Origin,
}

impl Ctx {
    fn cookies(&self) -> Vec<String> {
        let session = console::seal(&self.app.keys.page, &self.standing.touched(self.app.now()), &self.csrf);
        cookies(&self.app, Some(&session), &self.csrf)
    }

    /// The page, and the session renewed.
    pub(crate) fn page(&self, current: Nav, title: &str, body: Markup) -> Response {
        Console::Ok(layout(&self.standing, &self.csrf, current, title, body), self.cookies()).into_response()
    }

    /// A refusal shown on the page, with its status.
    pub(crate) fn problem(&self, e: ConsoleError, current: Nav, title: &str, body: Markup) -> Response {
        let body = html! { p.error role="alert" { (e) } (body) };
        Console::Problem(e, layout(&self.standing, &self.csrf, current, title, body), self.cookies()).into_response()
    }

    /// "Nothing here for you": 403.
    pub(crate) fn forbidden(&self, current: Nav) -> Response {
        self.problem(
            ConsoleError::Forbidden,
            current,
            "Nothing to administer here",
            html! { p { a href="/admin" { "Back to the overview" } } },
        )
    }

    /// Shows `page` with an outcome above it: a notice, or the refusal and its status.
    pub(crate) fn after(&self, outcome: Result<String, ConsoleError>, current: Nav, title: &str, page: Markup) -> Response {
        match outcome {
            Ok(notice) => self.page(current, title, html! { p.notice role="status" { (notice) } (page) }),
            Err(e) => self.problem(e, current, title, page),
        }
    }

    pub(crate) fn admin(&self) -> strongroom_app::admin::Admin {
        self.standing.admin(&self.app, &self.origin)
    }

    /// A confirmation page: what the action will end (`consequences`), and
    /// a form posting `fields` (with the anti-forgery token) to `action`,
    /// or a way back to `back` without doing anything. No JavaScript: the
    /// list's button is a link here, and only this page's button acts.
    pub(crate) fn confirm(&self, c: Confirm<'_>) -> Response {
        let body = html! {
            div #consequences role="note" { (c.consequences) }
            form method="post" action=(c.action) {
                (csrf_field(&self.csrf))
                @for (k, v) in c.fields {
                    input type="hidden" name=(k) value=(v);
                }
                button.danger type="submit" id="confirm" { (c.button) }
                " "
                a href=(c.back) id="cancel" { "Cancel" }
            }
        };
        self.page(c.nav, c.title, body)
    }
}

/// What [`Ctx::confirm`] shows and posts.
pub(crate) struct Confirm<'a> {
    pub(crate) nav: Nav,
    /// The page's heading: the question (`Delete integration ci?`).
    pub(crate) title: &'a str,
    /// What it will end, computed from the store.
    pub(crate) consequences: Markup,
    /// Where the confirming form posts.
    pub(crate) action: &'a str,
    pub(crate) fields: &'a [(&'a str, &'a str)],
    /// The confirming button's text (`Delete ci`).
    pub(crate) button: &'a str,
    /// Where Cancel goes.
    pub(crate) back: &'a str,
}

/// A query string of `pairs`, encoded.
pub(crate) fn query(pairs: &[(&str, &str)]) -> String {
    serde_urlencoded::to_string(pairs).unwrap_or_default()
}

/// `n thing` or `n things`.
pub(crate) fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The console's extractor for a page: the signed-in person ([`signed_in`]).
impl FromRequestParts<HttpState> for Ctx {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, app: &HttpState) -> Result<Self, Self::Rejection> {
        let Ok(origin) = Origin::from_request_parts(parts, app).await;
        signed_in(app, origin, &parts.headers).await
    }
}

/// The console's extractor for a post: its anti-forgery checks passed, the
/// signed-in person and the form ([`signed_in_post`]).
pub(crate) struct Posted(pub(crate) Ctx, pub(crate) Form);

impl FromRequest<HttpState> for Posted {
    type Rejection = Response;

    async fn from_request(req: Request, app: &HttpState) -> Result<Self, Self::Rejection> {
        let (mut parts, body) = req.into_parts();
        let Ok(origin) = Origin::from_request_parts(&mut parts, app).await;
        let (ctx, form) = signed_in_post(app, origin, Request::from_parts(parts, body)).await?;
        Ok(Posted(ctx, form))
    }
}

/// The signed-in person of a page's request; without a session, to the sign-in page.
pub(crate) async fn signed_in(app: &HttpState, origin: Origin, headers: &HeaderMap) -> Result<Ctx, Response> {
    let csrf = cookie_csrf(app, headers);
    match console::standing(app, cookie_value(headers, session_cookie_name(app)), csrf.as_deref()).await {
        Ok(standing) => Ok(Ctx { app: app.clone(), standing, csrf: csrf.unwrap_or_default(), origin }),
        Err(ConsoleError::SignedOut) => Err(Console::SeeOther("/admin".into(), Vec::new()).into_response()),
        Err(e) => {
            Err(Console::Problem(e, bare("Try again", html! { p { "The console could not read your session. Try again." } }), Vec::new())
                .into_response())
        }
    }
}

/// A form posted by the console's own page: its fields, in order. `Debug`
/// shows the fields' names only: a form may carry a password or the
/// anti-forgery token.
#[derive(Default)]
pub(crate) struct Form(Vec<(String, String)>);

impl std::fmt::Debug for Form {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Form").field(&self.0.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>()).finish()
    }
}

impl Form {
    /// The first value of `name`, trimmed (`""` when absent).
    pub(crate) fn get(&self, name: &str) -> &str {
        self.0.iter().find(|(k, _)| k == name).map_or("", |(_, v)| v.trim())
    }

    /// Every value of `name` (checkboxes).
    pub(crate) fn all(&self, name: &str) -> Vec<&str> {
        self.0.iter().filter(|(k, _)| k == name).map(|(_, v)| v.trim()).collect()
    }

    /// Whether checkbox `name` is ticked.
    pub(crate) fn ticked(&self, name: &str) -> bool {
        !self.get(name).is_empty()
    }

    /// `a, b,c` as names (empty entries dropped).
    pub(crate) fn list(&self, name: &str) -> Vec<String> {
        self.get(name).split([',', '\n']).map(str::trim).filter(|n| !n.is_empty()).map(str::to_owned).collect()
    }
}

/// The anti-forgery checks of a post, then its form: `Origin` (or
/// `Referer`) this server, the cookie's token this server's, the form's
/// `csrf` field equal to it. Returns the form and the token.
async fn posted(app: &HttpState, req: Request) -> Result<(Form, String), ConsoleError> {
    let headers = req.headers();
    if !same_origin(app, headers) {
        return Err(ConsoleError::Forged);
    }
    let cookie = cookie_csrf(app, headers).ok_or(ConsoleError::Forged)?;
    let body = read_body(req, &()).await.map_err(|_| ConsoleError::Forged)?;
    let fields: Vec<(String, String)> = serde_urlencoded::from_bytes(&body).map_err(|_| ConsoleError::Forged)?;
    let form = Form(fields);
    if !bool::from(form.get("csrf").as_bytes().ct_eq(cookie.as_bytes())) {
        return Err(ConsoleError::Forged);
    }
    Ok((form, cookie))
}

fn refused(e: ConsoleError) -> Response {
    let text = e.to_string();
    Console::Problem(
        e,
        bare("Not done", html! { p.error role="alert" { (text) } p { a href="/admin" { "Back to the console" } } }),
        Vec::new(),
    )
    .into_response()
}

/// A post of the signed-in console: anti-forgery first (403), then the
/// session (401), both before anything is changed.
pub(crate) async fn signed_in_post(app: &HttpState, origin: Origin, req: Request) -> Result<(Ctx, Form), Response> {
    let session = cookie_value(req.headers(), session_cookie_name(app)).map(str::to_owned);
    let (form, csrf) = posted(app, req).await.map_err(refused)?;
    match console::standing(app, session.as_deref(), Some(&csrf)).await {
        Ok(standing) => Ok((Ctx { app: app.clone(), standing, csrf, origin }, form)),
        Err(e) => Err(refused(e)),
    }
}

/// The overview, or the sign-in form without a session.
#[utoipa::path(
    get,
    path = "/admin",
    tag = "admin console",
    operation_id = "console_home",
    responses(
        (status = 200, description = "Signed in: the overview, saying what the person may administer (or that there is nothing for them). Otherwise the sign-in form; sets the anti-forgery cookie.", body = String, content_type = "text/html"),
        (status = 503, description = "The store did not answer.", body = String, content_type = "text/html"),
        (status = 408, response = super::responses::Timeout),
    ),
)]
pub(crate) async fn home(State(app): State<HttpState>, origin: Origin, headers: HeaderMap) -> Response {
    let csrf = cookie_csrf(&app, &headers);
    let ctx = match console::standing(&app, cookie_value(&headers, session_cookie_name(&app)), csrf.as_deref()).await {
        Ok(standing) => Ctx { app: app.clone(), standing, csrf: csrf.unwrap_or_default(), origin },
        Err(ConsoleError::SignedOut) => {
            let csrf = csrf.unwrap_or_else(|| new_csrf(&app));
            return Console::Ok(sign_in_form(&csrf, "", None), cookies(&app, None, &csrf)).into_response();
        }
        Err(e) => return refused(e),
    };
    let s = &ctx.standing;
    let body = if s.master_admin() {
        html! {
            p { "You are a Master Admin: you may see and change everything here." }
            ul {
                li { a href="/admin/integrations" { "Integrations" } ": the applications that may ask for tokens, their scopes and who may use them." }
                li { a href="/admin/users" { "Users and groups" } ": create, disable and enable users; groups and their members." }
                li { a href="/admin/folders" { "Folders and permissions" } ": the folder tree, who holds which right where, and from where it is inherited." }
                li { a href="/admin/vault" { "Vault entries" } ": each entry's owners, associations and key (never a value)." }
                li { a href="/admin/grants" { "Grants" } ": the live grants, by user or integration; revoke one." }
                li { a href="/admin/keys" { "Keys" } ": the named keys that seal the vault, which one is the default; rotate one." }
                li { a href="/admin/machines" { "Machine identities" } ": trusted JWT issuers, and the JWT and certificate mappings that give machines identities." }
                li { a href="/admin/cas" { "Certificate authorities" } ": the issuing CAs, their certificates, chains and CRLs; create a root CA." }
                li { a href="/admin/policies" { "Certificate policies" } ": a folder's certificate policy, locked or default, and the one in force; set it." }
                li { a href="/admin/log" { "Event log" } ": every change and sign-in, newest first." }
                li { a href="/admin/server" { "Server" } ": its version, the store, its schema and whether it is ready." }
            }
            p.muted { "Every action that ends something (grants, sessions, rights, folders) shows what it will end and asks you to confirm first." }
        }
    } else if s.has_any() {
        html! {
            p { "You are not a Master Admin: you see the folders you hold a right on, and the events you may read." }
            ul {
                li { a href="/admin/folders" { "Folders and permissions" } }
                li { a href="/admin/log" { "Event log" } }
            }
        }
    } else {
        html! {
            p #nothing { "There is nothing here for you to administer: you are not a Master Admin and hold no right on any folder." }
        }
    };
    ctx.page(Nav::Home, "Overview", body)
}

/// Sign in: on success, to the overview with the session cookie.
#[utoipa::path(
    post,
    path = "/admin",
    tag = "admin console",
    operation_id = "console_sign_in",
    request_body(content = ConsoleSignInForm, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "Signed in: to `/admin`, setting the session cookie."),
        (status = 401, description = "Wrong user name or password.", body = String, content_type = "text/html"),
        (status = 403, description = "The form fails the anti-forgery checks (cookie, field, `Origin`).", body = String, content_type = "text/html"),
        (status = 429, description = "Too many wrong passwords: locked for a while.", body = String, content_type = "text/html"),
        (status = 503, description = "The store or the directory did not answer.", body = String, content_type = "text/html"),
        (status = 408, response = super::responses::Timeout),
    ),
)]
pub(crate) async fn sign_in(State(app): State<HttpState>, origin: Origin, req: Request) -> Response {
    let (form, csrf) = match posted(&app, req).await {
        Ok(v) => v,
        Err(e) => return refused(e),
    };
    let password = Secret::new(form.get("password").to_owned());
    match console::sign_in(&app, form.get("username"), &password, &origin).await {
        Ok(session) => {
            let value = console::seal(&app.keys.page, &session, &csrf);
            Console::SeeOther("/admin".into(), cookies(&app, Some(&value), &csrf)).into_response()
        }
        Err(e) => {
            let page = sign_in_form(&csrf, form.get("username"), Some(&e));
            Console::Problem(e, page, cookies(&app, None, &csrf)).into_response()
        }
    }
}

/// Sign out: every console session of the user ends on the server (every
/// copy of the cookie, on every replica), and the cookie is cleared.
#[utoipa::path(
    post,
    path = "/admin/signout",
    tag = "admin console",
    operation_id = "console_sign_out",
    request_body(content = ConsoleCsrfOnly, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "Signed out: every console session of the user ended on the server; to `/admin`, clearing the session cookie."),
        (status = 403, description = "The form fails the anti-forgery checks (cookie, field, `Origin`).", body = String, content_type = "text/html"),
        (status = 503, description = "The store did not answer: nothing ended; try again.", body = String, content_type = "text/html"),
        (status = 408, response = super::responses::Timeout),
    ),
)]
pub(crate) async fn sign_out(State(app): State<HttpState>, origin: Origin, req: Request) -> Response {
    let session = cookie_value(req.headers(), session_cookie_name(&app)).map(str::to_owned);
    match posted(&app, req).await {
        Ok((_, csrf)) => match console::sign_out(&app, session.as_deref(), &csrf, &origin).await {
            Ok(()) => Console::SeeOther("/admin".into(), cookies(&app, None, &csrf)).into_response(),
            Err(e) => refused(e),
        },
        Err(e) => refused(e),
    }
}

/// The sign-in form.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub(crate) struct ConsoleSignInForm {
    /// The anti-forgery token (equal to the cookie's).
    csrf: String,
    username: String,
    password: String,
}

/// A form with only the anti-forgery token.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub(crate) struct ConsoleCsrfOnly {
    /// The anti-forgery token (equal to the cookie's).
    csrf: String,
}

/// The refusals every console post may answer, as HTML pages.
#[derive(Debug)]
pub(crate) struct PostRefusals;

impl utoipa::IntoResponses for PostRefusals {
    fn responses() -> std::collections::BTreeMap<String, RefOr<utoipa::openapi::Response>> {
        let html = |d: &str| {
            let content = ContentBuilder::new()
                .schema(Some(utoipa::openapi::schema::Object::with_type(utoipa::openapi::schema::Type::String)))
                .build();
            RefOr::T(ResponseBuilder::new().description(d).content("text/html", content).build())
        };
        [
            ("400", html("The input is not valid (the page says why); nothing was changed.")),
            ("401", html("No session, or it ended (15 minutes idle, 8 hours at most), or the user is gone or disabled: sign in again.")),
            ("403", html("The form fails the anti-forgery checks (cookie, field, `Origin`), or the signed-in person may not do this; nothing was changed.")),
            ("404", html("What the form names does not exist.")),
            ("409", html("What the form would create exists already.")),
            ("503", html("The store did not answer; nothing was changed.")),
            ("408", RefOr::Ref(utoipa::openapi::Ref::from_response_name("Timeout"))),
        ]
        .into_iter()
        .map(|(s, r)| (s.to_owned(), r))
        .collect()
    }
}

/// What every console page may answer besides its page.
#[derive(Debug)]
pub(crate) struct PageAnswers;

impl utoipa::IntoResponses for PageAnswers {
    fn responses() -> std::collections::BTreeMap<String, RefOr<utoipa::openapi::Response>> {
        let html = |d: &str| {
            let content = ContentBuilder::new()
                .schema(Some(utoipa::openapi::schema::Object::with_type(utoipa::openapi::schema::Type::String)))
                .build();
            RefOr::T(ResponseBuilder::new().description(d).content("text/html", content).build())
        };
        [
            ("200", html("The page (renews the session cookie).")),
            ("303", RefOr::T(ResponseBuilder::new().description("No session, or it ended: to the sign-in page `/admin`.").build())),
            ("400", html("A filter is not valid (the page says why).")),
            ("403", html("The signed-in person may not see this page: it says there is nothing for them.")),
            ("404", html("What the query names does not exist.")),
            ("503", html("The store did not answer.")),
            ("408", RefOr::Ref(utoipa::openapi::Ref::from_response_name("Timeout"))),
        ]
        .into_iter()
        .map(|(s, r)| (s.to_owned(), r))
        .collect()
    }
}

/// A `<select>`-free yes/no for tables.
pub(crate) fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

/// The hidden anti-forgery field of every form.
pub(crate) fn csrf_field(csrf: &str) -> Markup {
    html! { input type="hidden" name="csrf" value=(csrf); }
}

#[cfg(test)]
mod tests {
    use super::Form;

    #[test]
    fn a_forms_debug_names_its_fields_and_shows_no_value() {
        let form =
            Form(vec![("name".into(), "alice".into()), ("password".into(), "hunter2-secret".into()), ("csrf".into(), "t0ken".into())]);
        let shown = format!("{form:?}");
        assert_eq!(shown, r#"Form(["name", "password", "csrf"])"#);
        assert_eq!(form.get("password"), "hunter2-secret", "the value is still there to use");
    }
}
