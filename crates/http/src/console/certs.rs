//! Certificate authorities and folder certificate policies (Master
//! Admins only, as `strongroom admin ca` and `admin policy`, which
//! run on the store only).
//!
//! - `/admin/cas`: the CAs (name, root / intermediate / pending, algorithm,
//!   where the key lives, subject, not after) and a form creating a root CA
//!   with a key sealed by the key ring or made in a configured PKCS#11 key's
//!   token: `Admin::create_ca`, the CLI's act (its checks, its `ca.created`
//!   event, naming the signed-in person).
//! - `/admin/cas/show?name=`: one CA: its facts, its certificate and chain
//!   (PEM, and as downloads from `/admin/cas/pem`), its CRL's URL.
//! - `/admin/policies?folder=`: a `\VED\Policy` folder's own policy and the
//!   one in force there (locked or default; without a folder, `\VED\Policy`'s),
//!   and a form setting values of its own: `Admin::set_cert_policy`, the
//!   CLI's act (`cert.policy.set`).
//!
//! Intermediates (a CSR out, a certificate in) stay with the CLI.

use axum::extract::Query;
use axum::response::{IntoResponse as _, Response};
use maud::{Markup, html};
use serde::Deserialize;

use strongroom_app::admin::AdminError;
use strongroom_app::admin::certs::{CaInfo, PolicyChange};
use strongroom_app::service::certificates as svc;
use strongroom_app::service::console::ConsoleError;
use strongroom_core::cert::{CA_FOLDER, Policy, Setting};
use strongroom_core::time::UnixTime;
use strongroom_core::vault::FolderPath;

use super::{Ctx, Form, Nav, PageAnswers, PostRefusals, Posted, count, csrf_field, query};
use crate::respond::Console;

const CAS: &str = "Certificate authorities";
const POLICIES: &str = "Certificate policies";

fn not_after(c: &CaInfo) -> String {
    c.facts.as_ref().map_or_else(|| "not installed".to_owned(), |f| UnixTime::from_secs(f.not_after).iso8601())
}

/// Where the key lives: `software, sealed by Software:Default` or `token PKCS11:hsm, label …`.
fn key_place(c: &CaInfo) -> String {
    match c.key.strip_prefix("in the token of ") {
        Some(key) => format!("token {key}, label {}", svc::token_label(&c.name)),
        None => format!("software, {}", c.key),
    }
}

fn ca_link(name: &str) -> String {
    format!("/admin/cas/show?{}", query(&[("name", name)]))
}

async fn cas_body(ctx: &Ctx) -> Result<Markup, ConsoleError> {
    let admin = ctx.admin();
    let cas = admin.cas().await?;
    let tokens: Vec<String> = admin
        .named_keys()
        .await?
        .into_iter()
        .filter(|k| k.location.is_some() && k.name.to_ascii_lowercase().starts_with("pkcs11:"))
        .map(|k| k.name)
        .collect();
    Ok(html! {
        table #cas {
            caption.muted { (count(cas.len() as u64, "CA", "CAs")) }
            thead { tr { th scope="col" { "Name" } th scope="col" { "Kind" } th scope="col" { "Algorithm" } th scope="col" { "Key" }
                th scope="col" { "Subject" } th scope="col" { "Not after" } } }
            tbody {
                @for c in &cas {
                    tr {
                        th scope="row" { a href=(ca_link(&c.name)) { (c.name) } }
                        td { (c.kind()) }
                        td { (c.algorithm) }
                        td { (key_place(c)) }
                        td { code { (c.subject) } }
                        td { (not_after(c)) }
                    }
                }
            }
        }
        h2 { "Create a root CA" }
        p.muted { "A new key and its self-signed certificate (ten years). Policies and requests name it by its DN, "
            code { (CA_FOLDER) "\\NAME" } ". An intermediate (its CSR signed by an offline root) is made with "
            code { "strongroom admin ca create --intermediate" } "." }
        form method="post" action="/admin/cas/create" {
            (csrf_field(&ctx.csrf))
            div.field { label for="ca_name" { "Name (letters, digits, spaces, . _ -)" } input type="text" id="ca_name" name="name" required maxlength="64"; }
            div.field { label for="ca_algorithm" { "Key algorithm" }
                select id="ca_algorithm" name="algorithm" {
                    option value="p256" { "ECDSA P-256" } option value="p384" { "ECDSA P-384" }
                    option value="rsa2048" { "RSA 2048" } option value="rsa3072" { "RSA 3072" } option value="rsa4096" { "RSA 4096" }
                } }
            div.field { label for="ca_subject" { "Subject (CN, O, OU, L, ST, C; empty: CN=NAME)" } input type="text" id="ca_subject" name="subject" maxlength="1000" size="50"; }
            div.field { label for="ca_validity" { "Validity of the certificates it issues (days, 1-3650)" } input type="number" id="ca_validity" name="validity_days" value=(svc::DEFAULT_VALIDITY_DAYS) min="1" max="3650"; }
            div.field { label for="ca_key" { "Where its key lives" }
                select id="ca_key" name="key" {
                    option value="" { "software: sealed by the key ring" }
                    @for t in &tokens { option value=(t) { "in the token of " (t) " (never leaves it)" } }
                } }
            button type="submit" id="create_ca" { "Create CA" }
        }
    })
}

async fn show_cas(ctx: &Ctx, outcome: Option<Result<String, ConsoleError>>) -> Response {
    match (cas_body(ctx).await, outcome) {
        (Ok(page), None) => ctx.page(Nav::Cas, CAS, page),
        (Ok(page), Some(o)) => ctx.after(o, Nav::Cas, CAS, page),
        (Err(e), _) => ctx.problem(e, Nav::Cas, CAS, html! {}),
    }
}

/// The CAs, and a form creating a root CA.
#[utoipa::path(get, path = "/admin/cas", tag = "admin console", operation_id = "console_cas", responses(PageAnswers))]
pub(crate) async fn cas(ctx: Ctx) -> Response {
    if !ctx.standing.master_admin() {
        return ctx.forbidden(Nav::Cas);
    }
    show_cas(&ctx, None).await
}

/// The form of `POST /admin/cas/create` (a description).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub(crate) struct ConsoleCaForm {
    /// The anti-forgery token (equal to the cookie's).
    csrf: String,
    /// The CA's name (its DN is `\VED\Policy\CA Templates\NAME`).
    name: String,
    /// `p256` (default), `p384`, `rsa2048`, `rsa3072` or `rsa4096`.
    algorithm: Option<String>,
    /// The CA's subject; empty: `CN=NAME`.
    subject: Option<String>,
    /// How long the certificates it issues last, in days.
    validity_days: Option<String>,
    /// A configured PKCS#11 key (`PKCS11:NAME`) whose token makes the CA's key; empty: sealed by the key ring.
    key: Option<String>,
}

/// Create a root CA (`strongroom admin ca create`).
#[utoipa::path(post, path = "/admin/cas/create", tag = "admin console", operation_id = "console_ca_create",
    request_body(content = ConsoleCaForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Created; the CAs again.", body = String, content_type = "text/html"), PostRefusals))]
pub(crate) async fn create(Posted(ctx, form): Posted) -> Response {
    if !ctx.standing.master_admin() {
        return ctx.forbidden(Nav::Cas);
    }
    let outcome = async {
        let days = match form.get("validity_days") {
            "" => None,
            v => Some(v.parse::<i64>().map_err(|_| AdminError::Invalid("validity: a number of days".into()))?),
        };
        let algorithm = Some(form.get("algorithm")).filter(|a| !a.is_empty()).unwrap_or("p256");
        let subject = Some(form.get("subject")).filter(|s| !s.is_empty());
        let key = Some(form.get("key")).filter(|k| !k.is_empty());
        let c = ctx.admin().create_ca(form.get("name"), algorithm, subject, days, key, false).await?;
        Ok::<_, AdminError>(format!("CA {} created: {} ({}).", c.name, c.dn, key_place(&c)))
    }
    .await;
    show_cas(&ctx, Some(outcome.map_err(ConsoleError::from))).await
}

/// The CA a page names.
#[derive(Deserialize, utoipa::IntoParams, Default)]
#[into_params(parameter_in = Query)]
pub(crate) struct CaQuery {
    /// The CA's name (or DN).
    name: Option<String>,
    /// `/admin/cas/pem`: `1` for its certificate and those above it up to the root.
    chain: Option<String>,
}

/// The CA `q` names, for a Master Admin; else the page to answer (forbidden, or the CA list
/// with the error).
async fn asked_ca(q: &CaQuery, ctx: &Ctx) -> Result<CaInfo, Response> {
    if !ctx.standing.master_admin() {
        return Err(ctx.forbidden(Nav::Cas));
    }
    match ctx.admin().ca(q.name.as_deref().unwrap_or("").trim()).await {
        Ok(c) => Ok(c),
        Err(e) => Err(show_cas(ctx, Some(Err(e.into()))).await),
    }
}

/// One CA: its facts, certificate, chain and CRL URL.
#[utoipa::path(get, path = "/admin/cas/show", tag = "admin console", operation_id = "console_ca", params(CaQuery), responses(PageAnswers))]
pub(crate) async fn ca(Query(q): Query<CaQuery>, ctx: Ctx) -> Response {
    let c = match asked_ca(&q, &ctx).await {
        Ok(c) => c,
        Err(page) => return page,
    };
    let f = c.facts.as_ref();
    let pem_link = |chain: bool| {
        let mut pairs = vec![("name", c.name.as_str())];
        if chain {
            pairs.push(("chain", "1"));
        }
        format!("/admin/cas/pem?{}", query(&pairs))
    };
    let body = html! {
        table #facts {
            tbody {
                tr { th scope="row" { "DN" } td { code { (c.dn) } } }
                tr { th scope="row" { "Kind" } td #kind { (c.kind()) } }
                tr { th scope="row" { "Algorithm" } td { (c.algorithm) } }
                tr { th scope="row" { "Key" } td #key { (key_place(&c)) } }
                tr { th scope="row" { "Subject" } td { code { (c.subject) } } }
                @if let Some(f) = f {
                    tr { th scope="row" { "Issuer" } td { code { (f.issuer) } } }
                    tr { th scope="row" { "Serial" } td { code { (f.serial) } } }
                    tr { th scope="row" { "Thumbprint (SHA-1)" } td { code { (f.thumbprint) } } }
                    tr { th scope="row" { "Not before" } td { (UnixTime::from_secs(f.not_before).iso8601()) } }
                }
                tr { th scope="row" { "Not after" } td { (not_after(&c)) } }
                tr { th scope="row" { "Issues certificates for" } td { (count(c.validity_days.unsigned_abs(), "day", "days")) " (unless a folder policy says)" } }
                tr { th scope="row" { "CRL" } td { @if c.chain.is_empty() { span.muted { "none until its certificate is installed" } }
                    @else { code #crl { (svc::crl_url(&ctx.app.public_url, &c.name)) } } } }
            }
        }
        @if c.chain.is_empty() {
            p.notice { "This intermediate waits for its certificate: sign its CSR (" code { "strongroom admin ca csr" } ") with the offline root, then "
                code { "strongroom admin ca install" } "." }
        } @else {
            h2 { "Certificate" }
            p { a href=(pem_link(false)) download id="download_pem" { "Download " (c.name) ".pem" } }
            pre #pem { (c.pem()) }
            h2 { "Chain" }
            p { (count(c.chain.len() as u64, "certificate", "certificates")) ", this CA's first, up to the root. "
                a href=(pem_link(true)) download id="download_chain" { "Download the chain" } }
            pre #chain { (c.chain_pem()) }
        }
        p { a href="/admin/cas" { "All CAs" } }
    };
    ctx.page(Nav::Cas, &format!("CA {}", c.name), body)
}

/// A CA's certificate (or, with `chain=1`, its chain) as a PEM file.
#[utoipa::path(get, path = "/admin/cas/pem", tag = "admin console", operation_id = "console_ca_pem", params(CaQuery),
    responses((status = 200, description = "The PEM file (an attachment).", body = String, content_type = "application/x-pem-file"), PageAnswers))]
pub(crate) async fn pem(Query(q): Query<CaQuery>, ctx: Ctx) -> Response {
    let c = match asked_ca(&q, &ctx).await {
        Ok(c) => c,
        Err(page) => return page,
    };
    let chain = q.chain.as_deref() == Some("1");
    let text = if chain { c.chain_pem() } else { c.pem() };
    if text.is_empty() {
        return show_cas(&ctx, Some(Err(ConsoleError::NotFound(format!("the certificate of CA {} (not installed yet)", c.name))))).await;
    }
    let file: String = c.name.chars().map(|ch| if ch.is_ascii_alphanumeric() || ".-_".contains(ch) { ch } else { '_' }).collect();
    let file = if chain { format!("{file}-chain.pem") } else { format!("{file}.pem") };
    Console::File(file, text).into_response()
}

fn setting<T: std::fmt::Display>(s: &Option<Setting<T>>) -> Markup {
    match s {
        Some(x) if x.locked => html! { (x.value) " " strong { "(locked)" } },
        Some(x) => html! { (x.value) " " span.muted { "(default)" } },
        None => html! { span.muted { "-" } },
    }
}

/// A policy as `admin policy show` prints it.
fn policy_table(id: &str, p: &Policy) -> Markup {
    let ou = p.organizational_unit.as_ref().map(|s| Setting { value: s.value.join(", "), locked: s.locked });
    let curve = p.curve.as_ref().map(|s| Setting { value: s.value.as_str(), locked: s.locked });
    html! {
        table id=(id) {
            tbody {
                tr { th scope="row" { "Issuing CA" } td { (setting(&p.ca)) } }
                tr { th scope="row" { "Key algorithm" } td { (setting(&p.key_algorithm)) } }
                tr { th scope="row" { "Key size" } td { (setting(&p.key_size)) } }
                tr { th scope="row" { "Curve" } td { (setting(&curve)) } }
                tr { th scope="row" { "Domains" } td { (p.domains.as_ref().filter(|d| !d.is_empty()).map_or("any".into(), |d| d.join(", "))) } }
                tr { th scope="row" { "Wildcards" } td { (if p.wildcards.unwrap_or(true) { "allowed" } else { "not allowed" }) } }
                tr { th scope="row" { "Organization" } td { (setting(&p.organization)) } }
                tr { th scope="row" { "Organizational unit" } td { (setting(&ou)) } }
                tr { th scope="row" { "City" } td { (setting(&p.city)) } }
                tr { th scope="row" { "State" } td { (setting(&p.state)) } }
                tr { th scope="row" { "Country" } td { (setting(&p.country)) } }
                tr { th scope="row" { "Validity (days)" } td { (p.validity_days.map_or("-".into(), |v| v.to_string())) } }
                tr { th scope="row" { "Manual approval" } td { (setting(&p.manual_approval)) } }
            }
        }
    }
}

fn policy_folders(all: Vec<FolderPath>) -> Vec<FolderPath> {
    let ca = CA_FOLDER.to_ascii_lowercase();
    let mut out: Vec<FolderPath> = all
        .into_iter()
        .filter(|f| {
            let k = f.key();
            (k == "\\ved\\policy" || k.starts_with("\\ved\\policy\\")) && k != ca && !k.starts_with(&format!("{ca}\\"))
        })
        .collect();
    if !out.iter().any(|f| f.key() == "\\ved\\policy") {
        out.push(FolderPath::policy_root());
    }
    out.sort_by(|a, b| a.key().cmp(b.key()));
    out
}

async fn policy_body(ctx: &Ctx, folder: &str) -> Result<Markup, ConsoleError> {
    let admin = ctx.admin();
    let folders = policy_folders(admin.folders().await?);
    let cas = admin.cas().await?;
    // No folder picked yet: the root's, which every folder inherits.
    let root = FolderPath::policy_root();
    let folder = if folder.is_empty() { root.as_str() } else { folder };
    let (own, effective) = admin.cert_policy(folder).await?;
    let folder = FolderPath::parse(folder).ok().map(|f| f.as_str().to_owned()).unwrap_or_default();
    Ok(html! {
        p.muted { "A folder's policy binds the certificates requested in it and below it; a value is " strong { "locked" }
            " (a request must meet it) or a " span.muted { "default" } " (used when a request says nothing). Clients read the one in force with "
            code { "Certificates/CheckPolicy" } "." }
        form method="get" action="/admin/policies" {
            label for="policy_folder" { "Folder" }
            select id="policy_folder" name="folder" {
                @for f in &folders { option value=(f.as_str()) selected[f.as_str() == folder] { (f.as_str()) } }
            }
            " " button.secondary type="submit" id="show_policy" { "Show" }
        }
        h2 { "In force in " code { (folder) } }
        (policy_table("effective", &effective))
        h2 { "Set on " code { (folder) } " itself" }
        (policy_table("own", &own))
        h2 { "Change the policy of " code { (folder) } }
        p.muted { "Fields left empty stay as they are; the folders below inherit what is set here." }
        form method="post" action="/admin/policies/set" {
            (csrf_field(&ctx.csrf))
            input type="hidden" name="folder" value=(folder);
            div.field { label for="p_ca" { "Issuing CA" }
                select id="p_ca" name="ca" { option value="" { "(unchanged)" } @for c in &cas { option value=(c.name) { (c.name) } } } }
            div.field { label for="p_key_algorithm" { "Key algorithm" }
                select id="p_key_algorithm" name="key_algorithm" { option value="" { "(unchanged)" } option value="RSA" { "RSA" } option value="ECC" { "ECC" } } }
            div.field { label for="p_key_size" { "RSA key size (locked: the least accepted)" }
                select id="p_key_size" name="key_size" { option value="" { "(unchanged)" } @for s in ["2048", "3072", "4096", "8192"] { option value=(s) { (s) } } } }
            div.field { label for="p_curve" { "Curve" }
                select id="p_curve" name="curve" { option value="" { "(unchanged)" } @for s in ["P256", "P384", "P521"] { option value=(s) { (s) } } } }
            div.field { label for="p_domains" { "Domains CNs and DNS names must fall under (comma-separated)" } input type="text" id="p_domains" name="domains" size="50" maxlength="4000"; }
            div.field { input type="checkbox" id="p_any_domain" name="any_domain" value="1"; label.inline for="p_any_domain" { "Any domain (clears the list)" } }
            div.field { label for="p_wildcards" { "Wildcards" }
                select id="p_wildcards" name="wildcards" { option value="" { "(unchanged)" } option value="true" { "allowed" } option value="false" { "not allowed" } } }
            div.field { label for="p_organization" { "Organization" } input type="text" id="p_organization" name="organization" maxlength="200"; }
            div.field { label for="p_ou" { "Organizational units (comma-separated)" } input type="text" id="p_ou" name="organizational_unit" maxlength="1000"; }
            div.field { label for="p_city" { "City" } input type="text" id="p_city" name="city" maxlength="200"; }
            div.field { label for="p_state" { "State" } input type="text" id="p_state" name="state" maxlength="200"; }
            div.field { label for="p_country" { "Country (two letters)" } input type="text" id="p_country" name="country" maxlength="2" size="3"; }
            div.field { label for="p_validity" { "Validity of certificates issued here (days, 1-3650)" } input type="number" id="p_validity" name="validity_days" min="1" max="3650"; }
            div.field { label for="p_manual_approval" { "Manual approval (requests wait for an approver: " a href="/admin/certificates/pending" { "Pending certificates" } ")" }
                select id="p_manual_approval" name="manual_approval" { option value="" { "(unchanged)" } option value="true" { "required" } option value="false" { "not required" } } }
            div.field { input type="checkbox" id="p_locked" name="locked" value="1"; label.inline for="p_locked" { "Lock every value given here (otherwise each is a default; domains and wildcards always bind)" } }
            button type="submit" id="set_policy" { "Set policy" }
        }
    })
}

async fn show_policy(ctx: &Ctx, folder: &str, outcome: Option<Result<String, ConsoleError>>) -> Response {
    match policy_body(ctx, folder).await {
        Ok(page) => match outcome {
            None => ctx.page(Nav::Policies, POLICIES, page),
            Some(o) => ctx.after(o, Nav::Policies, POLICIES, page),
        },
        Err(e) => {
            let e = match outcome {
                Some(Err(first)) => first,
                _ => e,
            };
            let back = policy_body(ctx, "").await.unwrap_or_else(|_| html! {});
            ctx.problem(e, Nav::Policies, POLICIES, back)
        }
    }
}

/// The folder a policy page shows.
#[derive(Deserialize, utoipa::IntoParams, Default)]
#[into_params(parameter_in = Query)]
pub(crate) struct PolicyQuery {
    /// A folder under `\VED\Policy`.
    folder: Option<String>,
}

/// A folder's certificate policy: its own and the one in force, and a form changing it.
#[utoipa::path(
    get,
    path = "/admin/policies",
    tag = "admin console",
    operation_id = "console_policies",
    params(PolicyQuery),
    responses(PageAnswers)
)]
pub(crate) async fn policies(Query(q): Query<PolicyQuery>, ctx: Ctx) -> Response {
    if !ctx.standing.master_admin() {
        return ctx.forbidden(Nav::Policies);
    }
    show_policy(&ctx, q.folder.as_deref().unwrap_or("").trim(), None).await
}

/// The form of `POST /admin/policies/set` (a description; empty fields stay as they are).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub(crate) struct ConsolePolicyForm {
    /// The anti-forgery token (equal to the cookie's).
    csrf: String,
    /// A folder under `\VED\Policy`.
    folder: String,
    /// The issuing CA (name or DN).
    ca: Option<String>,
    /// `RSA` or `ECC`.
    key_algorithm: Option<String>,
    key_size: Option<String>,
    /// `P256`, `P384` or `P521`.
    curve: Option<String>,
    /// Comma-separated.
    domains: Option<String>,
    /// `1`: any domain (the list cleared).
    any_domain: Option<String>,
    /// `true` or `false`.
    wildcards: Option<String>,
    organization: Option<String>,
    /// Comma-separated.
    organizational_unit: Option<String>,
    city: Option<String>,
    state: Option<String>,
    country: Option<String>,
    validity_days: Option<String>,
    /// `true` or `false`: requests wait for an approver.
    manual_approval: Option<String>,
    /// `1`: every value given is locked.
    locked: Option<String>,
}

fn text(form: &Form, name: &str) -> Option<String> {
    Some(form.get(name)).filter(|v| !v.is_empty()).map(str::to_owned)
}

fn number(form: &Form, name: &str, what: &str) -> Result<Option<u32>, AdminError> {
    text(form, name).map(|v| v.parse().map_err(|_| AdminError::Invalid(format!("{what}: a number")))).transpose()
}

fn change(form: &Form) -> Result<PolicyChange, AdminError> {
    let wildcards = match form.get("wildcards") {
        "" => None,
        "true" => Some(true),
        "false" => Some(false),
        other => return Err(AdminError::Invalid(format!("wildcards {other:?}: true or false"))),
    };
    let manual_approval = match form.get("manual_approval") {
        "" => None,
        "true" => Some(true),
        "false" => Some(false),
        other => return Err(AdminError::Invalid(format!("manual approval {other:?}: true or false"))),
    };
    let domains = if form.ticked("any_domain") { Some(Vec::new()) } else { Some(form.list("domains")).filter(|d| !d.is_empty()) };
    let ou = Some(form.list("organizational_unit")).filter(|d| !d.is_empty());
    Ok(PolicyChange {
        ca: text(form, "ca"),
        key_algorithm: text(form, "key_algorithm"),
        key_size: number(form, "key_size", "key size")?,
        curve: text(form, "curve"),
        domains,
        wildcards,
        organization: text(form, "organization"),
        organizational_unit: ou,
        city: text(form, "city"),
        state: text(form, "state"),
        country: text(form, "country"),
        validity_days: number(form, "validity_days", "validity")?,
        manual_approval,
        prohibited_san_types: None,
        locked: form.ticked("locked"),
    })
}

/// Set values of a folder's certificate policy (`strongroom admin policy set`).
#[utoipa::path(post, path = "/admin/policies/set", tag = "admin console", operation_id = "console_policy_set",
    request_body(content = ConsolePolicyForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Set; the folder's policy again.", body = String, content_type = "text/html"), PostRefusals))]
pub(crate) async fn set_policy(Posted(ctx, form): Posted) -> Response {
    if !ctx.standing.master_admin() {
        return ctx.forbidden(Nav::Policies);
    }
    let folder = form.get("folder");
    let outcome = match change(&form) {
        Ok(c) => ctx.admin().set_cert_policy(folder, c).await.map(|_| format!("Policy of {folder} set.")),
        Err(e) => Err(e),
    };
    show_policy(&ctx, folder, Some(outcome.map_err(ConsoleError::from))).await
}
