//! The OpenAPI 3.1 description of the HTTP interface, generated from the
//! handlers' `#[utoipa::path]` attributes and the `proto` types' schemas
//! (proto's `openapi` feature). Served at `GET /openapi.json`; the
//! repository's `openapi.json` is a copy that a test keeps in sync
//! (`strongroom openapi > openapi.json`).
//!
//! The paths are written in the product's casing; the server matches them in
//! any case. Request schemas give the canonical form: the server also accepts
//! `/vedsdk` keys in any case and numbers as numeric strings.

use std::sync::LazyLock;

use axum::response::Response;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::Schema;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi, PartialSchema};

use strongroom_proto::vedauth::{
    AuthorizationServerMetadata, CertificateRequest, DeviceRequest, DeviceResponse, ErrorResponse, IsAuthServerResponse, JwtRequest,
    OAuthRequest, RevocationRequest, TokenRequest, TokenResponse, VerifyResponse,
};
use strongroom_proto::vedsdk::{
    AddRequest, AddResponse, AssociateRequest, BearerErrorResponse, BrowseRequest, DefaultKeyResponse, DissociateRequest,
    EncryptionKeysResponse, ErrorOnly, IdentitiesResponse, IdentityEntry, IdentityName, IdentityRequest, LogApplicationDefinition,
    LogEvent, LogEventDefinition, LogRequest, LogResponse, LogResultResponse, LogSchemaResponse, LookupAssociationRequest,
    LookupByAssociationRequest, LookupByOwnerRequest, LookupByVaultTypeRequest, MutateRequest, NamespacesResponse, OrphanLookupRequest,
    OwnerAddRequest, OwnerDeleteRequest, OwnerLookupRequest, OwnersResponse, RetrieveResponse, TypedNameValuesResponse, ValidateResponse,
    ValueResponse, VaultIdRequest, VaultIdsResponse, VersionResponse,
};
use strongroom_proto::vedsdk::{ResultCode, ResultResponse};

use super::respond::ok;
use super::responses::*;

/// The name of the bearer security scheme the `/vedsdk` operations require.
pub(crate) const BEARER: &str = "bearer";

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Strongroom",
        description = "A self-hosted token authority (`/vedauth`: RFC 8628 device flow, password grant, refresh with \
            rotation) and secret vault (`/vedsdk/SecretStore`) speaking the product's WebSDK interface. Paths match in \
            any case; `/vedsdk` bodies are JSON objects whose keys match in any case and whose integers may be sent as \
            numeric strings. A refused SecretStore call is HTTP 200 with a non-zero `Result` and the reason in `Error`.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    components(
        schemas(
            ResultCode,
            ResultResponse,
            ErrorOnly,
            ErrorResponse,
            BearerErrorResponse,
            DeviceRequest,
            DeviceResponse,
            TokenRequest,
            TokenResponse,
            OAuthRequest,
            JwtRequest,
            CertificateRequest,
            IsAuthServerResponse,
            VerifyResponse,
            RevocationRequest,
            AuthorizationServerMetadata,
            VersionResponse,
            AddRequest,
            AddResponse,
            VaultIdRequest,
            RetrieveResponse,
            AssociateRequest,
            DissociateRequest,
            LookupByAssociationRequest,
            LookupAssociationRequest,
            ValueResponse,
            TypedNameValuesResponse,
            LookupByOwnerRequest,
            LookupByVaultTypeRequest,
            OrphanLookupRequest,
            OwnerAddRequest,
            OwnerDeleteRequest,
            OwnerLookupRequest,
            OwnersResponse,
            MutateRequest,
            VaultIdsResponse,
            EncryptionKeysResponse,
            DefaultKeyResponse,
            LogResponse,
            LogEvent,
            LogSchemaResponse,
            LogEventDefinition,
            LogApplicationDefinition,
            NamespacesResponse,
            IdentityEntry,
            IdentitiesResponse,
            IdentityName,
            IdentityRequest,
            ValidateResponse,
            BrowseRequest,
            LogRequest,
            LogResultResponse,
            strongroom_proto::config::ConfigRequest,
            strongroom_proto::config::NameAttribute,
            strongroom_proto::config::AttributeValue,
            strongroom_proto::config::Flag,
            strongroom_proto::config::ConfigObject,
            strongroom_proto::config::ObjectResponse,
            strongroom_proto::config::ObjectsResponse,
            strongroom_proto::config::DnToGuidResponse,
            strongroom_proto::config::GuidToDnResponse,
            strongroom_proto::config::ConfigResult,
            strongroom_proto::credentials::CredentialRequest,
            strongroom_proto::credentials::NameTypeValue,
            strongroom_proto::credentials::CredentialResult,
            strongroom_proto::credentials::CredentialRetrieveResponse,
            strongroom_proto::credentials::CredentialInfo,
            strongroom_proto::credentials::CredentialEnumerateResponse,
            strongroom_proto::permissions::PermissionsRequest,
            strongroom_proto::permissions::Permissions,
            strongroom_proto::permissions::PrincipalPermissions,
            strongroom_proto::permissions::EffectivePermissions,
        ),
        responses(
            AuthRefused,
            AuthTooLarge,
            AuthUnavailable,
            Unauthorized,
            Forbidden,
            Unavailable,
            BadJson,
            SdkTooLarge,
            Timeout,
            CertRefused,
            CertForbidden,
            CertRefusedUnsuccessful,
            CertForbiddenUnsuccessful,
            KeysBusy,
            KeysBusyUnsuccessful,
        ),
    ),
    modifiers(&Additions),
    tags(
        (name = "vedauth", description = "Tokens: device authorization, exchange, refresh, password grant, JWT and certificate grants, verify, revoke."),
        (name = "approval page", description = "The browser page where a user approves a device code (HTML forms)."),
        (name = "admin console", description = "The administrators' pages at `/admin` (HTML forms; a session cookie and the anti-forgery token)."),
        (name = "vedsdk", description = "The WebSDK: SecretStore, the event log, the API level."),
        (name = "certificates", description = "Certificates from Strongroom's own CAs (`/vedsdk/Certificates/*`, `metadata/*`, the CRLs)."),
        (name = "oauth", description = "API integrations, who may use them and their grants (`/vedsdk/oauth/*`): Master Admins only."),
        (name = "server", description = "Health and this description."),
    ),
)]
struct ApiDoc;

/// The description, built once.
static DOCUMENT: LazyLock<utoipa::openapi::OpenApi> = LazyLock::new(|| {
    let mut doc = ApiDoc::openapi();
    doc.merge(crate::Operations::openapi());
    doc
});

/// The OpenAPI document.
pub fn document() -> utoipa::openapi::OpenApi {
    DOCUMENT.clone()
}

/// The document as the committed `openapi.json` holds it: pretty JSON and a
/// final newline.
pub fn document_json() -> Result<String, serde_json::Error> {
    serde_json::to_string_pretty(&*DOCUMENT).map(|s| s + "\n")
}

/// `GET /openapi.json`: no credentials needed.
#[utoipa::path(
    get,
    path = "/openapi.json",
    tag = "server",
    responses((status = 200, description = "This OpenAPI 3.1 document.", body = serde_json::Value)),
)]
pub(crate) async fn openapi_json() -> Response {
    ok(&*DOCUMENT)
}

/// The bearer scheme, and `Refusal`: the body of a refused SecretStore call,
/// which is [`ResultResponse`] with `Error` always present.
struct Additions;

impl Modify for Additions {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(BEARER, SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()));
        let mut refusal = ResultResponse::schema();
        if let RefOr::T(Schema::Object(o)) = &mut refusal {
            o.required = vec!["Result".to_owned(), "Error".to_owned()];
            o.description = Some("A refused SecretStore call: HTTP 200, a non-zero `Result`, and the reason in `Error`.".to_owned());
        }
        components.schemas.insert(REFUSAL.to_owned(), refusal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    match (k.as_str(), v) {
                        ("$ref", serde_json::Value::String(r)) => out.push(r.clone()),
                        _ => refs(v, out),
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }

    #[test]
    fn every_reference_resolves() {
        let doc = serde_json::to_value(document()).unwrap();
        let mut found = Vec::new();
        refs(&doc, &mut found);
        assert!(found.len() > 40, "{}", found.len());
        for r in found {
            let pointer = r.strip_prefix('#').unwrap_or_else(|| panic!("external reference {r}"));
            assert!(doc.pointer(pointer).is_some(), "{r} does not resolve");
        }
    }

    /// The committed `openapi.json` is what the code generates.
    #[test]
    fn the_committed_document_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../openapi.json");
        let generated = document_json().unwrap();
        if std::env::var_os("STRONGROOM_BLESS").is_some_and(|v| v == "1") {
            std::fs::write(&path, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == generated,
            "{} is not the OpenAPI document the code generates; regenerate it with\n    \
             cargo run -q -p strongroom -- openapi > openapi.json\n(or STRONGROOM_BLESS=1 cargo test -p strongroom-server --lib openapi)",
            path.display()
        );
    }

    /// Every route the router serves is described, under each method it
    /// routes, and nothing else is: a line's methods in the `api!` list are
    /// those its handler's attribute documents (its path comes from there).
    #[test]
    fn every_route_is_described() {
        const METHODS: [&str; 8] = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
        let doc = serde_json::to_value(document()).unwrap();
        let described: std::collections::BTreeSet<(String, String)> = doc["paths"]
            .as_object()
            .unwrap()
            .iter()
            .flat_map(|(path, item)| {
                item.as_object().unwrap().keys().filter(|m| METHODS.contains(&m.as_str())).map(|m| (path.to_ascii_lowercase(), m.clone()))
            })
            .collect();
        let served: std::collections::BTreeSet<(String, String)> = crate::PATHS
            .iter()
            .zip(crate::lines())
            .flat_map(|(path, line)| line.methods.iter().map(|m| (path.clone(), (*m).to_owned())))
            .collect();
        assert!(served.len() > 150, "{}", served.len());
        let missing: Vec<_> = served.difference(&described).collect();
        assert!(missing.is_empty(), "routes whose handler's #[utoipa::path] does not document the method: {missing:?}");
        let extra: Vec<_> = described.difference(&served).collect();
        assert!(extra.is_empty(), "documented operations the router does not serve: {extra:?}");
    }

    /// No two schemas share a name: the document keeps one schema per name,
    /// so a second one would describe another type's body as its own.
    #[test]
    fn schema_names_are_unique() {
        let mut seen = std::collections::BTreeMap::new();
        let documents = std::iter::once(ApiDoc::openapi()).chain(crate::lines().into_iter().map(|l| (l.document)()));
        for (name, schema) in documents.flat_map(|d| d.components.map(|c| c.schemas).unwrap_or_default()) {
            let schema = serde_json::to_value(schema).unwrap();
            let first = seen.entry(name.clone()).or_insert_with(|| schema.clone());
            assert_eq!(*first, schema, "two different schemas are named {name}");
        }
        assert!(seen.len() > 100, "{}", seen.len());
    }

    /// 408 (the timeout layer wraps every route) is described wherever a
    /// handler waits for a body or the store; 503 wherever `respond` answers
    /// `temporarily_unavailable` or the page's store failure: on Device,
    /// Token and OAuth too, for a store that fails for a moment (any other
    /// internal error there is a 400 `invalid_request`, the interface's rule).
    #[test]
    fn timeouts_and_unavailability_are_described_where_they_happen() {
        let doc = serde_json::to_value(document()).unwrap();
        // Answered from memory: nothing to wait for.
        let immediate = [
            ("/", "get"),
            ("/.well-known/oauth-authorization-server", "get"),
            ("/health/live", "get"),
            ("/metrics", "get"),
            ("/openapi.json", "get"),
            ("/vedauth/device", "get"),
            ("/vedauth/device/style.css", "get"),
            ("/vedauth/device/grants", "get"),
            ("/vedsdk", "get"),
            ("/vedauth/Authorize/IsAuthServer", "get"),
            ("/admin/style.css", "get"),
        ];
        let mut operations = 0;
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                operations += 1;
                let responses = &op["responses"];
                let has = |status: &str| responses.get(status).is_some();
                if immediate.contains(&(path.as_str(), method.as_str())) {
                    assert!(!has("408"), "{method} {path}");
                } else {
                    assert!(has("408"), "{method} {path} waits and may time out");
                }
                let token_endpoint =
                    ["/vedauth/Authorize/Device", "/vedauth/Authorize/Token", "/vedauth/Authorize/OAuth"].contains(&path.as_str());
                let bearer = op.get("security").is_some();
                if token_endpoint {
                    assert!(has("400"), "{method} {path}: internal errors are 400 invalid_request");
                    // A store that fails for a moment is 503 temporarily_unavailable (and, on the password
                    // grant, too many sign-ins at once: the guessing limits' slots).
                    assert!(has("503"), "{method} {path} answers 503 when the store fails for a moment");
                }
                if bearer || path == "/vedauth/device" && method == "post" || path == "/vedauth/device/decision" {
                    assert!(has("503"), "{method} {path} answers 503 when the store fails");
                }
            }
        }
        assert!(operations > 30, "{operations}");
        let refused = doc["components"]["responses"]["AuthRefused"]["description"].as_str().unwrap();
        assert!(refused.contains("internal error"), "{refused}");
        let unavailable = doc["components"]["responses"]["AuthUnavailable"]["description"].as_str().unwrap();
        assert!(unavailable.contains("temporarily_unavailable") && unavailable.contains("Retry-After"), "{unavailable}");
    }

    #[test]
    fn it_is_openapi_3_1_with_the_bearer_scheme() {
        let doc = serde_json::to_value(document()).unwrap();
        assert_eq!(doc["openapi"], "3.1.0");
        assert_eq!(doc["components"]["securitySchemes"][BEARER]["scheme"], "bearer");
        let add = &doc["paths"]["/vedsdk/SecretStore/Add"]["post"];
        assert_eq!(add["security"][0][BEARER], serde_json::json!([]));
        assert_eq!(doc["components"]["schemas"]["Refusal"]["required"], serde_json::json!(["Result", "Error"]));
        // The product's casing, and Result codes as the closed list Strongroom answers with.
        let props = &doc["components"]["schemas"]["AddRequest"]["properties"];
        for key in ["Base64Data", "Keyname", "Namespace", "Owner", "VaultType"] {
            assert!(props.get(key).is_some(), "{key} in {props}");
        }
        let codes: Vec<i64> = ResultCode::ALL.iter().map(|c| i64::from(c.code())).collect();
        assert_eq!(doc["components"]["schemas"]["ResultCode"]["enum"], serde_json::json!(codes));
    }
}
