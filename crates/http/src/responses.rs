//! The responses many operations share, each a `components/responses` (or
//! `components/schemas`) entry of the OpenAPI document: handlers name them
//! in their `#[utoipa::path]` attributes, and `openapi` lists them once. A
//! module of its own so that handlers depend on it and not on `openapi`,
//! which depends on every handler.

use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::schema::{AnyOfBuilder, OneOfBuilder, Schema};
use utoipa::openapi::{ContentBuilder, Ref, RefOr};
use utoipa::{PartialSchema, ToResponse, ToSchema};

use std::collections::BTreeMap;

use strongroom_proto::certificates::SuccessResponse;
use strongroom_proto::vedauth::ErrorResponse;
use strongroom_proto::vedsdk::{
    AddResponse, BearerErrorResponse, EncryptionKeysResponse, ErrorOnly, LogResponse, OwnersResponse, RetrieveResponse,
    TypedNameValuesResponse, ValueResponse, VaultIdsResponse,
};

/// What `/healthz`, `/health/live` and `/health/ready` answer.
#[derive(ToSchema)]
#[allow(dead_code)] // a description only: `respond::healthy` writes it
pub(crate) struct HealthStatus {
    /// `ok`, or `unavailable` when the store is not ready.
    #[schema(example = "ok")]
    status: String,
}

/// The schema of a refused SecretStore call (`openapi` adds it).
pub(crate) const REFUSAL: &str = "Refusal";

/// The HTTP 200 answers of a SecretStore call that returns more than
/// `Result` on success: that body, or a [`REFUSAL`].
macro_rules! answer {
    ($name:ident, $ok:ty) => {
        #[derive(Debug)]
        pub(crate) struct $name;
        impl PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                OneOfBuilder::new().item(Ref::from_schema_name(<$ok as ToSchema>::name())).item(Ref::from_schema_name(REFUSAL)).into()
            }
        }
        impl ToSchema for $name {}
    };
}

answer!(AddAnswer, AddResponse);
answer!(RetrieveAnswer, RetrieveResponse);
answer!(IdsAnswer, VaultIdsResponse);
answer!(ValueAnswer, ValueResponse);
answer!(TypedNameValuesAnswer, TypedNameValuesResponse);
answer!(OwnersAnswer, OwnersResponse);
answer!(KeysAnswer, EncryptionKeysResponse);
answer!(LogAnswer, LogResponse);

fn json_response(description: &str, schema: &str) -> RefOr<utoipa::openapi::Response> {
    ResponseBuilder::new()
        .description(description)
        .content("application/json", ContentBuilder::new().schema(Some(Ref::from_schema_name(schema))).build())
        .build()
        .into()
}

/// A JSON response whose body is any of `schemas` (`anyOf`: a refusal
/// `{"Success": false, "Error"}` is also an `{"Error"}`).
fn json_response_any_of(description: &str, schemas: &[&str]) -> RefOr<utoipa::openapi::Response> {
    let any_of = schemas.iter().fold(AnyOfBuilder::new(), |b, s| b.item(Ref::from_schema_name(*s)));
    ResponseBuilder::new()
        .description(description)
        .content("application/json", ContentBuilder::new().schema(Some(any_of)).build())
        .build()
        .into()
}

/// Responses shared by many operations, each a `components/responses` entry
/// (with `[A, B]`, a body of either schema).
macro_rules! shared_response {
    ($name:ident, [$($schema:ty),+], $description:expr) => {
        #[derive(Debug)]
        pub(crate) struct $name;
        impl<'r> ToResponse<'r> for $name {
            fn response() -> (&'r str, RefOr<utoipa::openapi::Response>) {
                (stringify!($name), json_response_any_of($description, &[$(&<$schema as ToSchema>::name()),+]))
            }
        }
    };
    ($name:ident, $schema:ty, $description:expr) => {
        #[derive(Debug)]
        pub(crate) struct $name;
        impl<'r> ToResponse<'r> for $name {
            fn response() -> (&'r str, RefOr<utoipa::openapi::Response>) {
                (stringify!($name), json_response($description, &<$schema as ToSchema>::name()))
            }
        }
    };
}

shared_response!(
    AuthRefused,
    ErrorResponse,
    "Refused (RFC 6749 §5.2): `invalid_request` (also for a body that does not parse or a Content-Type other than \
     JSON or form, and, as the interface requires, for an internal error other than a passing store failure: a \
     generic text), `invalid_client`, `invalid_grant`, `invalid_scope`, `unauthorized_client`, \
     `authorization_pending`, `slow_down`, `access_denied`."
);
shared_response!(
    AuthUnavailable,
    ErrorResponse,
    "`temporarily_unavailable` (RFC 6749 §5.2): the database is busy, out of reach or taking no writes for the moment \
     (a failover, a lock held too long); the request was read again a few times first. Try again after `Retry-After` \
     seconds: a refresh token or device code presented again is answered by its retry rules."
);
shared_response!(AuthTooLarge, ErrorResponse, "The body is larger than `max_body_bytes`.");
shared_response!(
    Unauthorized,
    BearerErrorResponse,
    "`invalid_token`: the bearer token is missing, unknown, expired or revoked (RFC 6750 §3.1). Refresh and retry."
);
shared_response!(Forbidden, BearerErrorResponse, "`insufficient_scope`: the token's scope does not cover this call.");
shared_response!(Unavailable, BearerErrorResponse, "`temporarily_unavailable`: the store did not answer.");
shared_response!(BadJson, ErrorOnly, "The body is not a JSON object.");

/// 408 from the router's timeout layer: no body.
#[derive(Debug)]
pub(crate) struct Timeout;

impl<'r> ToResponse<'r> for Timeout {
    fn response() -> (&'r str, RefOr<utoipa::openapi::Response>) {
        (
            "Timeout",
            ResponseBuilder::new()
                .description(
                    "No answer within `request_timeout_secs` (the body did not arrive, or the store did not answer in time); \
                     empty body. Nothing is known to have changed: retry.",
                )
                .build()
                .into(),
        )
    }
}
shared_response!(SdkTooLarge, ErrorOnly, "The body is larger than `max_body_bytes`.");

/// A set of responses by status, each a reference to its shared response,
/// named once in each operation's `responses(...)`.
macro_rules! refusals {
    ($(#[$doc:meta])* $name:ident { $($status:literal => $response:ty),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub(crate) struct $name;

        impl utoipa::IntoResponses for $name {
            fn responses() -> BTreeMap<String, RefOr<utoipa::openapi::Response>> {
                [$(($status, <$response as ToResponse>::response().0)),+]
                    .into_iter()
                    .map(|(status, name)| (status.to_owned(), RefOr::Ref(Ref::from_response_name(name))))
                    .collect()
            }
        }
    };
}

refusals! {
    /// What every bearer-protected `/vedsdk` operation may answer besides its
    /// 200: 400 (not JSON), 401, 403, 408 (the timeout layer), 413 and 503.
    SdkRefusals { "400" => BadJson, "401" => Unauthorized, "403" => Forbidden, "408" => Timeout, "413" => SdkTooLarge, "503" => Unavailable }
}

shared_response!(
    CertRefused,
    ErrorOnly,
    "Refused; nothing was done. The reason in `Error`: a policy violation, bad input, a name that is no name, a folder or \
     certificate that does not exist (`Certificate does not exist.` is also the status line's), or a body that is not a JSON \
     object."
);
shared_response!(
    CertForbidden,
    [BearerErrorResponse, ErrorOnly],
    "`insufficient_scope`: the token's scope does not cover this call; or a right on the object or folder is missing: \
     `{\"Error\"}` (never 401, which means only a bad token)."
);
shared_response!(
    CertRefusedUnsuccessful,
    [SuccessResponse, ErrorOnly],
    "Refused; nothing was done: `{\"Success\": false, \"Error\"}` (a body that is not a JSON object: `{\"Error\"}`)."
);
shared_response!(
    CertForbiddenUnsuccessful,
    [BearerErrorResponse, SuccessResponse],
    "`insufficient_scope`: the token's scope does not cover this call; or a right on the object is missing: \
     `{\"Success\": false, \"Error\"}`."
);
shared_response!(
    KeysBusy,
    ErrorOnly,
    "Too many keys asked of the server at once (this caller's, or all: `[key_generation]`): nothing was requested. Try \
     again after `Retry-After` seconds."
);
shared_response!(
    KeysBusyUnsuccessful,
    SuccessResponse,
    "Too many keys asked of the server at once (this caller's, or all: `[key_generation]`): nothing was renewed, \
     `{\"Success\": false, \"Error\"}`. Try again after `Retry-After` seconds."
);

refusals! {
    /// What a certificate call (`Certificates/*`, `Metadata/*`,
    /// `Workflow/Ticket/*`, the certificate policy calls) may answer
    /// besides its 200: 400 and 403 `{"Error"}` (403 for a missing scope is
    /// the bearer's shape), and the shared 401, 408, 413 and 503.
    CertRefusals { "400" => CertRefused, "401" => Unauthorized, "403" => CertForbidden, "408" => Timeout, "413" => SdkTooLarge, "503" => Unavailable }
}

refusals! {
    /// [`CertRefusals`] for the calls whose clients read `Success`
    /// (`Renew`, `Revoke`): a refusal is `{"Success": false, "Error"}`.
    CertUnsuccessful {
        "400" => CertRefusedUnsuccessful,
        "401" => Unauthorized,
        "403" => CertForbiddenUnsuccessful,
        "408" => Timeout,
        "413" => SdkTooLarge,
        "503" => Unavailable,
    }
}

/// What the product's Identity and Teams calls may answer besides their 200
/// (the groups, teams and password calls): 400 and 403 with only `Message`
/// (a 403 for a missing scope is the bearer's shape), and the shared 401,
/// 408, 413 and 503.
#[derive(Debug)]
pub(crate) struct IdentityRefusals;

impl utoipa::IntoResponses for IdentityRefusals {
    fn responses() -> BTreeMap<String, RefOr<utoipa::openapi::Response>> {
        let inline = |description: &str, schema: &str| {
            RefOr::T(
                ResponseBuilder::new()
                    .description(description)
                    .content("application/json", ContentBuilder::new().schema(Some(Ref::from_schema_name(schema))).build())
                    .build(),
            )
        };
        let shared = |name: String| RefOr::Ref(Ref::from_response_name(name));
        [
            ("400", inline("Refused: only `Message`.", "MessageOnly")),
            ("401", shared(<Unauthorized as ToResponse>::response().0.to_owned())),
            ("403", inline("A missing scope (`insufficient_scope`), or the caller lacks the role (`Message`).", "GroupForbidden")),
            ("408", shared(<Timeout as ToResponse>::response().0.to_owned())),
            ("413", shared(<SdkTooLarge as ToResponse>::response().0.to_owned())),
            ("503", shared(<Unavailable as ToResponse>::response().0.to_owned())),
        ]
        .into_iter()
        .map(|(status, response)| (status.to_owned(), response))
        .collect()
    }
}
