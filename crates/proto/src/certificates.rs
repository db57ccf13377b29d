//! `/vedsdk/Certificates/*`, `Metadata/*`, `Workflow/Ticket/*` and the
//! certificate policy calls of `Config/*`: the bodies vcert (Go and Python),
//! cert-manager, Terraform, pyvenafi and VenafiPS send, and the answers of a
//! fixed shape.
//!
//! As with [`crate::vedsdk`], the server does not deserialise the requests:
//! it reads bodies leniently (keys in any case, integers as numeric strings,
//! booleans as `true` or `"true"`), and a server test reads every request
//! type here back through its readers. The answers are serialised as they
//! are: every field is sent, except those marked as left out when absent.
//! The `Policy` of `CheckPolicy` and a certificate object's details, whose
//! parts come and go with the object's state, are JSON values.
//!
//! Refusals are 400 `{"Error"}` ([`crate::vedsdk::ErrorOnly`]), or
//! [`SuccessResponse`] with `Success` false for `Renew` and `Revoke`, whose
//! clients read `Success`; a request waiting for approval or rejected is
//! [`StageStatus`].

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::SecretString;
use crate::config::NameAttribute;

/// A body of just `{"CertificateDN": …}` (`Certificates/Reset`, `Certificates/Retry`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"CertificateDN": "\\VED\\Policy\\apps\\www.example.com"})))]
pub struct CertificateDnRequest {
    #[serde(rename = "CertificateDN")]
    pub certificate_dn: String,
}

/// `Certificates/CheckPolicy`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"PolicyDN": "\\VED\\Policy\\apps"})))]
pub struct CheckPolicyRequest {
    /// A folder; without `\VED\` it is below `\VED\Policy\`.
    #[serde(rename = "PolicyDN")]
    pub policy_dn: String,
}

/// `Certificates/CheckPolicy`: `Error` is always there, `null`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CheckPolicyResponse {
    #[cfg_attr(feature = "openapi", schema(required = true))]
    #[serde(rename = "Error")]
    pub error: Option<String>,
    /// The product's `Policy` object: each setting with its `Value` and `Locked`.
    #[serde(rename = "Policy")]
    pub policy: Value,
}

/// One name of `SubjectAltNames`: `Type` (0 UPN, 1 email, 2 DNS, 6 URI,
/// 7 IP) or `TypeName` (`DNS`, `IP`, `Email`, `URI`, `UPN`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SubjectAltName {
    #[serde(rename = "Type", skip_serializing_if = "Option::is_none", default)]
    pub kind: Option<i32>,
    #[serde(rename = "TypeName", skip_serializing_if = "Option::is_none", default)]
    pub type_name: Option<String>,
    #[serde(rename = "Name")]
    pub name: String,
}

/// One of `CASpecificAttributes`; `Specific End Date` (or a CA-prefixed
/// name ending so) shortens the validity.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CaSpecificAttribute {
    #[serde(rename = "Name")]
    pub name: String,
    #[serde(rename = "Value")]
    pub value: String,
}

/// One custom field's values by the field's name (`Values`, or a single `Value`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CustomFieldValues {
    #[serde(rename = "Name")]
    pub name: String,
    #[serde(rename = "Values")]
    pub values: Vec<String>,
}

/// How a certificate is packed: what `Certificates/Retrieve`,
/// `Certificates/Retrieve/{vaultId}` and an inline `Certificates/Request`
/// read.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"Format": "Base64", "IncludeChain": true})))]
pub struct RetrieveFormat {
    /// `Base64` (the default), `Base64 (PKCS #8)`, `DER`, `PKCS #12`, `PKCS #7` (each in its spellings).
    #[serde(rename = "Format", skip_serializing_if = "Option::is_none", default)]
    pub format: Option<String>,
    #[serde(rename = "IncludeChain", skip_serializing_if = "Option::is_none", default)]
    pub include_chain: Option<bool>,
    /// The chain with the root first.
    #[serde(rename = "RootFirstOrder", skip_serializing_if = "Option::is_none", default)]
    pub root_first_order: Option<bool>,
    #[serde(rename = "IncludePrivateKey", skip_serializing_if = "Option::is_none", default)]
    pub include_private_key: Option<bool>,
    /// What the private key (or the PKCS #12 file) is sealed under.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    #[serde(rename = "Password", skip_serializing_if = "Option::is_none", default)]
    pub password: Option<SecretString>,
    /// A PKCS #12 file's friendly name.
    #[serde(rename = "FriendlyName", skip_serializing_if = "Option::is_none", default)]
    pub friendly_name: Option<String>,
}

/// `Certificates/Request`: from the caller's `PKCS10`, or without one from a
/// key made by the server.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, Default)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::ToSchema),
    schema(example = json!({
        "PolicyDN": "\\VED\\Policy\\apps",
        "Subject": "www.example.com",
        "SubjectAltNames": [{"Type": 2, "Name": "www.example.com"}],
        "KeyAlgorithm": "RSA",
        "KeyBitSize": 2048
    }))
)]
pub struct EnrollmentRequest {
    /// The folder; without `\VED\` it is below `\VED\Policy\`.
    #[serde(rename = "PolicyDN")]
    pub policy_dn: String,
    /// The object's name in the folder (else the CN, else the first SAN).
    #[serde(rename = "ObjectName", skip_serializing_if = "Option::is_none", default)]
    pub object_name: Option<String>,
    /// A PEM CSR, with or without line breaks.
    #[serde(rename = "PKCS10", skip_serializing_if = "Option::is_none", default)]
    pub pkcs10: Option<String>,
    /// The CN of a request without a CSR.
    #[serde(rename = "Subject", skip_serializing_if = "Option::is_none", default)]
    pub subject: Option<String>,
    #[serde(rename = "Organization", skip_serializing_if = "Option::is_none", default)]
    pub organization: Option<String>,
    #[serde(rename = "OrganizationalUnit", skip_serializing_if = "Option::is_none", default)]
    pub organizational_unit: Option<Vec<String>>,
    #[serde(rename = "City", skip_serializing_if = "Option::is_none", default)]
    pub city: Option<String>,
    #[serde(rename = "State", skip_serializing_if = "Option::is_none", default)]
    pub state: Option<String>,
    #[serde(rename = "Country", skip_serializing_if = "Option::is_none", default)]
    pub country: Option<String>,
    #[serde(rename = "SubjectAltNames", skip_serializing_if = "Option::is_none", default)]
    pub subject_alt_names: Option<Vec<SubjectAltName>>,
    /// `RSA` or `ECC`.
    #[serde(rename = "KeyAlgorithm", skip_serializing_if = "Option::is_none", default)]
    pub key_algorithm: Option<String>,
    /// 2048 to 4096.
    #[serde(rename = "KeyBitSize", skip_serializing_if = "Option::is_none", default)]
    pub key_bit_size: Option<u32>,
    /// `P256`, `P384` or `P521`.
    #[serde(rename = "EllipticCurve", skip_serializing_if = "Option::is_none", default)]
    pub elliptic_curve: Option<String>,
    /// A key's OID (the product's `PkixParameterSet`).
    #[serde(rename = "PkixParameterSet", skip_serializing_if = "Option::is_none", default)]
    pub pkix_parameter_set: Option<String>,
    /// The CA (else the policy's).
    #[serde(rename = "CADN", skip_serializing_if = "Option::is_none", default)]
    pub cadn: Option<String>,
    #[serde(rename = "CASpecificAttributes", skip_serializing_if = "Option::is_none", default)]
    pub ca_specific_attributes: Option<Vec<CaSpecificAttribute>>,
    #[serde(rename = "DisableAutomaticRenewal", skip_serializing_if = "Option::is_none", default)]
    pub disable_automatic_renewal: Option<bool>,
    #[serde(rename = "CustomFields", skip_serializing_if = "Option::is_none", default)]
    pub custom_fields: Option<Vec<CustomFieldValues>>,
    /// Seconds: with it, the answer carries the certificate, packed as [`RetrieveFormat`] says.
    #[serde(rename = "WorkToDoTimeout", skip_serializing_if = "Option::is_none", default)]
    pub work_to_do_timeout: Option<i64>,
    #[serde(flatten)]
    pub retrieve: RetrieveFormat,
}

/// `Certificates/Request`: the object made or re-enrolled; with
/// `WorkToDoTimeout`, its certificate too, once issued within it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EnrollmentResponse {
    #[serde(rename = "CertificateDN")]
    pub certificate_dn: String,
    /// Base64, as [`CertificateFile`]'s.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    #[serde(rename = "CertificateData", skip_serializing_if = "Option::is_none", default)]
    pub certificate_data: Option<SecretString>,
    #[serde(rename = "Filename", skip_serializing_if = "Option::is_none", default)]
    pub filename: Option<String>,
    #[serde(rename = "Format", skip_serializing_if = "Option::is_none", default)]
    pub format: Option<String>,
    /// `{…}`.
    #[serde(rename = "Guid")]
    pub guid: String,
}

/// `Certificates/Retrieve`: by `CertificateDN` or `Thumbprint`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"CertificateDN": "\\VED\\Policy\\apps\\www.example.com", "Format": "Base64", "IncludeChain": true})))]
pub struct CertRetrieveRequest {
    #[serde(rename = "CertificateDN", skip_serializing_if = "Option::is_none", default)]
    pub certificate_dn: Option<String>,
    /// Upper-case hex SHA-1 of the certificate.
    #[serde(rename = "Thumbprint", skip_serializing_if = "Option::is_none", default)]
    pub thumbprint: Option<String>,
    /// Seconds to wait for a request waiting for approval (at most 120).
    #[serde(rename = "WorkToDoTimeout", skip_serializing_if = "Option::is_none", default)]
    pub work_to_do_timeout: Option<i64>,
    #[serde(flatten)]
    pub retrieve: RetrieveFormat,
}

/// A packed certificate: `Certificates/Retrieve` and `Certificates/Retrieve/{vaultId}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CertificateFile {
    /// Base64 of the file: PEM (with an encrypted key last, when asked), DER or PKCS #12.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    #[serde(rename = "CertificateData")]
    pub certificate_data: SecretString,
    #[serde(rename = "Filename")]
    pub filename: String,
    #[serde(rename = "Format")]
    pub format: String,
}

/// A request that waits for approval (202) or was rejected (500): the
/// stage (500) and what happened.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"Stage": 500, "Status": "Pending workflow resolution: manual approval"})))]
pub struct StageStatus {
    #[serde(rename = "Stage")]
    pub stage: i64,
    #[serde(rename = "Status")]
    pub status: String,
}

/// `Certificates/Renew`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"CertificateDN": "\\VED\\Policy\\apps\\www.example.com"})))]
pub struct RenewRequest {
    #[serde(rename = "CertificateDN")]
    pub certificate_dn: String,
    /// A new CSR (else a new key made here, or the CSR on file).
    #[serde(rename = "PKCS10", skip_serializing_if = "Option::is_none", default)]
    pub pkcs10: Option<String>,
    /// Renew a disabled object, enabling it again.
    #[serde(rename = "Reenable", skip_serializing_if = "Option::is_none", default)]
    pub reenable: Option<bool>,
}

/// `Certificates/Renew`: `Success` is true.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RenewResponse {
    #[serde(rename = "CertificateDN")]
    pub certificate_dn: String,
    #[serde(rename = "Success")]
    pub success: bool,
}

/// `Certificates/Revoke`: by `CertificateDN` or `Thumbprint`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"CertificateDN": "\\VED\\Policy\\apps\\www.example.com", "Reason": 1})))]
pub struct CertRevokeRequest {
    #[serde(rename = "CertificateDN", skip_serializing_if = "Option::is_none", default)]
    pub certificate_dn: Option<String>,
    #[serde(rename = "Thumbprint", skip_serializing_if = "Option::is_none", default)]
    pub thumbprint: Option<String>,
    /// The product's reasons, 0 to 5.
    #[serde(rename = "Reason", skip_serializing_if = "Option::is_none", default)]
    pub reason: Option<i64>,
    /// Also disable the object.
    #[serde(rename = "Disable", skip_serializing_if = "Option::is_none", default)]
    pub disable: Option<bool>,
    /// Written to the event.
    #[serde(rename = "Comments", skip_serializing_if = "Option::is_none", default)]
    pub comments: Option<String>,
}

/// `Certificates/Revoke`: all three are true.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CertRevokeResponse {
    #[serde(rename = "Requested")]
    pub requested: bool,
    #[serde(rename = "Revoked")]
    pub revoked: bool,
    #[serde(rename = "Success")]
    pub success: bool,
}

/// `{"Success": true}`, or a refusal `{"Success": false, "Error"}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SuccessResponse {
    #[serde(rename = "Error", skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
    #[serde(rename = "Success")]
    pub success: bool,
}

impl SuccessResponse {
    pub const DONE: SuccessResponse = SuccessResponse { error: None, success: true };

    pub fn refused(error: String) -> SuccessResponse {
        SuccessResponse { error: Some(error), success: false }
    }
}

/// `Certificates/Reset`: true.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ResetResponse {
    #[serde(rename = "ProcessingResetCompleted")]
    pub processing_reset_completed: bool,
}

/// `PUT Certificates/{guid}`: `[{Name: "Disabled", Value: ["1"]}]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"AttributeData": [{"Name": "Disabled", "Value": ["1"]}]})))]
pub struct CertificateUpdateRequest {
    #[serde(rename = "AttributeData")]
    pub attribute_data: Vec<NameAttribute>,
}

/// `GET Certificates`: one page of the certificates found.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CertificatesResponse {
    #[serde(rename = "Certificates")]
    pub certificates: Vec<CertificateSummary>,
    /// `Certificates {first} - {last}`, from 1 (`first` 0 for an empty page).
    #[serde(rename = "DataRange")]
    pub data_range: String,
    /// How many were found before paging.
    #[serde(rename = "TotalCount")]
    pub total_count: u64,
}

/// One certificate object found by `GET Certificates`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CertificateSummary {
    /// `2026-11-27T10:00:00.0000000Z`.
    #[serde(rename = "CreatedOn")]
    pub created_on: String,
    #[serde(rename = "DN")]
    pub dn: String,
    #[serde(rename = "Guid")]
    pub guid: String,
    #[serde(rename = "Name")]
    pub name: String,
    #[serde(rename = "ParentDn")]
    pub parent_dn: String,
    /// `X509 Certificate`, or the class a `Config/Create` made it as.
    #[serde(rename = "SchemaClass")]
    pub schema_class: String,
    #[serde(rename = "X509")]
    pub x509: X509Summary,
    #[serde(rename = "_links")]
    pub links: Vec<Link>,
}

/// What a found object's certificate says; an object without one yet has
/// only `CN` and `SANS`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct X509Summary {
    #[serde(rename = "CN")]
    pub cn: String,
    /// The names by kind (`DNS`, `IP`, `Email`, `URI`, `UPN`), each a list; kinds without names left out.
    #[serde(rename = "SANS")]
    pub sans: Value,
    #[serde(rename = "Serial", skip_serializing_if = "Option::is_none", default)]
    pub serial: Option<String>,
    #[serde(rename = "Thumbprint", skip_serializing_if = "Option::is_none", default)]
    pub thumbprint: Option<String>,
    #[serde(rename = "ValidFrom", skip_serializing_if = "Option::is_none", default)]
    pub valid_from: Option<String>,
    #[serde(rename = "ValidTo", skip_serializing_if = "Option::is_none", default)]
    pub valid_to: Option<String>,
}

/// `{"Details": "/vedsdk/certificates/%7b…%7d"}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Link {
    #[serde(rename = "Details")]
    pub details: String,
}

/// `GET Certificates/{guid}/PreviousVersions`, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PreviousVersionsResponse {
    #[serde(rename = "PreviousVersions")]
    pub previous_versions: Vec<PreviousVersion>,
}

/// An archived certificate: `Certificates/Retrieve/{vaultId}` downloads it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PreviousVersion {
    #[serde(rename = "CertificateDetails")]
    pub certificate_details: PreviousCertificateDetails,
    #[serde(rename = "VaultId")]
    pub vault_id: i64,
}

/// What an archived certificate says.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PreviousCertificateDetails {
    #[serde(rename = "CN")]
    pub cn: String,
    /// RFC 4514.
    #[serde(rename = "Issuer")]
    pub issuer: String,
    #[serde(rename = "Revoked")]
    pub revoked: bool,
    /// Upper-case hex.
    #[serde(rename = "Serial")]
    pub serial: String,
    #[serde(rename = "Thumbprint")]
    pub thumbprint: String,
    #[serde(rename = "ValidFrom")]
    pub valid_from: String,
    #[serde(rename = "ValidTo")]
    pub valid_to: String,
}

/// A custom field's definition as the product's metadata item.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MetadataItem {
    #[serde(rename = "AllowedValues")]
    pub allowed_values: Vec<String>,
    /// The classes it applies to (`X509 Certificate`, `Device`…).
    #[serde(rename = "Classes")]
    pub classes: Vec<String>,
    #[serde(rename = "ConfigAttribute")]
    pub config_attribute: String,
    /// `\VED\Metadata Root\{Label}`.
    #[serde(rename = "DN")]
    pub dn: String,
    #[serde(rename = "DefaultValues")]
    pub default_values: Vec<String>,
    #[serde(rename = "ErrorMessage")]
    pub error_message: String,
    #[serde(rename = "Guid")]
    pub guid: String,
    #[serde(rename = "Help")]
    pub help: String,
    /// The field's name.
    #[serde(rename = "Label")]
    pub label: String,
    #[serde(rename = "Mandatory")]
    pub mandatory: bool,
    /// The GUID again (the product's name of an item).
    #[serde(rename = "Name")]
    pub name: String,
    #[serde(rename = "Policyable")]
    pub policyable: bool,
    #[serde(rename = "RegularExpression")]
    pub regular_expression: String,
    #[serde(rename = "RenderHidden")]
    pub render_hidden: bool,
    #[serde(rename = "RenderReadOnly")]
    pub render_read_only: bool,
    #[serde(rename = "Single")]
    pub single: bool,
    /// The product's field type number.
    #[serde(rename = "Type")]
    pub kind: i64,
}

/// `Metadata/Get`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"DN": "\\VED\\Policy\\apps\\www.example.com"})))]
pub struct MetadataGetRequest {
    /// A certificate object.
    #[serde(rename = "DN")]
    pub dn: String,
    /// Also the fields without values.
    #[serde(rename = "All", skip_serializing_if = "Option::is_none", default)]
    pub all: Option<bool>,
}

/// `Metadata/GetItems`: `{"DN": …}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"DN": "\\VED\\Policy\\apps\\www.example.com"})))]
pub struct MetadataDnRequest {
    /// A certificate object.
    #[serde(rename = "DN")]
    pub dn: String,
}

/// `Metadata/Get`: `Locked` is false.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MetadataGetResponse {
    #[serde(rename = "Data")]
    pub data: Vec<MetadataValues>,
    #[serde(rename = "Locked")]
    pub locked: bool,
}

/// A field with the object's values of it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MetadataValues {
    #[serde(rename = "Key")]
    pub key: MetadataItem,
    #[serde(rename = "Value")]
    pub value: Vec<String>,
}

/// `Metadata/GetItems`, `GET Metadata/Items` (`Locked` false) and
/// `Metadata/GetItemsForClass` (no `Locked`): `Result` 0 and the fields.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MetadataItemsResponse {
    #[serde(rename = "Items")]
    pub items: Vec<MetadataItem>,
    #[serde(rename = "Locked", skip_serializing_if = "Option::is_none", default)]
    pub locked: Option<bool>,
    #[serde(rename = "Result")]
    pub result: i32,
}

/// `Metadata/GetItemsForClass`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"ConfigClass": "X509 Certificate"})))]
pub struct ItemsForClassRequest {
    /// Every field without it.
    #[serde(rename = "ConfigClass", skip_serializing_if = "Option::is_none", default)]
    pub config_class: Option<String>,
}

/// `Metadata/Set`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"DN": "\\VED\\Policy\\apps\\www.example.com", "GuidData": [{"ItemGuid": "{a1b2c3d4-0000-4000-8000-000000000001}", "List": ["Ops"]}], "KeepExisting": true})))]
pub struct MetadataSetRequest {
    /// A certificate object.
    #[serde(rename = "DN")]
    pub dn: String,
    /// Required, even empty.
    #[serde(rename = "GuidData")]
    pub guid_data: Vec<GuidData>,
    /// Without it (or false), every field not named is cleared.
    #[serde(rename = "KeepExisting", skip_serializing_if = "Option::is_none", default)]
    pub keep_existing: Option<bool>,
}

/// One field's new values (`[]` clears it).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GuidData {
    #[serde(rename = "ItemGuid")]
    pub item_guid: String,
    #[serde(rename = "List")]
    pub list: Vec<String>,
}

/// `Metadata/Set`: the product's metadata result code (0 set).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MetadataSetResponse {
    #[serde(rename = "Locked")]
    pub locked: bool,
    #[serde(rename = "Result")]
    pub result: i64,
}

/// `Workflow/Ticket/Enumerate`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"ObjectDN": "\\VED\\Policy\\apps\\www.example.com"})))]
pub struct TicketEnumerateRequest {
    /// A certificate; without it every ticket the caller has a right on.
    #[serde(rename = "ObjectDN", skip_serializing_if = "Option::is_none", default)]
    pub object_dn: Option<String>,
}

/// `Workflow/Ticket/Enumerate`: the tickets' GUIDs, `Result` 1.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TicketEnumerateResponse {
    #[serde(rename = "GUIDs")]
    pub guids: Vec<String>,
    #[serde(rename = "Result")]
    pub result: i32,
}

/// `Workflow/Ticket/Status`: `{"GUID": …}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"GUID": "{a1b2c3d4-0000-4000-8000-000000000001}"})))]
pub struct TicketRequest {
    #[serde(rename = "GUID")]
    pub guid: String,
}

/// `Workflow/Ticket/Status`: `Pending` or `Rejected`, `Result` 1.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TicketStatusResponse {
    #[serde(rename = "Result")]
    pub result: i32,
    #[serde(rename = "Status")]
    pub status: String,
}

/// `Workflow/Ticket/UpdateStatus`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"GUID": "{a1b2c3d4-0000-4000-8000-000000000001}", "Status": "Rejected", "Explanation": "Not ours."})))]
pub struct TicketUpdateRequest {
    #[serde(rename = "GUID")]
    pub guid: String,
    /// `Approved` or `Rejected`.
    #[serde(rename = "Status")]
    pub status: String,
    /// Why it was rejected (`Reason` is read too).
    #[serde(rename = "Explanation", skip_serializing_if = "Option::is_none", default)]
    pub explanation: Option<String>,
}

/// `Workflow/Ticket/UpdateStatus`: `Result` 1.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TicketResult {
    #[serde(rename = "Result")]
    pub result: i32,
}

/// `Config/WritePolicy`, `Config/ReadPolicy`, `Config/ClearPolicyAttribute`
/// for `Class` `X509 Certificate`: each reads the fields it needs.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"ObjectDN": "\\VED\\Policy\\apps", "Class": "X509 Certificate", "AttributeName": "Organization", "Values": ["Acme"], "Locked": true})))]
pub struct PolicyAttributeRequest {
    /// A folder.
    #[serde(rename = "ObjectDN")]
    pub object_dn: String,
    /// `X509 Certificate`.
    #[serde(rename = "Class")]
    pub class: String,
    #[serde(rename = "AttributeName")]
    pub attribute_name: String,
    /// `WritePolicy`: the values.
    #[serde(rename = "Values", skip_serializing_if = "Option::is_none", default)]
    pub values: Option<Vec<String>>,
    /// `WritePolicy`: true makes it a policy, false a default.
    #[serde(rename = "Locked", skip_serializing_if = "Option::is_none", default)]
    pub locked: Option<bool>,
}

/// `Config/ReadPolicy`: the folder's own values, `Result` 1.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReadPolicyResponse {
    #[serde(rename = "Locked")]
    pub locked: bool,
    #[serde(rename = "Result")]
    pub result: i32,
    #[serde(rename = "Values")]
    pub values: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire<T: Serialize>(v: &T) -> String {
        serde_json::to_string(v).unwrap()
    }

    #[test]
    fn answers_are_the_products_shapes() {
        assert_eq!(wire(&CheckPolicyResponse { error: None, policy: serde_json::json!({}) }), r#"{"Error":null,"Policy":{}}"#);
        let made = EnrollmentResponse {
            certificate_dn: "\\VED\\Policy\\a\\b".into(),
            certificate_data: None,
            filename: None,
            format: None,
            guid: "{g}".into(),
        };
        assert_eq!(wire(&made), r#"{"CertificateDN":"\\VED\\Policy\\a\\b","Guid":"{g}"}"#);
        let inline = EnrollmentResponse {
            certificate_data: Some(SecretString("QUJD".into())),
            filename: Some("b.pem".into()),
            format: Some("Base64".into()),
            ..made
        };
        assert_eq!(
            wire(&inline),
            r#"{"CertificateDN":"\\VED\\Policy\\a\\b","CertificateData":"QUJD","Filename":"b.pem","Format":"Base64","Guid":"{g}"}"#
        );
        assert_eq!(wire(&SuccessResponse::DONE), r#"{"Success":true}"#);
        assert_eq!(wire(&SuccessResponse::refused("No.".into())), r#"{"Error":"No.","Success":false}"#);
        assert_eq!(
            wire(&CertRevokeResponse { requested: true, revoked: true, success: true }),
            r#"{"Requested":true,"Revoked":true,"Success":true}"#
        );
        assert_eq!(wire(&StageStatus { stage: 500, status: "Pending".into() }), r#"{"Stage":500,"Status":"Pending"}"#);
        let items = MetadataItemsResponse { items: vec![], locked: None, result: 0 };
        assert_eq!(wire(&items), r#"{"Items":[],"Result":0}"#);
        assert_eq!(wire(&MetadataItemsResponse { locked: Some(false), ..items }), r#"{"Items":[],"Locked":false,"Result":0}"#);
    }

    #[test]
    fn a_found_object_without_a_certificate_has_no_serial_or_times() {
        let x =
            X509Summary { cn: "a".into(), sans: serde_json::json!({}), serial: None, thumbprint: None, valid_from: None, valid_to: None };
        assert_eq!(wire(&x), r#"{"CN":"a","SANS":{}}"#);
    }

    #[test]
    fn certificate_data_never_shows_in_debug() {
        let f = CertificateFile {
            certificate_data: SecretString("LS0tLS1CRUdJTg==".into()),
            filename: "a.pem".into(),
            format: "Base64".into(),
        };
        assert!(!format!("{f:?}").contains("LS0t"));
        let r = CertRetrieveRequest {
            retrieve: RetrieveFormat { password: Some(SecretString("hunter2hunter2".into())), ..RetrieveFormat::default() },
            ..CertRetrieveRequest::default()
        };
        assert!(!format!("{r:?}").contains("hunter2"));
    }

    #[test]
    fn requests_flatten_the_retrieve_options() {
        let r = EnrollmentRequest {
            policy_dn: "\\VED\\Policy\\a".into(),
            work_to_do_timeout: Some(60),
            retrieve: RetrieveFormat { format: Some("DER".into()), ..RetrieveFormat::default() },
            ..EnrollmentRequest::default()
        };
        assert_eq!(wire(&r), r#"{"PolicyDN":"\\VED\\Policy\\a","WorkToDoTimeout":60,"Format":"DER"}"#);
    }
}
