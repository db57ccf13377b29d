//! The product's workflow tickets (`/vedsdk/Workflow/Ticket/*`) for
//! certificate requests that wait for Manual Approval: the calls
//! pyvenafi's `Ticket` feature makes (`Enumerate` → `UpdateStatus`).
//!
//! Strongroom has one ticket per waiting request, named by its certificate
//! object's GUID (the product's tickets are objects of their own under
//! `\VED\Workflow Tickets`; clients only carry the GUID from `Enumerate` to
//! `Status` and `UpdateStatus`). `UpdateStatus` `Approved` issues (one
//! conditional write: two approvals issue once), `Rejected` rejects with
//! the `Explanation`. Approving or rejecting needs a Master Admin or Manage
//! Permissions on the object (403 otherwise); `Enumerate` and `Status` need
//! a right on it. Scope `certificate:manage`. Answers carry `Result` 1 on
//! success (pyvenafi checks it).

use axum::extract::State;

use strongroom_app::service::certificates::{self as svc, CertError};
use strongroom_proto::certificates::{
    TicketEnumerateRequest, TicketEnumerateResponse, TicketRequest, TicketResult, TicketStatusResponse, TicketUpdateRequest,
};

use super::extract::{CertCall, scope};
use super::respond::{CertFailure, ok};
use super::responses::CertRefusals;
use crate::state::HttpState;

type Answer = Result<axum::response::Response, CertFailure>;

fn guid_of(c: &CertCall<scope::CertificateManage>) -> Result<String, CertFailure> {
    c.body
        .string(&["GUID"])?
        .filter(|g| !g.trim().is_empty())
        .ok_or_else(|| CertFailure::Cert(CertError::Invalid("GUID is required.".into())))
}

#[utoipa::path(
    post,
    path = "/vedsdk/Workflow/Ticket/Enumerate",
    tag = "certificates",
    description = "The workflow tickets of certificate requests waiting for Manual Approval: of `ObjectDN` (a certificate), \
        or every one the caller has a right on. A ticket is named by its certificate object's GUID. `{\"GUIDs\": [...], \
        \"Result\": 1}`. Scope `certificate:manage`.",
    security(("bearer" = [])),
    request_body(content = TicketEnumerateRequest, description = "A JSON object; keys match in any case."),
    responses((status = 200, description = "`{GUIDs, Result}`", body = TicketEnumerateResponse), CertRefusals),
)]
pub(crate) async fn enumerate(State(app): State<HttpState>, c: CertCall<scope::CertificateManage>) -> Answer {
    let dn = c.body.string(&["ObjectDN"])?;
    let all = svc::pending_for(&app, &c.caller, dn.as_deref()).await?;
    let guids = all.iter().filter(|p| !p.rejected).map(|p| p.guid.braced()).collect();
    Ok(ok(&TicketEnumerateResponse { guids, result: 1 }))
}

#[utoipa::path(
    post,
    path = "/vedsdk/Workflow/Ticket/Status",
    tag = "certificates",
    description = "A workflow ticket's status by `GUID`: `Pending` (waiting for approval) or `Rejected`. An approved \
        ticket is gone (400). `{\"Status\", \"Result\": 1}`. Needs a right on the certificate. Scope `certificate:manage`.",
    security(("bearer" = [])),
    request_body(content = TicketRequest, description = "A JSON object; keys match in any case."),
    responses((status = 200, description = "`{Status, Result}`", body = TicketStatusResponse), CertRefusals),
)]
pub(crate) async fn status(State(app): State<HttpState>, c: CertCall<scope::CertificateManage>) -> Answer {
    let p = svc::pending_by_guid(&app, &c.caller, &guid_of(&c)?).await?;
    Ok(ok(&TicketStatusResponse { result: 1, status: if p.rejected { "Rejected" } else { "Pending" }.to_owned() }))
}

#[utoipa::path(
    post,
    path = "/vedsdk/Workflow/Ticket/UpdateStatus",
    tag = "certificates",
    description = "Decides a workflow ticket by `GUID`: `Status` `Approved` issues the waiting certificate request (as its \
        Request or Renew would have, judged by the policy in force; one conditional write, so two approvals issue once), \
        `Rejected` rejects it with `Explanation` (Retrieve then answers the failed shape until a Reset or Retry). Needs \
        a Master Admin or Manage Permissions on the certificate (403 otherwise). `{\"Result\": 1}`. Scope \
        `certificate:manage`.",
    security(("bearer" = [])),
    request_body(content = TicketUpdateRequest, description = "A JSON object; keys match in any case."),
    responses((status = 200, description = "`{Result: 1}`", body = TicketResult), CertRefusals),
)]
pub(crate) async fn update_status(State(app): State<HttpState>, c: CertCall<scope::CertificateManage>) -> Answer {
    let p = svc::pending_by_guid(&app, &c.caller, &guid_of(&c)?).await?;
    let status = c.body.string(&["Status"])?.unwrap_or_default();
    match status.trim().to_ascii_lowercase().as_str() {
        "approved" => {
            svc::approve_as_caller(&app, &c.caller, &p).await?;
        }
        "rejected" => {
            let why = c.body.text(&["Explanation"])?.or(c.body.text(&["Reason"]).ok().flatten()).unwrap_or_default();
            svc::reject_as_caller(&app, &c.caller, &p, &why).await?;
        }
        other => {
            return Err(CertFailure::Cert(CertError::Invalid(format!(
                "Status {other:?}: this server's tickets are Approved or Rejected."
            ))));
        }
    }
    Ok(ok(&TicketResult { result: 1 }))
}
