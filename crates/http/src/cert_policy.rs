//! `Config/WritePolicy`, `Config/ReadPolicy` and `Config/ClearPolicyAttribute`
//! for class `X509 Certificate`: folder certificate policies as
//! vcert's `setpolicy` and `getpolicy` write and read them, on the store
//! `admin policy set` writes ([`strongroom_app::service::cert_policy`]).
//! Errors are 400 `{"Error": …}` (an attribute this server does not keep,
//! a bad value, a folder that does not exist), 403 for a missing right.

use axum::extract::State;
use axum::response::Response;

use strongroom_app::service::cert_policy as cp;
use strongroom_app::service::certificates::CertError;
use strongroom_proto::certificates::{PolicyAttributeRequest, ReadPolicyResponse};
use strongroom_proto::config::ConfigResult;

use super::extract::{CertCall, scope};
use super::respond::{CertFailure, ok};
use super::responses::CertRefusals;
use crate::state::HttpState;

type Answer = Result<Response, CertFailure>;

fn required(c: &strongroom_proto::read::SdkBody, name: &str) -> Result<String, CertFailure> {
    c.string(&[name])?.filter(|v| !v.trim().is_empty()).ok_or_else(|| CertFailure::Cert(CertError::Invalid(format!("{name} is required."))))
}

fn attribute(c: &strongroom_proto::read::SdkBody) -> Result<cp::Attribute, CertFailure> {
    Ok(cp::attribute(c.string(&["Class"])?.as_deref(), c.string(&["AttributeName"])?.as_deref())?)
}

#[utoipa::path(
    post,
    path = "/vedsdk/Config/WritePolicy",
    tag = "certificates",
    description = "Sets one certificate policy value of the folder `ObjectDN` for `Class` `X509 Certificate`: `Locked` \
        true makes it a policy, false a default. `AttributeName` is one of `Certificate Authority` (a CA's name or DN), \
        `Organization`, `Organizational Unit`, `City`, `State`, `Country`, `Key Algorithm`, `Key Bit Strength`, \
        `Elliptic Curve`, `PKIX Parameter Set Policy` (and `… Default`), `Manual Csr`, `Management Type`, \
        `Domain Suffix Whitelist`, `Prohibit Wildcard`, `Prohibited SAN Types`, `Allow Private Key Reuse`, \
        `Want Renewal`, `Contact`, `Approver` (identities, as `Identity/Validate` reads them). Values are checked as \
        `strongroom admin policy set` checks them; another attribute or a bad value is 400 `{\"Error\"}`. Needs Write on \
        the folder (else 403). Every change is a `certificate.policy_set` event. Scope `configuration:manage`.",
    security(("bearer" = [])),
    request_body(content = PolicyAttributeRequest, description = "A JSON object; keys match in any case, booleans `true` or `\"true\"`."),
    responses((status = 200, description = "`{\"Result\": 1}`", body = ConfigResult), CertRefusals),
)]
pub(crate) async fn write_policy(State(app): State<HttpState>, c: CertCall<scope::ConfigurationManage>) -> Answer {
    let dn = required(&c.body, "ObjectDN")?;
    let attr = attribute(&c.body)?;
    let values = c.body.strings(&["Values"])?.unwrap_or_default();
    let locked = c.body.flag(&["Locked"])?.unwrap_or(false);
    cp::write(&app, &c.caller, &dn, attr, &values, locked).await?;
    Ok(ok(&ConfigResult { result: 1, error: None }))
}

#[utoipa::path(
    post,
    path = "/vedsdk/Config/ReadPolicy",
    tag = "certificates",
    description = "The folder `ObjectDN`'s own value of the certificate policy attribute `AttributeName` (`Class` \
        `X509 Certificate`; the names of `Config/WritePolicy`): `{\"Locked\", \"Result\": 1, \"Values\"}`, `Values` empty \
        when the folder sets none (the policy in force, with what is inherited, is `Certificates/CheckPolicy`'s). The \
        whitelist, wildcards, prohibited SAN types, key reuse, contacts and approvers are always in force: `Locked` true. \
        Needs Read on the folder (else 403). Scope `configuration`.",
    security(("bearer" = [])),
    request_body(content = PolicyAttributeRequest, description = "A JSON object; keys match in any case, booleans `true` or `\"true\"`."),
    responses((status = 200, description = "`{\"Locked\": true, \"Result\": 1, \"Values\": […]}`", body = ReadPolicyResponse), CertRefusals),
)]
pub(crate) async fn read_policy(State(app): State<HttpState>, c: CertCall<scope::Configuration>) -> Answer {
    let dn = required(&c.body, "ObjectDN")?;
    let attr = attribute(&c.body)?;
    let (values, locked) = cp::read_attribute(&app, &c.caller, &dn, attr).await?.unwrap_or_default();
    Ok(ok(&ReadPolicyResponse { locked, result: 1, values }))
}

#[utoipa::path(
    post,
    path = "/vedsdk/Config/ClearPolicyAttribute",
    tag = "certificates",
    description = "Clears the folder `ObjectDN`'s certificate policy attribute `AttributeName` (`Class` `X509 Certificate`; \
        the names of `Config/WritePolicy`), all its values: what is above the folder applies again. Clearing what is not \
        set succeeds. Needs Write on the folder (else 403); a change is a `certificate.policy_set` event. Scope \
        `configuration:manage`.",
    security(("bearer" = [])),
    request_body(content = PolicyAttributeRequest, description = "A JSON object; keys match in any case, booleans `true` or `\"true\"`."),
    responses((status = 200, description = "`{\"Result\": 1}`", body = ConfigResult), CertRefusals),
)]
pub(crate) async fn clear_policy_attribute(State(app): State<HttpState>, c: CertCall<scope::ConfigurationManage>) -> Answer {
    let dn = required(&c.body, "ObjectDN")?;
    let attr = attribute(&c.body)?;
    cp::clear_attribute(&app, &c.caller, &dn, attr).await?;
    Ok(ok(&ConfigResult { result: 1, error: None }))
}
