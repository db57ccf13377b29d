//! `/vedsdk/Certificates/*`: certificates from Strongroom's own
//! CAs, through the product's API as vcert (Go and Python), cert-manager,
//! Terraform, pyvenafi and VenafiPS call it. Bodies are read leniently
//! (keys in any case, booleans as `true` or `"true"`). Errors are 400
//! `{"Error": …}` (the product's texts; `Certificate does not exist.` in the
//! status line too), 403 for a missing right, never 401.
//!
//! Scopes: `certificate` to read, search and retrieve; `certificate:manage`
//! to request, renew, reset and disable; `certificate:revoke`;
//! `certificate:delete`.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::response::Response;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use strongroom_app::service::certificates::{self as svc, CertError, Format, RequestInput, RetrieveInput, Search};
use strongroom_app::service::vault::Caller;
use strongroom_core::cert::{Policy, fields};
use strongroom_core::time::UnixTime;
use strongroom_core::vault::VaultId;
use strongroom_proto::SecretString;
use strongroom_proto::certificates::{
    CertRetrieveRequest, CertRevokeRequest, CertRevokeResponse, CertificateDnRequest, CertificateFile, CertificateSummary,
    CertificateUpdateRequest, CertificatesResponse, CheckPolicyRequest, CheckPolicyResponse, EnrollmentRequest, EnrollmentResponse, Link,
    MetadataDnRequest, MetadataGetRequest, MetadataGetResponse, MetadataItem, MetadataItemsResponse, MetadataSetRequest,
    MetadataSetResponse, MetadataValues, PreviousCertificateDetails, PreviousVersion, PreviousVersionsResponse, RenewRequest,
    RenewResponse, ResetResponse, RetrieveFormat, StageStatus, SuccessResponse, X509Summary,
};
use strongroom_proto::read::SdkBody;
use strongroom_store::{CertField, CertRecord};

use super::extract::{CertCall, VaultCaller, scope};
use super::respond::{self, CertFailure, ok};
use super::responses::{CertRefusals, CertUnsuccessful, KeysBusy, KeysBusyUnsuccessful, Timeout, Unavailable};
use crate::state::HttpState;

type Answer = Result<Response, CertFailure>;

fn invalid(m: impl Into<String>) -> CertFailure {
    CertFailure::Cert(CertError::Invalid(m.into()))
}

/// A time as the product writes it: `2026-11-27T10:00:00.0000000Z`.
fn product_time(secs: i64) -> String {
    let iso = UnixTime::from_secs(secs).iso8601();
    match iso.strip_suffix('Z') {
        Some(s) => format!("{s}.0000000Z"),
        None => iso,
    }
}

fn locked_value<T: serde::Serialize>(s: &Option<strongroom_core::cert::Setting<T>>, default: Value) -> Value {
    match s {
        Some(x) => json!({"Locked": x.locked, "Value": x.value}),
        None => json!({"Locked": false, "Value": default}),
    }
}

/// The product's `Policy` object: never a locked empty key algorithm or curve (vcert panics on one),
/// every subject field with its value and `Locked`, an open folder saying so (every SAN type allowed,
/// no domains).
fn policy_json(p: &Policy, ca_dn: Option<&str>) -> Value {
    let alg = p.key_algorithm.as_ref().map(|a| a.value.clone()).unwrap_or_else(|| "RSA".into());
    let ou = match &p.organizational_unit {
        Some(x) => json!({"Locked": x.locked, "Values": x.value}),
        None => json!({"Locked": false, "Values": []}),
    };
    let curve = match &p.curve {
        Some(c) => json!({"Locked": c.locked, "Value": c.value.as_str()}),
        None => json!({"Locked": false, "Value": "P256"}),
    };
    json!({
        "CertificateAuthority": {"Locked": p.ca.as_ref().is_some_and(|c| c.locked), "Value": ca_dn.unwrap_or("")},
        "CsrGeneration": match &p.manual_csr {
            Some(m) => json!({"Locked": m.locked, "Value": if m.value { "UserProvided" } else { "ServiceGenerated" }}),
            None => json!({"Locked": false, "Value": "UserProvided"}),
        },
        "KeyGeneration": {"Locked": false, "Value": "Central"},
        "KeyPair": {
            "KeyAlgorithm": {"Locked": p.key_algorithm.as_ref().is_some_and(|a| a.locked), "Value": alg},
            "KeySize": locked_value(&p.key_size, json!(2048)),
            "EllipticCurve": curve,
        },
        "ManagementType": locked_value(&p.management_type, json!("Enrollment")),
        "PrivateKeyReuseAllowed": p.key_reuse.unwrap_or(true),
        "SubjAltNameDnsAllowed": p.san_allowed("DNS"),
        "SubjAltNameEmailAllowed": p.san_allowed("Email"),
        "SubjAltNameIpAllowed": p.san_allowed("IP"),
        "SubjAltNameUpnAllowed": p.san_allowed("UPN"),
        "SubjAltNameUriAllowed": p.san_allowed("URI"),
        "Subject": {
            "City": locked_value(&p.city, json!("")),
            "Country": locked_value(&p.country, json!("")),
            "Organization": locked_value(&p.organization, json!("")),
            "OrganizationalUnit": ou,
            "State": locked_value(&p.state, json!("")),
        },
        "UniqueSubjectEnforced": false,
        "WhitelistedDomains": p.domains.clone().unwrap_or_default(),
        "WildcardsAllowed": p.wildcards.unwrap_or(true),
    })
}

#[utoipa::path(
    post,
    path = "/vedsdk/Certificates/CheckPolicy",
    tag = "certificates",
    description = "The certificate policy in force at `PolicyDN` (a zone without `\\VED\\` gets `\\VED\\Policy\\` before it): \
        the folder's own values and those inherited from above (a locked value higher up wins), in the product's `Policy` \
        shape. A locked `KeyAlgorithm` is always `RSA` or `ECC` and a locked `EllipticCurve` `P256`, `P384` or `P521`; an open \
        folder has every `SubjAltName*Allowed` true and `WhitelistedDomains` empty. A missing folder (or one the caller has no \
        right on or below) is 400 `{\"Error\":\"PolicyDN: … does not exist\"}`. Scope `certificate`.",
    security(("bearer" = [])),
    request_body(content = CheckPolicyRequest, description = "A JSON object; keys match in any case, integers may be numeric strings, booleans `true` or `\"true\"`."),
    responses((status = 200, description = "`{\"Error\": null, \"Policy\": {…}}`", body = CheckPolicyResponse), CertRefusals),
)]
pub(crate) async fn check_policy(State(app): State<HttpState>, c: CertCall<scope::Certificate>) -> Answer {
    let dn = c.body.string(&["PolicyDN"])?.ok_or_else(|| invalid("PolicyDN is required."))?;
    let view = svc::check_policy(&app, &c.caller, &dn).await?;
    Ok(ok(&CheckPolicyResponse { error: None, policy: policy_json(&view.policy, view.ca_dn.as_deref()) }))
}

/// `SubjectAltNames`: `[{Type: int, Name}]` or `[{TypeName: "DNS", Name}]`.
fn sans(b: &SdkBody) -> Result<Vec<(String, String)>, CertFailure> {
    let mut out = Vec::new();
    for s in b.objects(&["SubjectAltNames"])?.unwrap_or_default() {
        let kind = match s.text(&["TypeName"])? {
            Some(t) => t,
            None => s.text(&["Type"])?.unwrap_or_default(),
        };
        let name = s.text(&["Name"])?.unwrap_or_default();
        out.push((kind, name));
    }
    Ok(out)
}

/// `CASpecificAttributes[{Name:"Specific End Date" (or a CA-prefixed one), Value}]`.
fn end_date(b: &SdkBody) -> Result<Option<String>, CertFailure> {
    for a in b.objects(&["CASpecificAttributes"])?.unwrap_or_default() {
        let name = a.text(&["Name"])?.unwrap_or_default();
        if name.trim().to_ascii_lowercase().ends_with("specific end date") {
            return Ok(a.text(&["Value"])?);
        }
    }
    Ok(None)
}

/// `CustomFields[{Name, Values}]` (a single `Value` or a string `Values` read as a list of one).
fn custom_fields(b: &SdkBody) -> Result<Vec<(String, Vec<String>)>, CertFailure> {
    let mut out = Vec::new();
    for f in b.objects(&["CustomFields"])?.unwrap_or_default() {
        let name = f.text(&["Name"])?.filter(|n| !n.trim().is_empty()).ok_or_else(|| invalid("CustomFields[].Name is required."))?;
        let values = match f.strings(&["Values"])? {
            Some(v) => v,
            None => f.text(&["Value"])?.into_iter().collect(),
        };
        out.push((name, values));
    }
    Ok(out)
}

fn request_input(b: &SdkBody) -> Result<RequestInput, CertFailure> {
    if b.objects(&["Devices"])?.is_some_and(|d| !d.is_empty()) {
        return Err(CertFailure::Cert(CertError::Unsupported("Devices and application pushes are not supported by this server.".into())));
    }
    let ou = match b.strings(&["OrganizationalUnit"]) {
        Ok(v) => v.unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    Ok(RequestInput {
        policy_dn: b.string(&["PolicyDN"])?.ok_or_else(|| invalid("PolicyDN is required."))?,
        object_name: b.text(&["ObjectName"])?,
        pkcs10: b.string(&["PKCS10"])?,
        subject: b.text(&["Subject"])?,
        organization: b.text(&["Organization"])?,
        organizational_unit: ou,
        city: b.text(&["City"])?,
        state: b.text(&["State"])?,
        country: b.text(&["Country"])?,
        sans: sans(b)?,
        key_algorithm: b.text(&["KeyAlgorithm"])?,
        key_bit_size: b.int64(&["KeyBitSize"])?.map(|v| u32::try_from(v).unwrap_or(0)),
        elliptic_curve: b.text(&["EllipticCurve"])?,
        pkix_parameter_set: b.text(&["PkixParameterSet"])?,
        cadn: b.text(&["CADN"])?,
        end_date: end_date(b)?,
        disable_automatic_renewal: b.flag(&["DisableAutomaticRenewal"]).ok().flatten().unwrap_or(false),
        custom_fields: custom_fields(b)?,
    })
}

#[utoipa::path(
    post,
    path = "/vedsdk/Certificates/Request",
    tag = "certificates",
    description = "Issues a certificate at `PolicyDN\\ObjectName` (without `ObjectName`: the CN, else the first SAN), \
        synchronously in the request's one write: from the caller's `PKCS10` (PEM with or without line breaks; its signature \
        is verified) or, without one, from a key made here (`KeyAlgorithm` `RSA` with `KeyBitSize` 2048-4096, or `ECC` with \
        `EllipticCurve` `P256`/`P384`/`P521`; or a `PkixParameterSet` OID) kept sealed in the vault. `SubjectAltNames` as \
        `{Type, Name}` or `{TypeName, Name}` (`Type` 0 UPN, 1 email, 2 DNS, 6 URI, 7 IP); `CADN` (else the policy's CA); a `Specific End Date` in `CASpecificAttributes` \
        shortens the validity. A DN that holds a certificate is re-enrolled: the previous certificate, key and CSR are archived. \
        Under a CA's or a folder policy's Manual Approval the request is kept and waits for an approver (nothing issued). \
        Answers 200 `{CertificateDN, Guid}` (never 202); with `WorkToDoTimeout`, also the certificate inline (when waiting for \
        approval, once approved within it) \
        (`CertificateData`, `Filename`, `Format`, read as `Retrieve` reads `Format`, `IncludeChain`, `IncludePrivateKey`, \
        `Password`). Every name is checked before the policy: DNS names (and a CN with a dot or `*`, no space) are host names \
        (RFC 1123 labels, at most 63 and 253 characters, a wildcard only as a whole first label), subject attributes have no \
        control character and stay within RFC 5280's bounds (CN 64). A policy violation, a name that is no name, an external \
        CA, `Devices` or bad input is 400 `{\"Error\"}` and issues nothing; no Create on the folder is 403. A server-made RSA \
        key past the bounds of `[key_generation]` (per caller, in all) is 429 with `Retry-After`, before any work. Scope \
        `certificate:manage`.",
    security(("bearer" = [])),
    request_body(content = EnrollmentRequest, description = "A JSON object; keys match in any case, integers may be numeric strings, booleans `true` or `\"true\"`."),
    responses((status = 200, description = "`{\"CertificateDN\": …, \"Guid\": \"{…}\"}`, with `WorkToDoTimeout` the certificate too.", body = EnrollmentResponse), (status = 429, response = KeysBusy), CertRefusals),
)]
pub(crate) async fn request(State(app): State<HttpState>, c: CertCall<scope::CertificateManage>) -> Answer {
    let input = request_input(&c.body)?;
    let r = svc::request(&app, &c.caller, input).await?;
    let mut answer =
        EnrollmentResponse { certificate_dn: r.dn, certificate_data: None, filename: None, format: None, guid: r.guid.braced() };
    // With `WorkToDoTimeout` (VenafiPS sends 60), the certificate comes inline: it is ready
    // already, unless it waits for approval: then it is waited for up to the timeout, and past it
    // the answer is still 200 without it (never 202: vcert's Request fails on a 202).
    if let Some(wait) = work_to_do_timeout(&c.body)? {
        match svc::retrieve_waiting(&app, &c.caller, &answer.certificate_dn, &retrieve_input(&c.body)?, wait).await {
            Ok(got) => {
                let file = certificate_file(got);
                answer.certificate_data = Some(file.certificate_data);
                answer.filename = Some(file.filename);
                answer.format = Some(file.format);
            }
            Err(CertError::Pending { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(ok(&answer))
}

/// `WorkToDoTimeout` (seconds, a number or a numeric string); `None` when absent. The service
/// bounds it.
fn work_to_do_timeout(b: &SdkBody) -> Result<Option<i64>, CertFailure> {
    if !b.has(&["WorkToDoTimeout"]) {
        return Ok(None);
    }
    Ok(Some(b.int64(&["WorkToDoTimeout"])?.unwrap_or(0)))
}

fn retrieve_input(b: &SdkBody) -> Result<RetrieveInput, CertFailure> {
    let format = Format::parse(&b.string(&["Format"])?.unwrap_or_else(|| "Base64".into()))?;
    Ok(RetrieveInput {
        format,
        include_chain: b.flag(&["IncludeChain"])?.unwrap_or(false),
        root_first: b.flag(&["RootFirstOrder"])?.unwrap_or(false),
        include_private_key: b.flag(&["IncludePrivateKey"])?.unwrap_or(false),
        password: b.string(&["Password"])?.map(SecretString),
        friendly_name: b.text(&["FriendlyName"])?,
    })
}

fn certificate_file(r: svc::Retrieved) -> CertificateFile {
    CertificateFile { certificate_data: SecretString(STANDARD.encode(&*r.data)), filename: r.filename, format: r.format.to_owned() }
}

fn retrieved(r: svc::Retrieved) -> Response {
    ok(&certificate_file(r))
}

#[utoipa::path(
    post,
    path = "/vedsdk/Certificates/Retrieve",
    tag = "certificates",
    description = "The certificate of `CertificateDN` (or `Thumbprint`) in `CertificateData` (base64): `Format` `Base64` \
        (PEM, CRLF; the leaf then the CA with `IncludeChain`, the CA first with `RootFirstOrder`; booleans as `true` or \
        `\"true\"`), `Base64 (PKCS #8)` (its spellings: the same PEM), or `DER` (the certificate alone). With \
        `IncludePrivateKey` and a `Password`, the centrally made key comes last as PBES2 `ENCRYPTED PRIVATE KEY` \
        (PBKDF2-HMAC-SHA256, AES-256-CBC); it needs Private Key Read on the object and writes a `certificate.key_exported` \
        event first; the `Password` must be one a user could choose (8 to 1,024 characters, not a common one, not one \
        character repeated), else 400 and nothing is exported. Needs Read. A missing certificate is 400 `Certificate does not exist.` (status line and `Error`). \
        `PKCS #12` (its spellings) under `Password`: the certificate, the CA with `IncludeChain`, the key with \
        `IncludePrivateKey` (PBES2 AES-256-CBC, MAC HMAC-SHA256). `PKCS #7` and `JKS` are 400 for now. While a request for it waits for Manual Approval: 202 \
        `{\"Stage\": 500, \"Status\": \"Pending workflow resolution…\"}` (with `WorkToDoTimeout`, after waiting up to it, at most \
        120 s); rejected: 500 `{\"Stage\", \"Status\"}` with the reason. Scope `certificate`.",
    security(("bearer" = [])),
    request_body(content = CertRetrieveRequest, description = "A JSON object; keys match in any case, integers may be numeric strings, booleans `true` or `\"true\"`."),
    responses((status = 200, description = "`{CertificateData, Filename, Format}`", body = CertificateFile), (status = 202, description = "Waiting for approval: `{Stage, Status}`.", body = StageStatus), (status = 500, description = "Rejected by its approver: `{Stage, Status}`.", body = StageStatus), CertRefusals),
)]
pub(crate) async fn retrieve(State(app): State<HttpState>, c: CertCall<scope::Certificate>) -> Answer {
    let b = &c.body;
    let input = retrieve_input(b)?;
    let o = svc::object_context(&app, &c.caller, b.string(&["CertificateDN"])?.as_deref(), b.string(&["Thumbprint"])?.as_deref()).await?;
    // A request waiting for approval: with `WorkToDoTimeout`, waited for up to it; then (or
    // without it at once) 202 `{"Stage", "Status"}`.
    if let Some(wait) = work_to_do_timeout(b)? {
        return Ok(retrieved(svc::retrieve_waiting(&app, &c.caller, o.record.path.as_str(), &input, wait).await?));
    }
    Ok(retrieved(svc::retrieve(&app, &c.caller, &o, &input).await?))
}

#[utoipa::path(
    post,
    path = "/vedsdk/Certificates/Retrieve/{vaultid}",
    tag = "certificates",
    description = "A certificate (current or previous version) by its vault id, in the formats of `Certificates/Retrieve` \
        (no private key). Needs Read on its object. Scope `certificate`.",
    security(("bearer" = [])),
    params(("vaultid" = i64, Path, description = "The certificate's VaultId (`PreviousVersions`).")),
    request_body(content = RetrieveFormat, description = "A JSON object; keys match in any case, integers may be numeric strings, booleans `true` or `\"true\"`."),
    responses((status = 200, description = "`{CertificateData, Filename, Format}`", body = CertificateFile), CertRefusals),
)]
pub(crate) async fn retrieve_vault(State(app): State<HttpState>, Path(id): Path<String>, c: CertCall<scope::Certificate>) -> Answer {
    let id: i64 = id.trim().parse().map_err(|_| invalid("The vault id must be an integer."))?;
    let input = retrieve_input(&c.body)?;
    Ok(retrieved(svc::retrieve_by_vault_id(&app, &c.caller, VaultId(id), &input).await?))
}

#[utoipa::path(
    post,
    path = "/vedsdk/Certificates/Renew",
    tag = "certificates",
    description = "Issues the certificate of `CertificateDN` again, at the same DN: from a new `PKCS10`, else a new central key \
        (when the object had one), else its CSR on file; the previous certificate, key and CSR are archived \
        (`PreviousVersions`). An object made with `Config/Create` is enrolled (its first certificate too) from its attributes: \
        a key made here unless `Manual Csr` is `1` (then the `PKCS10`, else its CSR on file), judged by the folder's policy. \
        A disabled object is renewed only with `Reenable` (`true` or `\"true\"`), which enables it again. \
        Needs Write. 200 `{\"CertificateDN\", \"Success\": true}`; refused: `{\"Success\": false, \"Error\"}` (400, 403). \
        Scope `certificate:manage`.",
    security(("bearer" = [])),
    request_body(content = RenewRequest, description = "A JSON object; keys match in any case, integers may be numeric strings, booleans `true` or `\"true\"`."),
    responses((status = 200, description = "`{CertificateDN, Success: true}`", body = RenewResponse), (status = 429, response = KeysBusyUnsuccessful), CertUnsuccessful),
)]
pub(crate) async fn renew(State(app): State<HttpState>, c: CertCall<scope::CertificateManage>) -> Answer {
    let b = &c.body;
    let dn =
        b.string(&["CertificateDN"])?.ok_or_else(|| CertFailure::Unsuccessful(CertError::Invalid("CertificateDN is required.".into())))?;
    let pkcs10 = b.string(&["PKCS10"])?;
    let reenable = b.flag(&["Reenable"]).map_err(|e| CertFailure::Unsuccessful(CertError::Invalid(e.0)))?.unwrap_or(false);
    let r = svc::renew(&app, &c.caller, &dn, pkcs10, reenable).await.map_err(CertFailure::Unsuccessful)?;
    Ok(ok(&RenewResponse { certificate_dn: r.dn, success: true }))
}

#[utoipa::path(
    post,
    path = "/vedsdk/Certificates/Revoke",
    tag = "certificates",
    description = "Revokes the certificate of `CertificateDN` (or `Thumbprint`) at once: its serial is on its CA's CRL \
        from the same write (`Reason` 0-5, the product's reasons; any other is 400 and nothing is revoked; `Disable` also \
        disables the object; `Comments` go to the event). Needs Revoke. \
        200 `{\"Requested\": true, \"Success\": true, \"Revoked\": true}`; refused: `{\"Success\": false, \"Error\"}`. \
        Scope `certificate:revoke`.",
    security(("bearer" = [])),
    request_body(content = CertRevokeRequest, description = "A JSON object; keys match in any case, integers may be numeric strings, booleans `true` or `\"true\"`."),
    responses((status = 200, description = "`{Requested, Success, Revoked}`, all true.", body = CertRevokeResponse), CertUnsuccessful),
)]
pub(crate) async fn revoke(State(app): State<HttpState>, c: CertCall<scope::CertificateRevoke>) -> Answer {
    let b = &c.body;
    let un = CertFailure::Unsuccessful;
    let dn = b.string(&["CertificateDN"]).map_err(|e| un(CertError::Invalid(e.0)))?;
    let thumb = b.string(&["Thumbprint"]).map_err(|e| un(CertError::Invalid(e.0)))?;
    let r = svc::object_by_dn_or_thumbprint(&app, &c.caller, dn.as_deref(), thumb.as_deref()).await.map_err(un)?;
    let reason = b.int64(&["Reason"]).map_err(|e| un(CertError::Invalid(e.0)))?.unwrap_or(0);
    let disable = b.flag(&["Disable"]).map_err(|e| un(CertError::Invalid(e.0)))?.unwrap_or(false);
    let comments = b.text(&["Comments"]).ok().flatten();
    svc::revoke(&app, &c.caller, &r, reason, disable, comments.as_deref()).await.map_err(un)?;
    Ok(ok(&CertRevokeResponse { requested: true, revoked: true, success: true }))
}

#[utoipa::path(
    post,
    path = "/vedsdk/Certificates/Reset",
    tag = "certificates",
    description = "Clears a certificate's processing state: a request waiting for Manual Approval, or rejected, is dropped \
        (Write on the certificate; 200 `{\"ProcessingResetCompleted\": true}`). Issuance is otherwise synchronous, so nothing \
        else is ever in progress: a certificate that exists answers 400 `Reset is not completed. No reset is required for the \
        certificate.` and a missing one 400 `… does not exist or you do not have sufficient rights to the object.`, both of \
        which vcert tolerates. Scope `certificate:manage`.",
    security(("bearer" = [])),
    request_body(content = CertificateDnRequest, description = "A JSON object; keys match in any case, integers may be numeric strings, booleans `true` or `\"true\"`."),
    responses((status = 200, description = "`{ProcessingResetCompleted: true}`", body = ResetResponse), CertRefusals),
)]
pub(crate) async fn reset(State(app): State<HttpState>, c: CertCall<scope::CertificateManage>) -> Answer {
    let dn = c.body.string(&["CertificateDN"])?.ok_or_else(|| invalid("CertificateDN is required."))?;
    svc::reset(&app, &c.caller, &dn).await?;
    Ok(ok(&ResetResponse { processing_reset_completed: true }))
}

#[utoipa::path(
    post,
    path = "/vedsdk/Certificates/Retry",
    tag = "certificates",
    description = "Resumes a failed processing stage: a request rejected by its approver waits for approval again (Write on \
        the certificate; 200 `{\"Success\": true}`). Anything else is never left failed: 400 `{Error}`. Scope \
        `certificate:manage`.",
    security(("bearer" = [])),
    request_body(content = CertificateDnRequest, description = "A JSON object; keys match in any case, integers may be numeric strings, booleans `true` or `\"true\"`."),
    responses((status = 200, description = "`{Success: true}`", body = SuccessResponse), CertRefusals),
)]
pub(crate) async fn retry(State(app): State<HttpState>, c: CertCall<scope::CertificateManage>) -> Answer {
    let dn = c.body.string(&["CertificateDN"])?.ok_or_else(|| invalid("CertificateDN is required."))?;
    svc::retry(&app, &c.caller, &dn).await?;
    Ok(ok(&SuccessResponse::DONE))
}

#[utoipa::path(
    post,
    path = "/vedsdk/Certificates/Import",
    tag = "certificates",
    description = "Not supported by this server: 400 `{Error}` (certificates are issued by its own CAs). Scope \
        `certificate:manage`.",
    security(("bearer" = [])),
    request_body(content = Value, content_type = "application/json"),
    responses(CertRefusals),
)]
pub(crate) async fn unsupported(c: CertCall<scope::CertificateManage>) -> Answer {
    let _ = c;
    Err(CertFailure::Cert(CertError::Unsupported(
        "This server issues from its own CAs only: importing certificates, devices and application pushes are not supported.".into(),
    )))
}

/// Devices and application pushes are not managed here: 400 `{Error}`.
fn no_devices(call: &str) -> Answer {
    Err(CertFailure::Cert(CertError::Unsupported(format!(
        "Certificates/{call}: this server manages no devices or applications, so certificates are not associated with or pushed \
         to them. Retrieve the certificate and install it yourself."
    ))))
}

#[utoipa::path(
    post,
    path = "/vedsdk/Certificates/Associate",
    tag = "certificates",
    description = "Associating a certificate with applications: not supported (this server manages no devices or \
        applications): 400 `{Error}`. Scope `certificate:manage`.",
    security(("bearer" = [])),
    request_body(content = Value, content_type = "application/json"),
    responses(CertRefusals),
)]
pub(crate) async fn associate(c: CertCall<scope::CertificateManage>) -> Answer {
    let _ = c;
    no_devices("Associate")
}

#[utoipa::path(
    post,
    path = "/vedsdk/Certificates/Dissociate",
    tag = "certificates",
    description = "Dissociating a certificate from applications: not supported (this server manages no devices or \
        applications): 400 `{Error}`. Scope `certificate:manage`.",
    security(("bearer" = [])),
    request_body(content = Value, content_type = "application/json"),
    responses(CertRefusals),
)]
pub(crate) async fn dissociate(c: CertCall<scope::CertificateManage>) -> Answer {
    let _ = c;
    no_devices("Dissociate")
}

#[utoipa::path(
    post,
    path = "/vedsdk/Certificates/Push",
    tag = "certificates",
    description = "Pushing a certificate to its applications: not supported (this server manages no devices or \
        applications): 400 `{Error}`. Scope `certificate:manage`.",
    security(("bearer" = [])),
    request_body(content = Value, content_type = "application/json"),
    responses(CertRefusals),
)]
pub(crate) async fn push(c: CertCall<scope::CertificateManage>) -> Answer {
    let _ = c;
    no_devices("Push")
}

/// A custom field's definition as the product's metadata item (`Key` of `Metadata/Get`, `Items[]`).
pub(crate) fn field_item(f: &CertField) -> MetadataItem {
    MetadataItem {
        allowed_values: f.allowed.clone(),
        classes: f.classes.clone(),
        config_attribute: String::new(),
        dn: format!("\\VED\\Metadata Root\\{}", f.name),
        default_values: Vec::new(),
        error_message: String::new(),
        guid: f.guid.clone(),
        help: String::new(),
        label: f.name.clone(),
        mandatory: false,
        name: f.guid.clone(),
        policyable: false,
        regular_expression: String::new(),
        render_hidden: false,
        render_read_only: false,
        single: false,
        kind: f.kind,
    }
}

#[utoipa::path(
    post,
    path = "/vedsdk/metadata/get",
    tag = "certificates",
    description = "The custom field values of the certificate object `DN`: 200 `{\"Data\": [{\"Key\": {Label, Guid, Type, \
        AllowedValues, Classes, …}, \"Value\": [...]}], \"Locked\": false}`, one element per field that holds values \
        (`{\"Data\": [], \"Locked\": false}` when none does; vcert calls this after every request with custom fields, §0.1); \
        with `All` true, every field that applies to the object, those without values with `Value: []`. \
        Read on the object (else 403); an object the caller cannot see is 400 `{Error}`. Scope `certificate`.",
    security(("bearer" = [])),
    request_body(content = MetadataGetRequest, description = "A JSON object; keys match in any case, integers may be numeric strings, booleans `true` or `\"true\"`."),
    responses((status = 200, description = "`{Data: [{Key, Value}], Locked: false}`", body = MetadataGetResponse), CertRefusals),
)]
pub(crate) async fn metadata_get(State(app): State<HttpState>, c: CertCall<scope::Certificate>) -> Answer {
    let dn = c.body.string(&["DN"])?.ok_or_else(|| invalid("DN is required."))?;
    let all = c.body.flag(&["All"])?.unwrap_or(false);
    let data = svc::metadata_get(&app, &c.caller, &dn, all)
        .await?
        .into_iter()
        .map(|(f, value)| MetadataValues { key: field_item(&f), value })
        .collect();
    Ok(ok(&MetadataGetResponse { data, locked: false }))
}

#[utoipa::path(
    post,
    path = "/vedsdk/metadata/getitems",
    tag = "certificates",
    description = "The custom fields that apply to the certificate object `DN` (defined with `strongroom admin fields create`), \
        with or without values: 200 `{\"Items\": [{Label, Guid, Type, AllowedValues, Classes, …}], \"Locked\": false, \
        \"Result\": 0}`. Read on the object (else 403). Scope `certificate`.",
    security(("bearer" = [])),
    request_body(content = MetadataDnRequest, description = "A JSON object; keys match in any case, integers may be numeric strings, booleans `true` or `\"true\"`."),
    responses((status = 200, description = "`{Items: [...], Locked: false, Result: 0}`", body = MetadataItemsResponse), CertRefusals),
)]
pub(crate) async fn metadata_get_items(State(app): State<HttpState>, c: CertCall<scope::Certificate>) -> Answer {
    let dn = c.body.string(&["DN"])?.ok_or_else(|| invalid("DN is required."))?;
    let items = svc::metadata_items(&app, &c.caller, &dn).await?.iter().map(field_item).collect();
    Ok(ok(&MetadataItemsResponse { items, locked: Some(false), result: 0 }))
}

#[utoipa::path(
    post,
    path = "/vedsdk/metadata/set",
    tag = "certificates",
    description = "Sets custom field values of the certificate object `DN`: `GuidData: [{ItemGuid, List: [...]}]` (an empty \
        `List` clears that field; `GuidData` is required, `[]` with `KeepExisting` false clears them all); with \
        `KeepExisting` false (the default) every field not named is cleared. One write with \
        its event. Answers 200 `{\"Locked\": false, \"Result\": N}` with the product's metadata result code: 0 set; \
        4 an unknown `ItemGuid`, 18 a field not for this object's class, 17 a value not in a list field's allowed values, \
        19 a value too long or too many (nothing written). Write on the object (else 403). Scope `certificate:manage`.",
    security(("bearer" = [])),
    request_body(content = MetadataSetRequest, description = "A JSON object; keys match in any case, integers may be numeric strings, booleans `true` or `\"true\"`."),
    responses((status = 200, description = "`{Locked: false, Result: N}`", body = MetadataSetResponse), CertRefusals),
)]
pub(crate) async fn metadata_set(State(app): State<HttpState>, c: CertCall<scope::CertificateManage>) -> Answer {
    let dn = c.body.string(&["DN"])?.ok_or_else(|| invalid("DN is required."))?;
    let mut data = Vec::new();
    // Required, even empty: without it `KeepExisting` false would clear every field by mistake.
    for g in c.body.objects(&["GuidData"])?.ok_or_else(|| invalid("GuidData is required."))? {
        let item = g.text(&["ItemGuid"])?.ok_or_else(|| invalid("GuidData[].ItemGuid is required."))?;
        data.push((item, g.strings(&["List"])?.unwrap_or_default()));
    }
    let keep = c.body.flag(&["KeepExisting"])?.unwrap_or(false);
    let result = svc::metadata_set(&app, &c.caller, &dn, &data, keep).await?;
    Ok(ok(&MetadataSetResponse { locked: false, result }))
}

#[utoipa::path(
    get,
    path = "/vedsdk/metadata/items",
    tag = "certificates",
    description = "Every custom field defined (`strongroom admin fields create`): 200 `{\"Items\": [...], \"Locked\": false, \
        \"Result\": 0}`. Any valid token.",
    security(("bearer" = [])),
    responses((status = 200, description = "`{Items: [...], Locked: false, Result: 0}`", body = MetadataItemsResponse), CertRefusals),
)]
pub(crate) async fn metadata_items(State(app): State<HttpState>, c: CertCall<scope::Any>) -> Answer {
    let _ = c;
    let items = svc::fields_for_class(&app, None).await?.iter().map(field_item).collect();
    Ok(ok(&MetadataItemsResponse { items, locked: Some(false), result: 0 }))
}

/// The class of an object: one made with `Config/Create` shows the class it was made as.
fn schema_class(r: &CertRecord) -> &'static str {
    if r.template.is_empty() { strongroom_core::cert::CERTIFICATE_CLASS } else { strongroom_core::cert::CREATED_CLASS }
}

fn search_item(r: &CertRecord) -> CertificateSummary {
    let parent = strongroom_core::tree::parent_of(r.path.as_str()).unwrap_or_default();
    // An object without a certificate yet has no serial, thumbprint or validity (never `""` for a time: clients parse it as a date).
    let issued = r.issued();
    let x509 = X509Summary {
        cn: r.cn.clone(),
        sans: svc::sans_json(r),
        serial: issued.then(|| r.serial.clone()),
        thumbprint: issued.then(|| r.thumbprint.clone()),
        valid_from: issued.then(|| product_time(r.valid_from)),
        valid_to: issued.then(|| product_time(r.valid_to)),
    };
    CertificateSummary {
        created_on: product_time(r.created_at.secs()),
        dn: r.path.as_str().to_owned(),
        guid: r.guid.braced(),
        name: strongroom_core::tree::name_of(r.path.as_str()).to_owned(),
        parent_dn: parent.to_owned(),
        schema_class: schema_class(r).to_owned(),
        x509,
        links: vec![Link { details: format!("/vedsdk/certificates/%7b{}%7d", r.guid.as_str()) }],
    }
}

/// A time filter: RFC 3339 (or a date).
fn time_filter(v: &str) -> Result<i64, CertFailure> {
    svc::parse_end_date(v).ok_or_else(|| invalid(format!("{v:?} is not a date and time (RFC 3339).")))
}

#[utoipa::path(
    get,
    path = "/vedsdk/Certificates",
    tag = "certificates",
    description = "The certificates the caller may see, by DN, with the product's filters (names in any case): `CN`, \
        `SAN-DNS` (comma-separated, all must match), `Thumbprint`, `Serial`, `ParentDn`, `ParentDnRecursive`, \
        `ValidToGreater`, `ValidToLess` (RFC 3339), `Disabled`, `Limit` (default 100), `Offset`. The total before paging is \
        in `TotalCount` and the `X-Record-Count` header (VenafiPS pages by it; `HEAD` gives the header alone). Scope \
        `certificate`.",
    security(("bearer" = [])),
    responses((status = 200, description = "`{Certificates: […], DataRange, TotalCount}`", body = CertificatesResponse), CertRefusals),
)]
pub(crate) async fn search(
    State(app): State<HttpState>,
    VaultCaller(caller, _): VaultCaller<scope::Certificate>,
    Query(q): Query<HashMap<String, String>>,
) -> Answer {
    let q: HashMap<String, String> = q.into_iter().map(|(k, v)| (k.to_ascii_lowercase(), v)).filter(|(_, v)| !v.is_empty()).collect();
    let num = |k: &str, d: usize| -> Result<usize, CertFailure> {
        q.get(k).map_or(Ok(d), |v| v.trim().parse::<usize>().map_err(|_| invalid(format!("{k} must be a number."))))
    };
    let s = Search {
        cn: q.get("cn").cloned(),
        san_dns: q
            .get("san-dns")
            .map(|v| v.split(',').map(|x| x.trim().to_owned()).filter(|x| !x.is_empty()).collect())
            .unwrap_or_default(),
        thumbprint: q.get("thumbprint").cloned(),
        serial: q.get("serial").cloned(),
        parent_dn: q.get("parentdn").cloned(),
        parent_dn_recursive: q.get("parentdnrecursive").cloned(),
        valid_to_greater: q.get("validtogreater").map(|v| time_filter(v)).transpose()?,
        valid_to_less: q.get("validtoless").map(|v| time_filter(v)).transpose()?,
        disabled: q.get("disabled").map(|v| v == "1" || v.eq_ignore_ascii_case("true")),
        limit: num("limit", 100)?.min(10_000),
        offset: num("offset", 0)?,
    };
    let (page, total) = svc::search(&app, &caller, &s).await?;
    let first = if page.is_empty() { 0 } else { s.offset + 1 };
    let body = CertificatesResponse {
        certificates: page.iter().map(search_item).collect(),
        data_range: format!("Certificates {first} - {}", s.offset + page.len()),
        total_count: total as u64,
    };
    Ok(respond::with_record_count(&body, total))
}

async fn details(app: &HttpState, caller: &Caller, r: &CertRecord) -> Result<Value, CertFailure> {
    let _ = caller;
    let sans = svc::sans_json(r);
    let tpl = svc::template_of(r);
    let ca_dn = {
        let cas = app.store.cert_authorities().await.map_err(CertError::from)?;
        match svc::find_ca(&cas, &r.ca_key) {
            Some(c) => c.dn.clone(),
            None => tpl.as_ref().and_then(|t| t.certificate_authority.clone()).unwrap_or_default(),
        }
    };
    let mut out = json!({
        "Approver": tpl.as_ref().map(|t| t.approvers.clone()).unwrap_or_default(),
        "CertificateAuthorityDN": ca_dn,
        "Consumers": [],
        "Contact": tpl.as_ref().map(|t| t.contacts.clone()).unwrap_or_default(),
        "CreatedOn": product_time(r.created_at.secs()),
        "CustomFields": svc::field_values(app, r)
            .await?
            .iter()
            .map(|(f, v)| json!({"Name": f.name, "Type": fields::type_name(f.kind), "Value": v}))
            .collect::<Vec<_>>(),
        "Disabled": r.disabled,
        "DN": r.path.as_str(),
        "Guid": r.guid.braced(),
        "ManagementType": tpl.as_ref().and_then(|t| t.management_type.clone()).unwrap_or_else(|| "Enrollment".into()),
        "Name": strongroom_core::tree::name_of(r.path.as_str()),
        "ParentDn": strongroom_core::tree::parent_of(r.path.as_str()).unwrap_or_default(),
        // Issuance is synchronous: only a request waiting for approval (or rejected) is in
        // progress (or failed); idle is `{}` (Stage absent).
        "ProcessingDetails": {},
        "RenewalDetails": {},
        "SchemaClass": schema_class(r),
        "ValidationDetails": {},
    });
    if let Some(p) = svc::processing(&*app.store, r).await? {
        out["ProcessingDetails"] = json!({
            "InError": p.rejected,
            "InProcess": !p.rejected,
            "Stage": svc::PENDING_STAGE,
            "Status": p.status,
            "TicketDN": r.path.as_str(),
        });
    }
    if let Some(t) = &tpl {
        out["RenewalDetails"] = json!({
            "City": t.city, "Country": t.country, "Organization": t.organization,
            "OrganizationalUnit": t.organizational_unit, "State": t.state, "Subject": t.common_name,
            "SubjectAltNameDns": t.dns, "SubjectAltNameEmail": t.email, "SubjectAltNameIPAddress": t.ip, "SubjectAltNameUri": t.uri,
        });
    }
    if !r.issued() {
        // No certificate yet: what it will be issued for, no thumbprint (pyvenafi waits for one).
        out["CertificateDetails"] = json!({"CN": r.cn, "SubjectAltNameDNS": sans.get("DNS").cloned().unwrap_or(json!([]))});
        return Ok(out);
    }
    let facts = svc::current_facts(app, r).await?;
    let (alg, size) = match facts.key {
        strongroom_core::cert::KeySpec::Rsa(b) => ("RSA", b),
        strongroom_core::cert::KeySpec::Ec(c) => (
            "EC",
            match c {
                strongroom_core::cert::Curve::P256 => 256,
                strongroom_core::cert::Curve::P384 => 384,
                strongroom_core::cert::Curve::P521 => 521,
            },
        ),
    };
    out["CertificateDetails"] = json!({
            "CN": r.cn,
            "Issuer": facts.issuer,
            "KeyAlgorithm": alg,
            "KeySize": size,
            "SubjectAltNameDNS": sans.get("DNS").cloned().unwrap_or(json!([])),
            "Serial": r.serial,
            "Thumbprint": r.thumbprint,
            "StoreAdded": product_time(r.issued_at.secs()),
            "ValidFrom": product_time(r.valid_from),
            "ValidTo": product_time(r.valid_to),
    });
    Ok(out)
}

#[utoipa::path(
    get,
    path = "/vedsdk/Certificates/{guid}",
    tag = "certificates",
    description = "A certificate object by GUID (with or without braces, `%7B…%7D`; also `certificates%2f%7b…%7d`): its DN, \
        CA, current certificate's details, `Disabled`, `ProcessingDetails` (empty unless a request waits for Manual Approval: \
        `{Stage: 500, Status, InError, InProcess, TicketDN}`). An object \
        made with `Config/Create` shows its `Contact`, `Approver`, `ManagementType` and `RenewalDetails`, and until its first \
        enrollment `CertificateDetails` without a `Thumbprint`. Needs a right on it. Scope `certificate`.",
    security(("bearer" = [])),
    params(("guid" = String, Path, description = "The object's GUID.")),
    responses((status = 200, description = "The object.", body = Value), CertRefusals),
)]
pub(crate) async fn get_one(
    State(app): State<HttpState>,
    Path(guid): Path<String>,
    VaultCaller(caller, _): VaultCaller<scope::Certificate>,
) -> Answer {
    let r = svc::object_by_guid(&app, &caller, &guid).await?;
    Ok(ok(&details(&app, &caller, &r).await?))
}

#[utoipa::path(
    put,
    path = "/vedsdk/Certificates/{guid}",
    tag = "certificates",
    description = "Changes attributes of a certificate object: `AttributeData` `[{Name: \"Disabled\", Value: [\"1\"]}]` retires \
        it (`\"0\"` enables it); the `X509 SubjectAltName *` attributes vcert clears before a renewal with `OmitSANs` are \
        accepted (a renewal from a CSR takes its names from the CSR). Other attributes are 400. Needs Write. Scope \
        `certificate:manage`.",
    security(("bearer" = [])),
    params(("guid" = String, Path, description = "The object's GUID.")),
    request_body(content = CertificateUpdateRequest, description = "A JSON object; keys match in any case, integers may be numeric strings, booleans `true` or `\"true\"`."),
    responses((status = 200, description = "`{Success: true}`", body = SuccessResponse), CertRefusals),
)]
pub(crate) async fn put_one(State(app): State<HttpState>, Path(guid): Path<String>, c: CertCall<scope::CertificateManage>) -> Answer {
    let r = svc::object_by_guid(&app, &c.caller, &guid).await?;
    for a in c.body.objects(&["AttributeData"])?.unwrap_or_default() {
        let name = a.text(&["Name"])?.unwrap_or_default();
        if name.eq_ignore_ascii_case("Disabled") {
            let v = match a.strings(&["Value"]) {
                Ok(Some(v)) => v.first().cloned().unwrap_or_default(),
                _ => a.text(&["Value"])?.unwrap_or_default(),
            };
            svc::set_disabled(&app, &c.caller, &r, v.trim() == "1" || v.trim().eq_ignore_ascii_case("true")).await?;
        } else if !name.to_ascii_lowercase().starts_with("x509 subjectaltname") {
            return Err(invalid(format!("Attribute {name:?} cannot be changed here.")));
        }
    }
    Ok(ok(&SuccessResponse::DONE))
}

#[utoipa::path(
    delete,
    path = "/vedsdk/Certificates/{guid}",
    tag = "certificates",
    description = "Deletes a certificate object with its certificate, key and CSR entries (current and archived). Needs \
        Delete. Scope `certificate:delete`.",
    security(("bearer" = [])),
    params(("guid" = String, Path, description = "The object's GUID.")),
    responses((status = 200, description = "`{Success: true}`", body = SuccessResponse), CertRefusals),
)]
pub(crate) async fn delete_one(
    State(app): State<HttpState>,
    Path(guid): Path<String>,
    VaultCaller(caller, _): VaultCaller<scope::CertificateDelete>,
) -> Answer {
    let r = svc::object_by_guid(&app, &caller, &guid).await?;
    svc::delete(&app, &caller, &r).await?;
    Ok(ok(&SuccessResponse::DONE))
}

#[utoipa::path(
    get,
    path = "/vedsdk/Certificates/{guid}/PreviousVersions",
    tag = "certificates",
    description = "The archived certificates of an object, newest first: `PreviousVersions[{VaultId, CertificateDetails}]` \
        (`ExcludeExpired`, `ExcludeRevoked`). Each can be downloaded with `Certificates/Retrieve/{vaultId}`. Scope \
        `certificate`.",
    security(("bearer" = [])),
    params(("guid" = String, Path, description = "The object's GUID.")),
    responses((status = 200, description = "`{PreviousVersions: […]}`", body = PreviousVersionsResponse), CertRefusals),
)]
pub(crate) async fn previous_versions(
    State(app): State<HttpState>,
    Path(guid): Path<String>,
    VaultCaller(caller, _): VaultCaller<scope::Certificate>,
    Query(q): Query<HashMap<String, String>>,
) -> Answer {
    let q: HashMap<String, String> = q.into_iter().map(|(k, v)| (k.to_ascii_lowercase(), v.to_ascii_lowercase())).collect();
    let yes = |k: &str| q.get(k).is_some_and(|v| v == "true" || v == "1");
    let r = svc::object_by_guid(&app, &caller, &guid).await?;
    let now = app.now().secs();
    let previous_versions = svc::previous_versions(&app, &r)
        .await?
        .into_iter()
        .filter(|v| !(yes("excludeexpired") && v.facts.not_after < now))
        .filter(|v| !(yes("excluderevoked") && v.revoked))
        .map(|v| PreviousVersion {
            certificate_details: PreviousCertificateDetails {
                cn: v.facts.subject.iter().find(|(k, _)| k == "CN").map(|(_, x)| x.clone()).unwrap_or_default(),
                issuer: v.facts.issuer,
                revoked: v.revoked,
                serial: v.facts.serial,
                thumbprint: v.facts.thumbprint,
                valid_from: product_time(v.facts.not_before),
                valid_to: product_time(v.facts.not_after),
            },
            vault_id: v.vault_id.0,
        })
        .collect();
    Ok(ok(&PreviousVersionsResponse { previous_versions }))
}

#[utoipa::path(
    get,
    path = "/crl/{name}",
    tag = "certificates",
    description = "The CRL of a CA (`NAME.crl`; DER, `application/pkix-crl`) listing its revocations whose certificates have \
        not expired or expired less than a day ago, valid a day after it was signed: the one signed last while it lists exactly \
        those and is less than an hour old, else signed now. No authentication: every issued certificate names this URL in its \
        CRL distribution point.",
    params(("name" = String, Path, description = "The CA's name, lower case, `.crl` after it.")),
    responses(
        (status = 200, description = "The CRL (DER).", content_type = "application/pkix-crl"),
        (status = 404, description = "No such CA, or an intermediate CA whose certificate is not installed yet."),
        (status = 408, response = Timeout),
        (status = 503, response = Unavailable),
    ),
)]
pub(crate) async fn crl(State(app): State<HttpState>, Path(name): Path<String>) -> Answer {
    match svc::crl(&app, &name).await? {
        Some(der) => Ok(respond::crl(der)),
        None => Ok(respond::not_found()),
    }
}

#[cfg(test)]
mod tests {
    //! The `proto::certificates` request types are what a client sends; the
    //! handlers read bodies leniently through `SdkBody`. Each type,
    //! serialised, reads back through the handlers' readers to the values
    //! sent.

    use super::*;
    use strongroom_proto::certificates::{
        CaSpecificAttribute, CustomFieldValues, GuidData, PolicyAttributeRequest, SubjectAltName, TicketEnumerateRequest, TicketRequest,
        TicketUpdateRequest,
    };
    use strongroom_proto::config::{AttributeValue, NameAttribute};

    fn read<T: serde::Serialize>(req: &T) -> SdkBody {
        SdkBody::parse(&serde_json::to_vec(req).unwrap()).unwrap()
    }

    #[test]
    fn an_enrollment_reads_back() {
        let r = EnrollmentRequest {
            policy_dn: "\\VED\\Policy\\apps".into(),
            object_name: Some("web".into()),
            subject: Some("www.example.com".into()),
            organization: Some("Acme".into()),
            organizational_unit: Some(vec!["Ops".into(), "Web".into()]),
            city: Some("Ghent".into()),
            state: Some("OVL".into()),
            country: Some("BE".into()),
            subject_alt_names: Some(vec![
                SubjectAltName { kind: Some(2), type_name: None, name: "www.example.com".into() },
                SubjectAltName { kind: None, type_name: Some("IP".into()), name: "192.0.2.1".into() },
            ]),
            key_algorithm: Some("RSA".into()),
            key_bit_size: Some(3072),
            cadn: Some("\\VED\\Policy\\CAs\\Issuing".into()),
            ca_specific_attributes: Some(vec![CaSpecificAttribute { name: "Specific End Date".into(), value: "2030-01-01".into() }]),
            disable_automatic_renewal: Some(true),
            custom_fields: Some(vec![CustomFieldValues { name: "Owner".into(), values: vec!["Ops".into()] }]),
            work_to_do_timeout: Some(60),
            retrieve: RetrieveFormat {
                format: Some("PKCS #12".into()),
                include_chain: Some(true),
                root_first_order: Some(true),
                include_private_key: Some(true),
                password: Some(SecretString("correct horse battery".into())),
                friendly_name: Some("web".into()),
            },
            ..EnrollmentRequest::default()
        };
        let b = read(&r);
        let i = request_input(&b).unwrap();
        assert_eq!(
            (i.policy_dn.as_str(), i.object_name.as_deref(), i.subject.as_deref()),
            ("\\VED\\Policy\\apps", Some("web"), Some("www.example.com"))
        );
        assert_eq!(
            (i.organization.as_deref(), i.city.as_deref(), i.state.as_deref(), i.country.as_deref()),
            (Some("Acme"), Some("Ghent"), Some("OVL"), Some("BE"))
        );
        assert_eq!(i.organizational_unit, ["Ops", "Web"]);
        assert_eq!(i.sans, [("2".to_owned(), "www.example.com".to_owned()), ("IP".to_owned(), "192.0.2.1".to_owned())]);
        assert_eq!(
            (i.key_algorithm.as_deref(), i.key_bit_size, i.cadn.as_deref()),
            (Some("RSA"), Some(3072), Some("\\VED\\Policy\\CAs\\Issuing"))
        );
        assert_eq!((i.end_date.as_deref(), i.disable_automatic_renewal), (Some("2030-01-01"), true));
        assert_eq!(i.custom_fields, [("Owner".to_owned(), vec!["Ops".to_owned()])]);
        assert_eq!(work_to_do_timeout(&b).ok(), Some(Some(60)));
        let f = retrieve_input(&b).unwrap();
        assert_eq!((f.format, f.include_chain, f.root_first, f.include_private_key), (Format::Pkcs12, true, true, true));
        assert_eq!(
            (f.password.as_ref().map(SecretString::expose), f.friendly_name.as_deref()),
            (Some("correct horse battery"), Some("web"))
        );

        let csr = EnrollmentRequest {
            policy_dn: "apps".into(),
            pkcs10: Some("-----BEGIN CERTIFICATE REQUEST-----".into()),
            elliptic_curve: Some("P384".into()),
            pkix_parameter_set: Some("1.2.840.10045.3.1.7".into()),
            ..EnrollmentRequest::default()
        };
        let b = read(&csr);
        let i = request_input(&b).unwrap();
        assert_eq!(i.pkcs10, csr.pkcs10);
        assert_eq!((i.elliptic_curve.as_deref(), i.pkix_parameter_set.as_deref()), (Some("P384"), Some("1.2.840.10045.3.1.7")));
        assert!(i.sans.is_empty() && i.custom_fields.is_empty() && !i.disable_automatic_renewal);
        assert_eq!(work_to_do_timeout(&b).ok(), Some(None));
        assert_eq!(retrieve_input(&b).unwrap().format, Format::Base64);
    }

    #[test]
    fn the_other_certificate_calls_read_back() {
        let dn = "\\VED\\Policy\\apps\\web";
        let b = read(&CheckPolicyRequest { policy_dn: "\\VED\\Policy\\apps".into() });
        assert_eq!(b.string(&["PolicyDN"]), Ok(Some("\\VED\\Policy\\apps".into())));
        let b = read(&CertRetrieveRequest {
            certificate_dn: Some(dn.into()),
            thumbprint: Some("AB12".into()),
            work_to_do_timeout: Some(5),
            retrieve: RetrieveFormat { format: Some("DER".into()), ..RetrieveFormat::default() },
        });
        assert_eq!((b.string(&["CertificateDN"]), b.string(&["Thumbprint"])), (Ok(Some(dn.into())), Ok(Some("AB12".into()))));
        assert_eq!((work_to_do_timeout(&b).ok(), retrieve_input(&b).map(|f| f.format).ok()), (Some(Some(5)), Some(Format::Der)));
        let b = read(&RenewRequest { certificate_dn: dn.into(), pkcs10: Some("csr".into()), reenable: Some(true) });
        assert_eq!(
            (b.string(&["CertificateDN"]), b.string(&["PKCS10"]), b.flag(&["Reenable"])),
            (Ok(Some(dn.into())), Ok(Some("csr".into())), Ok(Some(true)))
        );
        let b = read(&CertRevokeRequest {
            certificate_dn: Some(dn.into()),
            thumbprint: None,
            reason: Some(4),
            disable: Some(true),
            comments: Some("moved".into()),
        });
        assert_eq!((b.string(&["CertificateDN"]), b.string(&["Thumbprint"])), (Ok(Some(dn.into())), Ok(None)));
        assert_eq!(
            (b.int64(&["Reason"]), b.flag(&["Disable"]), b.text(&["Comments"])),
            (Ok(Some(4)), Ok(Some(true)), Ok(Some("moved".into())))
        );
        let b = read(&CertificateDnRequest { certificate_dn: dn.into() });
        assert_eq!(b.string(&["CertificateDN"]), Ok(Some(dn.into())));
        let b = read(&CertificateUpdateRequest {
            attribute_data: vec![NameAttribute { name: "Disabled".into(), value: Some(AttributeValue::Many(vec!["1".into()])) }],
        });
        let a = b.objects(&["AttributeData"]).unwrap().unwrap();
        assert_eq!((a[0].text(&["Name"]), a[0].strings(&["Value"])), (Ok(Some("Disabled".into())), Ok(Some(vec!["1".into()]))));
    }

    #[test]
    fn metadata_tickets_and_policy_attributes_read_back() {
        let dn = "\\VED\\Policy\\apps\\web";
        let b = read(&MetadataGetRequest { dn: dn.into(), all: Some(true) });
        assert_eq!((b.string(&["DN"]), b.flag(&["All"])), (Ok(Some(dn.into())), Ok(Some(true))));
        assert_eq!(read(&MetadataDnRequest { dn: dn.into() }).string(&["DN"]), Ok(Some(dn.into())));
        let b = read(&MetadataSetRequest {
            dn: dn.into(),
            guid_data: vec![GuidData { item_guid: "{f}".into(), list: vec!["a".into(), "b".into()] }],
            keep_existing: Some(true),
        });
        let g = b.objects(&["GuidData"]).unwrap().unwrap();
        assert_eq!((g[0].text(&["ItemGuid"]), g[0].strings(&["List"])), (Ok(Some("{f}".into())), Ok(Some(vec!["a".into(), "b".into()]))));
        assert_eq!(b.flag(&["KeepExisting"]), Ok(Some(true)));
        let b = read(&TicketEnumerateRequest { object_dn: Some(dn.into()) });
        assert_eq!(b.string(&["ObjectDN"]), Ok(Some(dn.into())));
        assert_eq!(read(&TicketRequest { guid: "{g}".into() }).string(&["GUID"]), Ok(Some("{g}".into())));
        let b = read(&TicketUpdateRequest { guid: "{g}".into(), status: "Rejected".into(), explanation: Some("no".into()) });
        assert_eq!(
            (b.string(&["GUID"]), b.string(&["Status"]), b.text(&["Explanation"])),
            (Ok(Some("{g}".into())), Ok(Some("Rejected".into())), Ok(Some("no".into())))
        );
        let b = read(&PolicyAttributeRequest {
            object_dn: "\\VED\\Policy\\apps".into(),
            class: "X509 Certificate".into(),
            attribute_name: "Organization".into(),
            values: Some(vec!["Acme".into()]),
            locked: Some(true),
        });
        assert_eq!(
            (b.string(&["ObjectDN"]), b.string(&["Class"]), b.string(&["AttributeName"])),
            (Ok(Some("\\VED\\Policy\\apps".into())), Ok(Some("X509 Certificate".into())), Ok(Some("Organization".into())))
        );
        assert_eq!((b.strings(&["Values"]), b.flag(&["Locked"])), (Ok(Some(vec!["Acme".into()])), Ok(Some(true))));
    }
}
