//! Certificate requests waiting for approval (Master Admins only,
//! as `strongroom admin certificates pending|approve|reject`, which run on the
//! store only).
//!
//! - `/admin/certificates/pending`: the requests a CA's or a folder policy's
//!   `Manual Approval` holds (DN, CA, who asked, when, state), each with an
//!   Approve and a Reject link.
//! - `GET /admin/certificates/approve?dn=&version=`: asks first (the request's
//!   facts); its form posts the version shown, so an approval never issues a
//!   request that changed after the page was read. `POST` approves:
//!   `Admin::approve_certificate`, the CLI's act (one conditional write; its
//!   `certificate.approved` and `certificate.issued` events name the
//!   signed-in person).
//! - `GET /admin/certificates/reject?dn=&version=`: asks for the reason;
//!   `POST` rejects: `Admin::reject_certificate` (`certificate.rejected`).

use axum::extract::Query;
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;

use strongroom_app::service::certificates as svc;
use strongroom_app::service::console::ConsoleError;
use strongroom_store::PendingRecord;

use super::{Ctx, Nav, PageAnswers, PostRefusals, Posted, count, csrf_field, query};

const PENDING: &str = "Pending certificates";

fn act_link(path: &str, p: &PendingRecord) -> String {
    let version = p.version.to_string();
    format!("{path}?{}", query(&[("dn", p.path.as_str()), ("version", &version)]))
}

async fn pending_body(ctx: &Ctx) -> Result<Markup, ConsoleError> {
    let all = ctx.admin().pending_certificates().await?;
    Ok(html! {
        p.muted { "Requests a CA's or a folder policy's " strong { "Manual Approval" } " holds: nothing is issued until one is approved. "
            "Clients see " code { "Certificates/Retrieve" } " answer 202 (Stage " (svc::PENDING_STAGE) ") meanwhile, and the product's failed shape after a rejection." }
        table #pending {
            caption.muted { (count(all.len() as u64, "request", "requests")) }
            thead { tr { th scope="col" { "Certificate" } th scope="col" { "CA" } th scope="col" { "Requested by" }
                th scope="col" { "At" } th scope="col" { "State" } th scope="col" { "" } } }
            tbody {
                @for p in &all {
                    tr {
                        th scope="row" { code { (p.path.as_str()) } }
                        td { (p.ca_key) }
                        td { code { (p.requested_by) } }
                        td { (p.requested_at.iso8601()) }
                        td { @if p.rejected { strong { "rejected" } ": " (p.status) } @else { "waiting" @if p.renewal { " (renewal)" } } }
                        td { @if !p.rejected {
                            a href=(act_link("/admin/certificates/approve", p)) { "Approve…" } " "
                            a href=(act_link("/admin/certificates/reject", p)) { "Reject…" } } }
                    }
                }
            }
        }
    })
}

async fn show(ctx: &Ctx, outcome: Option<Result<String, ConsoleError>>) -> Response {
    match (pending_body(ctx).await, outcome) {
        (Ok(page), None) => ctx.page(Nav::Approvals, PENDING, page),
        (Ok(page), Some(o)) => ctx.after(o, Nav::Approvals, PENDING, page),
        (Err(e), _) => ctx.problem(e, Nav::Approvals, PENDING, html! {}),
    }
}

/// The certificate requests waiting for approval.
#[utoipa::path(
    get,
    path = "/admin/certificates/pending",
    tag = "admin console",
    operation_id = "console_pending_certificates",
    responses(PageAnswers)
)]
pub(crate) async fn pending(ctx: Ctx) -> Response {
    if !ctx.standing.master_admin() {
        return ctx.forbidden(Nav::Approvals);
    }
    show(&ctx, None).await
}

/// The request an approval page names, at the version it showed.
#[derive(Deserialize, utoipa::IntoParams, Default)]
#[into_params(parameter_in = Query)]
pub(crate) struct PendingQuery {
    /// The certificate's DN.
    dn: Option<String>,
    /// The request's version the page showed.
    version: Option<String>,
}

/// The form of the approve and reject posts (a description).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub(crate) struct ConsolePendingForm {
    /// The anti-forgery token (equal to the cookie's).
    csrf: String,
    /// The certificate's DN.
    dn: String,
    /// The request's version the confirmation page showed.
    version: String,
    /// A rejection's reason.
    reason: Option<String>,
}

async fn read(ctx: &Ctx, q: &PendingQuery) -> Result<PendingRecord, ConsoleError> {
    let dn = q.dn.as_deref().unwrap_or("");
    let p = svc::pending_at(&*ctx.app.store, dn).await.map_err(|e| ConsoleError::NotFound(e.to_string()))?;
    if q.version.as_deref().is_some_and(|v| v != p.version.to_string()) {
        return Err(ConsoleError::Invalid(format!("The request for {} changed since that page was read: look again.", p.path)));
    }
    Ok(p)
}

fn facts(p: &PendingRecord) -> Markup {
    html! {
        table #request { tbody {
            tr { th scope="row" { "Certificate" } td { code { (p.path.as_str()) } } }
            tr { th scope="row" { "CA" } td { (p.ca_key) } }
            tr { th scope="row" { "Requested by" } td { code { (p.requested_by) } } }
            tr { th scope="row" { "At" } td { (p.requested_at.iso8601()) } }
            tr { th scope="row" { "Kind" } td { @if p.renewal { "renewal" } @else { "request" } } }
            tr { th scope="row" { "Request" } td { pre { (p.request) } } }
        } }
    }
}

fn version_of(form: &super::Form) -> Result<i64, ConsoleError> {
    form.get("version").parse().map_err(|_| ConsoleError::Invalid("version: a number".into()))
}

/// Asks before approving a request: what will be issued.
#[utoipa::path(
    get,
    path = "/admin/certificates/approve",
    tag = "admin console",
    operation_id = "console_certificate_approve_confirm",
    params(PendingQuery),
    responses(PageAnswers)
)]
pub(crate) async fn confirm_approve(Query(q): Query<PendingQuery>, ctx: Ctx) -> Response {
    if !ctx.standing.master_admin() {
        return ctx.forbidden(Nav::Approvals);
    }
    let p = match read(&ctx, &q).await {
        Ok(p) => p,
        Err(e) => return show(&ctx, Some(Err(e))).await,
    };
    let version = p.version.to_string();
    ctx.confirm(super::Confirm {
        nav: Nav::Approvals,
        title: &format!("Approve the certificate request for {}?", p.path),
        consequences: html! {
            p { "The certificate will be issued now, as requested, judged by the policy in force: " }
            (facts(&p))
        },
        action: "/admin/certificates/approve",
        fields: &[("dn", p.path.as_str()), ("version", &version)],
        button: &format!("Approve and issue {}", p.path),
        back: "/admin/certificates/pending",
    })
}

/// Approve a request: the certificate is issued (`strongroom admin certificates approve`).
#[utoipa::path(post, path = "/admin/certificates/approve", tag = "admin console", operation_id = "console_certificate_approve",
    request_body(content = ConsolePendingForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Approved; the pending requests again.", body = String, content_type = "text/html"), PostRefusals))]
pub(crate) async fn approve(Posted(ctx, form): Posted) -> Response {
    if !ctx.standing.master_admin() {
        return ctx.forbidden(Nav::Approvals);
    }
    let outcome = async {
        let version = version_of(&form)?;
        let r = ctx.admin().approve_certificate(&ctx.app.public_url, form.get("dn"), Some(version)).await?;
        Ok::<_, ConsoleError>(format!("Approved: the certificate of {} is issued.", r.dn))
    }
    .await;
    show(&ctx, Some(outcome)).await
}

/// Asks for the reason before rejecting a request.
#[utoipa::path(
    get,
    path = "/admin/certificates/reject",
    tag = "admin console",
    operation_id = "console_certificate_reject_confirm",
    params(PendingQuery),
    responses(PageAnswers)
)]
pub(crate) async fn confirm_reject(Query(q): Query<PendingQuery>, ctx: Ctx) -> Response {
    if !ctx.standing.master_admin() {
        return ctx.forbidden(Nav::Approvals);
    }
    let p = match read(&ctx, &q).await {
        Ok(p) => p,
        Err(e) => return show(&ctx, Some(Err(e))).await,
    };
    let body = html! {
        div #consequences role="note" {
            p { "Nothing will be issued; the requester's Retrieve answers the product's failed shape with the reason until a Reset or Retry." }
            (facts(&p))
        }
        form method="post" action="/admin/certificates/reject" {
            (csrf_field(&ctx.csrf))
            input type="hidden" name="dn" value=(p.path.as_str());
            input type="hidden" name="version" value=(p.version);
            div.field { label for="reason" { "Reason (the requester sees it)" } input type="text" id="reason" name="reason" required maxlength="300" size="60"; }
            button.danger type="submit" id="confirm" { "Reject " (p.path.as_str()) }
            " "
            a href="/admin/certificates/pending" id="cancel" { "Cancel" }
        }
    };
    ctx.page(Nav::Approvals, &format!("Reject the certificate request for {}?", p.path), body)
}

/// Reject a request with a reason (`strongroom admin certificates reject`).
#[utoipa::path(post, path = "/admin/certificates/reject", tag = "admin console", operation_id = "console_certificate_reject",
    request_body(content = ConsolePendingForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Rejected; the pending requests again.", body = String, content_type = "text/html"), PostRefusals))]
pub(crate) async fn reject(Posted(ctx, form): Posted) -> Response {
    if !ctx.standing.master_admin() {
        return ctx.forbidden(Nav::Approvals);
    }
    let outcome = async {
        let version = version_of(&form)?;
        let dn = form.get("dn");
        ctx.admin().reject_certificate(dn, form.get("reason"), Some(version)).await?;
        Ok::<_, ConsoleError>(format!("Rejected: the request for {dn}."))
    }
    .await;
    show(&ctx, Some(outcome)).await
}
