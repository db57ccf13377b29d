//! Machine identities (Master Admins only): trusted JWT issuers and the
//! mappings that bind JWT claims or client certificates to identities
//! (`jwt+MAPPING:SUBJECT`, `cert+MAPPING:NAME`), as `admin jwt-issuers` and
//! `admin mappings` keep them: list, add or replace, remove. Removing a
//! mapping ends its identities' live grants, so it asks first and says how
//! many. An issuer's keys come from a JWKS URL or OpenID discovery here (a
//! JWKS file on the server's disk stays with the CLI).

use axum::extract::Query;
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;

use strongroom_core::machine::{Algorithm, Mapping, MappingRule};

use super::{Confirm, Ctx, Form, Nav, PageAnswers, PostRefusals, Posted, count, csrf_field, query};
use strongroom_app::admin::AdminError;
use strongroom_app::admin::machines::{IssuerSpec, MappingSpec};
use strongroom_app::service::console::ConsoleError;

const TITLE: &str = "Machine identities";

/// The identities a mapping gives, as their names begin.
fn prefix(m: &Mapping) -> String {
    format!("{}+{}:", m.kind(), m.name)
}

fn rule(m: &Mapping) -> Markup {
    match &m.rule {
        MappingRule::Jwt { issuer, conditions, identity_claim } => html! {
            "JWTs of issuer " code { (issuer) } " where " code { (conditions.iter().map(ToString::to_string).collect::<Vec<_>>().join(" ")) }
            " → " code { "jwt+" (m.name) ":<" (identity_claim) ">" }
        },
        MappingRule::Cert { ca_bundle, field } => html! {
            "client certificates of " (count(strongroom_idp::certificate::bundle_certs(ca_bundle).map_or(0, |c| c.len()) as u64, "approved CA", "approved CAs"))
            " → " code { "cert+" (m.name) ":<" (field.as_str()) ">" }
        },
    }
}

async fn body(ctx: &Ctx) -> Result<Markup, ConsoleError> {
    let admin = ctx.admin();
    let issuers = admin.jwt_issuers().await?;
    let mappings = admin.mappings().await?;
    let grants = admin.list_grants(false).await?;
    let csrf = &ctx.csrf;
    Ok(html! {
        h2 #issuers { "Trusted JWT issuers" }
        table {
            caption.muted { (count(issuers.len() as u64, "issuer", "issuers")) }
            thead { tr { th scope="col" { "Name" } th scope="col" { "Issuer (iss)" } th scope="col" { "Keys" } th scope="col" { "Audiences" }
                th scope="col" { "Algorithms" } th scope="col" { "Skew, max lifetime" } th scope="col" { "Action" } } }
            tbody {
                @for j in &issuers {
                    tr {
                        th scope="row" { (j.name) }
                        td { code { (j.issuer) } }
                        td { (j.keys.kind()) " " code { (j.keys.location()) } }
                        td { (j.audiences.join(", ")) }
                        td { (Algorithm::list(&j.algorithms)) }
                        td { (j.clock_skew) " s, " (j.max_lifetime) " s" }
                        td { a href=(format!("/admin/machines/issuers/remove?{}", query(&[("name", &j.name)]))) aria-label=(format!("Remove issuer {}", j.name)) { "Remove" } }
                    }
                }
            }
        }
        h2 { "Add or replace an issuer" }
        form method="post" action="/admin/machines/issuers" {
            (csrf_field(csrf))
            div.field { label for="issuer_name" { "Name" } input type="text" id="issuer_name" name="name" required maxlength="64"; }
            div.field { label for="issuer_iss" { "Issuer (the tokens' iss, exactly)" } input type="text" id="issuer_iss" name="issuer" required maxlength="512" size="50"; }
            div.field { label for="issuer_keys" { "Keys from" }
                select id="issuer_keys" name="keys" { option value="discovery" { "OpenID discovery (the issuer's, or the URL below)" } option value="jwks_url" { "a JWKS URL (below)" } } }
            div.field { label for="issuer_url" { "URL (https://; empty with discovery: the issuer's own)" } input type="text" id="issuer_url" name="url" maxlength="1000" size="50"; }
            div.field { label for="issuer_audiences" { "Audiences (comma-separated; a token's aud must name one)" } input type="text" id="issuer_audiences" name="audiences" required size="40"; }
            div.field { label for="issuer_algorithms" { "Algorithms" } input type="text" id="issuer_algorithms" name="algorithms" value="RS256,ES256,EdDSA" size="30"; }
            div.field { label for="issuer_skew" { "Clock skew (seconds, 0-300)" } input type="number" id="issuer_skew" name="clock_skew" value="60" min="0" max="300"; }
            div.field { label for="issuer_lifetime" { "Longest token lifetime (seconds)" } input type="number" id="issuer_lifetime" name="max_lifetime" value="3600" min="1" max="86400"; }
            button type="submit" id="save_issuer" { "Save issuer" }
        }
        h2 #mappings { "Mappings" }
        table {
            caption.muted { (count(mappings.len() as u64, "mapping", "mappings")) }
            thead { tr { th scope="col" { "Name" } th scope="col" { "Rule" } th scope="col" { "Integrations" } th scope="col" { "Maximum scope" }
                th scope="col" { "Live grants" } th scope="col" { "Action" } } }
            tbody {
                @for m in &mappings {
                    @let p = prefix(m);
                    tr {
                        th scope="row" { (m.name) }
                        td { (rule(m)) }
                        td { (m.client_ids.join(", ")) }
                        td { code { (m.max_scope) } }
                        td { (grants.iter().filter(|g| g.user_name.starts_with(&p)).count()) }
                        td { a href=(format!("/admin/machines/mappings/remove?{}", query(&[("name", &m.name)]))) aria-label=(format!("Remove mapping {}", m.name)) { "Remove" } }
                    }
                }
            }
        }
        h2 { "Add or replace a JWT mapping" }
        form method="post" action="/admin/machines/mappings/jwt" {
            (csrf_field(csrf))
            (mapping_fields("jwt"))
            div.field { label for="jwt_issuer" { "Issuer" }
                select id="jwt_issuer" name="issuer" required { @for j in &issuers { option value=(j.name) { (j.name) } } } }
            div.field { label for="jwt_claims" { "Conditions (CLAIM=PATTERN, one a line; e.g. repository=acme/app)" }
                textarea id="jwt_claims" name="claims" rows="3" cols="50" required {} }
            div.field { label for="jwt_identity_claim" { "Identity claim" } input type="text" id="jwt_identity_claim" name="identity_claim" value="sub" required maxlength="64"; }
            button type="submit" id="save_jwt_mapping" { "Save JWT mapping" }
        }
        h2 { "Add or replace a certificate mapping" }
        form method="post" action="/admin/machines/mappings/cert" {
            (csrf_field(csrf))
            (mapping_fields("cert"))
            div.field { label for="cert_ca" { "Approved CAs (PEM)" } textarea id="cert_ca" name="ca_pem" rows="6" cols="64" required {} }
            div.field { label for="cert_from" { "Identity from" }
                select id="cert_from" name="identity_from" { option value="cn" { "the subject's CN" } option value="email" { "an e-mail address" } option value="upn" { "a UPN" } } }
            button type="submit" id="save_cert_mapping" { "Save certificate mapping" }
        }
    })
}

fn mapping_fields(prefix: &str) -> Markup {
    let id = |f: &str| format!("{prefix}_{f}");
    html! {
        div.field { label for=(id("name")) { "Name" } input type="text" id=(id("name")) name="name" required maxlength="64"; }
        div.field { label for=(id("clients")) { "Integrations its identities may use (client ids, comma-separated)" } input type="text" id=(id("clients")) name="clients" required size="40"; }
        div.field { label for=(id("scope")) { "Maximum scope" } input type="text" id=(id("scope")) name="scope" required maxlength="1000" size="30"; }
    }
}

async fn show(ctx: &Ctx, outcome: Option<Result<String, ConsoleError>>) -> Response {
    match (body(ctx).await, outcome) {
        (Ok(page), None) => ctx.page(Nav::Machines, TITLE, page),
        (Ok(page), Some(o)) => ctx.after(o, Nav::Machines, TITLE, page),
        (Err(e), _) => ctx.problem(e, Nav::Machines, TITLE, html! {}),
    }
}

/// JWT issuers and mappings.
#[utoipa::path(get, path = "/admin/machines", tag = "admin console", operation_id = "console_machines", responses(PageAnswers))]
pub(crate) async fn page(ctx: Ctx) -> Response {
    if !ctx.standing.master_admin() {
        return ctx.forbidden(Nav::Machines);
    }
    show(&ctx, None).await
}

/// What a confirmation page names.
#[derive(Deserialize, utoipa::IntoParams, Default)]
#[into_params(parameter_in = Query)]
pub(crate) struct MachineQuery {
    /// The issuer's or mapping's name.
    name: Option<String>,
}

/// The form of the machine-identity posts (a description).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub(crate) struct ConsoleMachineForm {
    /// The anti-forgery token (equal to the cookie's).
    csrf: String,
    /// The issuer's or mapping's name.
    name: String,
    /// Issuer: the tokens' `iss`.
    issuer: Option<String>,
    /// Issuer: `discovery` or `jwks_url`.
    keys: Option<String>,
    /// Issuer: the discovery or JWKS URL.
    url: Option<String>,
    /// Issuer: audiences, comma-separated.
    audiences: Option<String>,
    /// Issuer: algorithms, comma-separated.
    algorithms: Option<String>,
    /// Issuer: seconds.
    clock_skew: Option<String>,
    /// Issuer: seconds.
    max_lifetime: Option<String>,
    /// Mapping: client ids, comma-separated.
    clients: Option<String>,
    /// Mapping: the maximum scope.
    scope: Option<String>,
    /// JWT mapping: `CLAIM=PATTERN`, one a line.
    claims: Option<String>,
    /// JWT mapping: the claim naming the identity.
    identity_claim: Option<String>,
    /// Certificate mapping: the approved CAs, PEM.
    ca_pem: Option<String>,
    /// Certificate mapping: `cn`, `email` or `upn`.
    identity_from: Option<String>,
}

fn seconds(form: &Form, field: &str) -> Result<Option<i64>, AdminError> {
    match form.get(field) {
        "" => Ok(None),
        v => v.parse().map(Some).map_err(|_| AdminError::Invalid(format!("{field}: a number of seconds"))),
    }
}

fn mapping_spec(form: &Form) -> MappingSpec {
    MappingSpec { name: form.get("name").to_owned(), clients: form.list("clients"), scope: form.get("scope").to_owned() }
}

async fn save(ctx: &Ctx, form: &Form, what: &str) -> Result<String, AdminError> {
    let admin = ctx.admin();
    match what {
        "issuer" => {
            let url = form.get("url");
            let url = (!url.is_empty()).then(|| url.to_owned());
            let discovery = form.get("keys") != "jwks_url";
            let spec = IssuerSpec {
                name: form.get("name").to_owned(),
                issuer: form.get("issuer").to_owned(),
                jwks_url: if discovery { None } else { url.clone() },
                discovery_url: if discovery { url } else { None },
                discovery,
                jwks_file: None,
                audiences: form.list("audiences"),
                algorithms: Some(form.get("algorithms").to_owned()).filter(|a| !a.is_empty()),
                clock_skew: seconds(form, "clock_skew")?,
                max_lifetime: seconds(form, "max_lifetime")?,
            };
            admin.save_jwt_issuer(spec).await.map(|j| format!("Issuer {} saved.", j.name))
        }
        "jwt" => {
            let claims: Vec<String> = form.get("claims").lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_owned).collect();
            admin
                .save_jwt_mapping(mapping_spec(form), form.get("issuer"), &claims, form.get("identity_claim"))
                .await
                .map(|m| format!("Mapping {} saved.", m.name))
        }
        _ => admin
            .save_cert_mapping(mapping_spec(form), form.get("ca_pem").to_owned(), form.get("identity_from"))
            .await
            .map(|m| format!("Mapping {} saved.", m.name)),
    }
}

async fn act(Posted(ctx, form): Posted, what: &str) -> Response {
    if !ctx.standing.master_admin() {
        return ctx.forbidden(Nav::Machines);
    }
    let name = form.get("name");
    let outcome = match what {
        "remove_issuer" => ctx.admin().remove_jwt_issuer(name).await.map(|()| format!("Issuer {name} removed.")),
        "remove_mapping" => ctx
            .admin()
            .remove_mapping(name)
            .await
            .map(|n| format!("Mapping {name} removed; {} of its identities ended.", count(n, "live grant", "live grants"))),
        what => save(&ctx, &form, what).await,
    };
    show(&ctx, Some(outcome.map_err(ConsoleError::from))).await
}

/// Add or replace a trusted JWT issuer.
#[utoipa::path(post, path = "/admin/machines/issuers", tag = "admin console", operation_id = "console_issuer_save",
    request_body(content = ConsoleMachineForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Saved; the page again.", body = String, content_type = "text/html"), PostRefusals))]
pub(crate) async fn save_issuer(posted: Posted) -> Response {
    act(posted, "issuer").await
}

/// Add or replace a JWT mapping.
#[utoipa::path(post, path = "/admin/machines/mappings/jwt", tag = "admin console", operation_id = "console_jwt_mapping_save",
    request_body(content = ConsoleMachineForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Saved; the page again.", body = String, content_type = "text/html"), PostRefusals))]
pub(crate) async fn save_jwt_mapping(posted: Posted) -> Response {
    act(posted, "jwt").await
}

/// Add or replace a certificate mapping.
#[utoipa::path(post, path = "/admin/machines/mappings/cert", tag = "admin console", operation_id = "console_cert_mapping_save",
    request_body(content = ConsoleMachineForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Saved; the page again.", body = String, content_type = "text/html"), PostRefusals))]
pub(crate) async fn save_cert_mapping(posted: Posted) -> Response {
    act(posted, "cert").await
}

/// Asks before removing an issuer: the mappings that use it (which keep it).
#[utoipa::path(
    get,
    path = "/admin/machines/issuers/remove",
    tag = "admin console",
    operation_id = "console_issuer_remove_confirm",
    params(MachineQuery),
    responses(PageAnswers)
)]
pub(crate) async fn confirm_remove_issuer(Query(q): Query<MachineQuery>, ctx: Ctx) -> Response {
    if !ctx.standing.master_admin() {
        return ctx.forbidden(Nav::Machines);
    }
    let name = q.name.as_deref().unwrap_or("").trim();
    let admin = ctx.admin();
    let read = async { Ok::<_, AdminError>((admin.jwt_issuers().await?, admin.mappings().await?)) };
    let (issuers, mappings) = match read.await {
        Ok(r) => r,
        Err(e) => return show(&ctx, Some(Err(e.into()))).await,
    };
    let Some(j) = issuers.into_iter().find(|j| j.name == name) else {
        return show(&ctx, Some(Err(ConsoleError::NotFound(format!("issuer {name}"))))).await;
    };
    let users: Vec<String> = mappings
        .iter()
        .filter(|m| matches!(&m.rule, MappingRule::Jwt { issuer, .. } if *issuer == j.name))
        .map(|m| m.name.clone())
        .collect();
    ctx.confirm(Confirm {
        nav: Nav::Machines,
        title: &format!("Remove issuer {name}?"),
        consequences: html! {
            @if users.is_empty() {
                p { "This will end the trust in JWTs of " code { (j.issuer) } ": no mapping uses it, so no identity loses anything now." }
            } @else {
                p.error { "No mapping may use an issuer that goes: " (count(users.len() as u64, "mapping uses", "mappings use")) " it (" (users.join(", ")) "). Remove "
                    @if users.len() == 1 { "it" } @else { "them" } " first; removing the issuer now will be refused." }
            }
        },
        action: "/admin/machines/issuers/remove",
        fields: &[("name", name)],
        button: &format!("Remove issuer {name}"),
        back: "/admin/machines",
    })
}

/// Remove a JWT issuer no mapping uses.
#[utoipa::path(post, path = "/admin/machines/issuers/remove", tag = "admin console", operation_id = "console_issuer_remove",
    request_body(content = ConsoleMachineForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Removed; the page again.", body = String, content_type = "text/html"), PostRefusals))]
pub(crate) async fn remove_issuer(posted: Posted) -> Response {
    act(posted, "remove_issuer").await
}

/// Asks before removing a mapping: the live grants of its identities that end.
#[utoipa::path(
    get,
    path = "/admin/machines/mappings/remove",
    tag = "admin console",
    operation_id = "console_mapping_remove_confirm",
    params(MachineQuery),
    responses(PageAnswers)
)]
pub(crate) async fn confirm_remove_mapping(Query(q): Query<MachineQuery>, ctx: Ctx) -> Response {
    if !ctx.standing.master_admin() {
        return ctx.forbidden(Nav::Machines);
    }
    let name = q.name.as_deref().unwrap_or("").trim();
    let admin = ctx.admin();
    let read = async { Ok::<_, AdminError>((admin.mappings().await?, admin.list_grants(false).await?)) };
    let (mappings, grants) = match read.await {
        Ok(r) => r,
        Err(e) => return show(&ctx, Some(Err(e.into()))).await,
    };
    let Some(m) = mappings.into_iter().find(|m| m.name == name) else {
        return show(&ctx, Some(Err(ConsoleError::NotFound(format!("mapping {name}"))))).await;
    };
    let p = prefix(&m);
    let mut who: Vec<&str> = grants.iter().filter(|g| g.user_name.starts_with(&p)).map(|g| g.user_name.as_str()).collect();
    let n = who.len() as u64;
    who.sort_unstable();
    who.dedup();
    ctx.confirm(Confirm {
        nav: Nav::Machines,
        title: &format!("Remove mapping {name}?"),
        consequences: html! {
            p { "This will end " strong { (count(n, "live grant", "live grants")) } " of its identities"
                @if !who.is_empty() { " (" (who.join(", ")) ")" }
                " at once, and no " (rule(&m)) " can get a token any more. Rights granted to its identities stay, for a mapping of that name again." }
        },
        action: "/admin/machines/mappings/remove",
        fields: &[("name", name)],
        button: &format!("Remove mapping {name}"),
        back: "/admin/machines",
    })
}

/// Remove a mapping: its identities' live grants end.
#[utoipa::path(post, path = "/admin/machines/mappings/remove", tag = "admin console", operation_id = "console_mapping_remove",
    request_body(content = ConsoleMachineForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Removed; the page again.", body = String, content_type = "text/html"), PostRefusals))]
pub(crate) async fn remove_mapping(posted: Posted) -> Response {
    act(posted, "remove_mapping").await
}
