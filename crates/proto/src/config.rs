//! `/vedsdk/Config/*`: the `\VED` tree's objects. Every
//! answer is HTTP 200 with a numeric `Result` (1 success; 7, 400, 401, 402,
//! 405, 406 failures, with `Error`). `Id` and `Revision` are integers: Go
//! vcert decodes them into `int32` and `int64`.

use serde::{Deserialize, Serialize};

/// `{"Name":…,"Value":…}` of `NameAttributeList` (read and ignored).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NameAttribute {
    #[serde(rename = "Name", default)]
    pub name: String,
    /// A string or a list of strings (pyvenafi), a scalar (VenafiPS).
    #[serde(rename = "Value", skip_serializing_if = "Option::is_none", default)]
    pub value: Option<AttributeValue>,
}

/// An attribute's value: one string (VenafiPS) or several (pyvenafi).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(untagged)]
pub enum AttributeValue {
    One(String),
    Many(Vec<String>),
}

/// `Recursive`: `true`, `1` or `"true"`/`"1"` (each client sends its own).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(untagged)]
pub enum Flag {
    Bool(bool),
    Int(i64),
    Text(String),
}

/// The request bodies of the `Config` calls, as the clients send them; each
/// call reads the fields it needs (keys in any case, `Recursive` as a
/// boolean, `0`/`1` or a string).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConfigRequest {
    #[serde(rename = "ObjectDN", skip_serializing_if = "Option::is_none", default)]
    pub object_dn: Option<String>,
    #[serde(rename = "ObjectGUID", skip_serializing_if = "Option::is_none", default)]
    pub object_guid: Option<String>,
    #[serde(rename = "NewObjectDN", skip_serializing_if = "Option::is_none", default)]
    pub new_object_dn: Option<String>,
    #[serde(rename = "Class", skip_serializing_if = "Option::is_none", default)]
    pub class: Option<String>,
    #[serde(rename = "Classes", skip_serializing_if = "Option::is_none", default)]
    pub classes: Option<Vec<String>>,
    #[serde(rename = "Pattern", skip_serializing_if = "Option::is_none", default)]
    pub pattern: Option<String>,
    #[serde(rename = "Recursive", skip_serializing_if = "Option::is_none", default)]
    pub recursive: Option<Flag>,
    #[serde(rename = "NameAttributeList", skip_serializing_if = "Option::is_none", default)]
    pub name_attribute_list: Option<Vec<NameAttribute>>,
}

/// An object of the tree.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConfigObject {
    /// The GUIDs of the object and those above it, `{root}…{object}` (here: the object's `{GUID}`).
    #[serde(rename = "AbsoluteGUID")]
    pub absolute_guid: String,
    #[serde(rename = "DN")]
    pub dn: String,
    /// `{xxxxxxxx-…}`.
    #[serde(rename = "GUID")]
    pub guid: String,
    #[serde(rename = "Id")]
    pub id: i32,
    #[serde(rename = "Name")]
    pub name: String,
    #[serde(rename = "Parent")]
    pub parent: String,
    #[serde(rename = "Revision")]
    pub revision: i64,
    #[serde(rename = "TypeName")]
    pub type_name: String,
}

/// `Config/Create` and `Config/IsValid`: `{"Object":{…},"Result":1}`, or a failure's `Result` and `Error`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ObjectResponse {
    #[serde(rename = "Object", skip_serializing_if = "Option::is_none", default)]
    pub object: Option<ConfigObject>,
    #[serde(rename = "Result")]
    pub result: i32,
    #[serde(rename = "Error", skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
}

/// `Config/Enumerate` and `Config/FindObjectsOfClass`: `{"Objects":[…],"Result":1}`.
/// A refusal is `{"Result":…,"Error":…}` without `Objects` (as every `Config` call's).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ObjectsResponse {
    #[serde(rename = "Objects", default)]
    pub objects: Vec<ConfigObject>,
    #[serde(rename = "Result")]
    pub result: i32,
    #[serde(rename = "Error", skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
}

/// `Config/DnToGuid`: `{"GUID":"{…}","ClassName":"Policy","Revision":…,"Result":1}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DnToGuidResponse {
    #[serde(rename = "GUID", skip_serializing_if = "Option::is_none", default)]
    pub guid: Option<String>,
    #[serde(rename = "ClassName", skip_serializing_if = "Option::is_none", default)]
    pub class_name: Option<String>,
    #[serde(rename = "Revision", skip_serializing_if = "Option::is_none", default)]
    pub revision: Option<i64>,
    #[serde(rename = "HierarchicalGUID", skip_serializing_if = "Option::is_none", default)]
    pub hierarchical_guid: Option<String>,
    #[serde(rename = "Result")]
    pub result: i32,
    #[serde(rename = "Error", skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
}

/// `Config/GuidToDn`: `{"ObjectDN":"\\VED\\Policy\\…","ClassName":…,"Revision":…,"Result":1}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GuidToDnResponse {
    #[serde(rename = "ObjectDN", skip_serializing_if = "Option::is_none", default)]
    pub object_dn: Option<String>,
    #[serde(rename = "ClassName", skip_serializing_if = "Option::is_none", default)]
    pub class_name: Option<String>,
    #[serde(rename = "Revision", skip_serializing_if = "Option::is_none", default)]
    pub revision: Option<i64>,
    #[serde(rename = "HierarchicalGUID", skip_serializing_if = "Option::is_none", default)]
    pub hierarchical_guid: Option<String>,
    #[serde(rename = "Result")]
    pub result: i32,
    #[serde(rename = "Error", skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
}

/// `Config/Delete` and `Config/RenameObject`: `{"Result":1}`, or a failure's `Result` and `Error`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConfigResult {
    #[serde(rename = "Result")]
    pub result: i32,
    #[serde(rename = "Error", skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
}
