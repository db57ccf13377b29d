//! Typed administrative calls, one function per product call, for
//! `strongroom admin --server` and any other program: the event log
//! (`GET Log`), identities, groups and passwords (`Identity/*`), the `\VED`
//! tree (`Config/*`) and its permissions (`Permissions/Object/…`), API
//! integrations and grants (`oauth/*`), each sending the
//! `strongroom_proto` request type and reading its response type.
//!
//! Every failure is a [`ClientError`], by what the server answered: 401
//! (after one refresh) [`ClientError::Unauthorized`], 403
//! [`ClientError::Forbidden`] (the token's scope), a `Result` other than
//! success with HTTP 200 (the product's `Config/*` convention) or another
//! 4xx with `Error` (`Permissions/*`, `Identity/*`) [`ClientError::Refused`],
//! a 5xx [`ClientError::ServerError`], anything not of the call's shape
//! [`ClientError::BadResponse`].

use reqwest::Method;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use strongroom_proto::SecretString;
use strongroom_proto::config::{ConfigObject, ConfigRequest, ConfigResult, DnToGuidResponse, Flag, ObjectResponse, ObjectsResponse};
use strongroom_proto::groups::{
    AddGroupRequest, AddGroupResponse, GroupMembersRequest, GroupMembersResponse, IdResponse, MessageOnly, SetPasswordRequest,
};
use strongroom_proto::oauth::{OAuthAdminRequest, OAuthApplication, OAuthApplicationRequest, OAuthGrant, OAuthResponse, OAuthRule};
use strongroom_proto::permissions::{EffectivePermissions, Permissions, PermissionsRequest, PrincipalPermissions};
use strongroom_proto::vedsdk::{
    BrowseRequest, IdentitiesResponse, IdentityEntry, IdentityName, IdentityRequest, LogEvent, LogResponse, ValidateResponse,
};

use crate::error::{ClientError, ClientResult};
use crate::http::Server;
use crate::source::TokenSource;

/// Where the bearer token comes from.
#[derive(Debug)]
pub enum Bearer {
    /// A login's token source (`strongroom login`): refreshed as needed.
    Source(Box<TokenSource>),
    /// One access token (a token file): a 401 is final.
    Token(Server, SecretString),
}

/// The administrative calls of one server, with one caller's token.
#[derive(Debug)]
pub struct AdminApi {
    bearer: Bearer,
}

/// The `IdentityType` flags of `Identity/Browse`.
pub mod identity_type {
    pub const USER: i32 = 1;
    pub const GROUP: i32 = 2;
    pub const DISTRIBUTION: i32 = 8;
}

/// The most `Identity/Browse` answers at once (the server's bound).
pub const BROWSE_MAX: i32 = 1000;

/// What a call answered, before its shape is read.
struct Reply {
    path: String,
    status: u16,
    body: Vec<u8>,
}

impl Reply {
    /// The body as JSON; an empty body is `null`.
    fn json(&self) -> ClientResult<Value> {
        if self.body.iter().all(u8::is_ascii_whitespace) {
            return Ok(Value::Null);
        }
        serde_json::from_slice(&self.body).map_err(|_| ClientError::BadResponse(format!("{}: HTTP {}, not JSON", self.path, self.status)))
    }

    /// A 2xx answer, else the refusal it is.
    fn success(self) -> ClientResult<Reply> {
        if (200..300).contains(&self.status) { Ok(self) } else { Err(refusal(&self)) }
    }
}

/// The server's reason in an error body: `Error` (`Config/*`,
/// `Permissions/*`), `Message` (the group calls) or `error_description`
/// (a bearer refusal, `oauth/*`).
fn reason(v: &Value) -> Option<String> {
    ["Error", "Message", "error_description"]
        .iter()
        .find_map(|k| v.get(*k).and_then(Value::as_str).filter(|s| !s.is_empty()))
        .map(str::to_owned)
}

/// A non-2xx answer as a [`ClientError`] (never for a 401: see [`AdminApi::send`]).
fn refusal(r: &Reply) -> ClientError {
    let v = r.json().unwrap_or(Value::Null);
    match r.status {
        401 => ClientError::Unauthorized,
        403 => ClientError::Forbidden(reason(&v).unwrap_or_else(|| "insufficient scope".to_owned())),
        s if s >= 500 => ClientError::ServerError { status: s },
        404 if v.get("error").and_then(Value::as_str) == Some("not_found") => ClientError::Refused {
            status: 404,
            code: None,
            message: format!("the server has no {} (a Strongroom older than this client?)", r.path),
        },
        s => ClientError::Refused { status: s, code: None, message: reason(&v).unwrap_or_else(|| format!("{} answered HTTP {s}", r.path)) },
    }
}

/// A `Result` other than `success` with HTTP 200 is a refusal.
fn result_code(v: &Value, success: i64) -> ClientResult<()> {
    match v.get("Result").and_then(Value::as_i64) {
        Some(c) if c != success => Err(ClientError::Refused {
            status: 200,
            code: Some(i32::try_from(c).unwrap_or(-1)),
            message: reason(v).unwrap_or_else(|| "no reason given".to_owned()),
        }),
        _ => Ok(()),
    }
}

fn shape<T: DeserializeOwned>(path: &str, v: Value) -> ClientResult<T> {
    serde_json::from_value(v).map_err(|e| ClientError::BadResponse(format!("{path}: {e}")))
}

impl AdminApi {
    pub fn new(bearer: Bearer) -> AdminApi {
        AdminApi { bearer }
    }

    /// The server's base URL.
    pub fn base(&self) -> &str {
        match &self.bearer {
            Bearer::Source(s) => s.server().base(),
            Bearer::Token(s, _) => s.base(),
        }
    }

    async fn send<B: Serialize + ?Sized>(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&B>,
    ) -> ClientResult<Reply> {
        let (status, body) = match &self.bearer {
            Bearer::Source(src) => src.call_raw(method, path, query, body).await?,
            Bearer::Token(server, token) => {
                let (status, bytes) = server.bearer_call(method, path, query, token.expose(), body).await?;
                if status == 401 {
                    return Err(ClientError::Unauthorized);
                }
                (status, bytes)
            }
        };
        Ok(Reply { path: path.to_owned(), status, body })
    }

    /// A `/vedsdk` call answering JSON of type `T` with HTTP 200.
    async fn sdk<B: Serialize + ?Sized, T: DeserializeOwned>(&self, method: Method, path: &str, body: Option<&B>) -> ClientResult<T> {
        let r = self.send(method, path, &[], body).await?.success()?;
        let v = r.json()?;
        shape(path, v)
    }

    // --- The event log ---

    /// `GET /vedsdk/Log` with the product's filters (`Limit`, `Offset`,
    /// `Component`, `Severity`, `Kind`, …), the newest first. A bad filter
    /// is HTTP 200 with a `Result` and `Error`: a [`ClientError::Refused`].
    pub async fn log(&self, query: &[(&str, String)]) -> ClientResult<Vec<LogEvent>> {
        let path = "/vedsdk/Log";
        let r = self.send::<()>(Method::GET, path, query, None).await?.success()?;
        let v = r.json()?;
        result_code(&v, 0)?;
        Ok(shape::<LogResponse>(path, v)?.log_events)
    }

    // --- Identities and groups ---

    /// `POST /vedsdk/Identity/Browse`: identities whose name starts with
    /// `filter` (empty: all), of the kinds `identity_type` sums, at most `limit`.
    pub async fn browse(&self, filter: &str, limit: i32, identity_type: i32) -> ClientResult<Vec<IdentityEntry>> {
        let body = BrowseRequest { filter: Some(filter.to_owned()), limit: Some(limit), identity_type: Some(identity_type) };
        let r: IdentitiesResponse = self.sdk(Method::POST, "/vedsdk/Identity/Browse", Some(&body)).await?;
        Ok(r.identities)
    }

    /// `POST /vedsdk/Identity/Validate`: the whole entry of the identity
    /// `id` names, or `None` when the server has none (its empty answer).
    pub async fn validate(&self, id: &IdentityName) -> ClientResult<Option<IdentityEntry>> {
        let path = "/vedsdk/Identity/Validate";
        let body = IdentityRequest { id: id.clone(), resolve_nested: None };
        let r = self.send(Method::POST, path, &[], Some(&body)).await?.success()?;
        match r.json()? {
            Value::Null => Ok(None),
            v => Ok(Some(shape::<ValidateResponse>(path, v)?.id)),
        }
    }

    /// `POST /vedsdk/Identity/GetMembers`: a group's members.
    pub async fn members(&self, group: &IdentityName) -> ClientResult<Vec<IdentityEntry>> {
        let body = IdentityRequest { id: group.clone(), resolve_nested: Some(1) };
        let r: IdentitiesResponse = self.sdk(Method::POST, "/vedsdk/Identity/GetMembers", Some(&body)).await?;
        Ok(r.identities)
    }

    /// `POST /vedsdk/Identity/GetMemberships`: the groups an identity is a member of.
    pub async fn memberships(&self, id: &IdentityName) -> ClientResult<Vec<IdentityEntry>> {
        let body = IdentityRequest { id: id.clone(), resolve_nested: None };
        let r: IdentitiesResponse = self.sdk(Method::POST, "/vedsdk/Identity/GetMemberships", Some(&body)).await?;
        Ok(r.identities)
    }

    /// `GET /vedsdk/Identity/Self`: the caller, its groups, its provider.
    pub async fn whoami(&self) -> ClientResult<Vec<IdentityEntry>> {
        let r: IdentitiesResponse = self.sdk::<(), _>(Method::GET, "/vedsdk/Identity/Self", None).await?;
        Ok(r.identities)
    }

    // --- The \VED tree (Config/*) ---

    /// One `Config/*` call: HTTP 200 with `Result` 1, else a refusal.
    async fn config<T: DeserializeOwned>(&self, op: &str, body: &ConfigRequest) -> ClientResult<T> {
        let path = format!("/vedsdk/Config/{op}");
        let r = self.send(Method::POST, &path, &[], Some(body)).await?.success()?;
        let v = r.json()?;
        result_code(&v, CONFIG_SUCCESS)?;
        shape(&path, v)
    }

    /// `Config/Create`: an object of `class` (`Policy`, a folder; `User`) at `dn`.
    pub async fn create_object(&self, dn: &str, class: &str) -> ClientResult<ConfigObject> {
        let body = ConfigRequest { object_dn: Some(dn.to_owned()), class: Some(class.to_owned()), ..ConfigRequest::default() };
        let r: ObjectResponse = self.config("Create", &body).await?;
        r.object.ok_or_else(|| ClientError::BadResponse("Config/Create: no Object".into()))
    }

    /// `Config/Delete` (`recursive`: what is below it too).
    pub async fn delete_object(&self, dn: &str, recursive: bool) -> ClientResult<()> {
        let body =
            ConfigRequest { object_dn: Some(dn.to_owned()), recursive: Some(Flag::Int(i64::from(recursive))), ..ConfigRequest::default() };
        self.config::<ConfigResult>("Delete", &body).await.map(drop)
    }

    /// `Config/FindObjectsOfClass`: the objects of `class` at or below `dn`.
    pub async fn find_objects_of_class(&self, dn: &str, class: &str) -> ClientResult<Vec<ConfigObject>> {
        let body = ConfigRequest {
            object_dn: Some(dn.to_owned()),
            class: Some(class.to_owned()),
            recursive: Some(Flag::Bool(true)),
            ..ConfigRequest::default()
        };
        Ok(self.config::<ObjectsResponse>("FindObjectsOfClass", &body).await?.objects)
    }

    /// `Config/Enumerate`: the objects below `dn` (all levels with `recursive`).
    pub async fn enumerate(&self, dn: &str, recursive: bool) -> ClientResult<Vec<ConfigObject>> {
        let body = ConfigRequest { object_dn: Some(dn.to_owned()), recursive: Some(Flag::Bool(recursive)), ..ConfigRequest::default() };
        Ok(self.config::<ObjectsResponse>("Enumerate", &body).await?.objects)
    }

    /// `Config/DnToGuid`: the object's `{GUID}`.
    pub async fn dn_to_guid(&self, dn: &str) -> ClientResult<String> {
        let body = ConfigRequest { object_dn: Some(dn.to_owned()), ..ConfigRequest::default() };
        let r: DnToGuidResponse = self.config("DnToGuid", &body).await?;
        r.guid.ok_or_else(|| ClientError::BadResponse("Config/DnToGuid: no GUID".into()))
    }

    // --- Permissions on objects (Permissions/Object/…) ---

    fn permissions_path(object: &str, principal: &str) -> String {
        format!("/vedsdk/Permissions/Object/{}/local/{}", bare(object), bare(principal))
    }

    /// `GET Permissions/Object/{guid}`: the principals with an explicit entry (`local:{…}`).
    pub async fn principals(&self, object: &str) -> ClientResult<Vec<String>> {
        self.sdk::<(), _>(Method::GET, &format!("/vedsdk/Permissions/Object/{}", bare(object)), None).await
    }

    /// `GET Permissions/Object/{guid}/local/{principal}`: the explicit and
    /// implicit permissions; `None` when the principal has no explicit entry.
    pub async fn permissions(&self, object: &str, principal: &str) -> ClientResult<Option<PrincipalPermissions>> {
        let path = Self::permissions_path(object, principal);
        let r = self.send::<()>(Method::GET, &path, &[], None).await?;
        if r.status == 404 {
            return Ok(None);
        }
        let v = r.success()?.json()?;
        shape(&path, v).map(Some)
    }

    /// `GET …/Effective`: what the principal may do on the object.
    pub async fn effective_permissions(&self, object: &str, principal: &str) -> ClientResult<Permissions> {
        let path = format!("{}/Effective", Self::permissions_path(object, principal));
        let r: EffectivePermissions = self.sdk::<(), _>(Method::GET, &path, None).await?;
        Ok(r.effective)
    }

    /// `POST` the principal's explicit entry (201), or `PUT` it when one
    /// exists (the server's 409): the entry becomes `flags`.
    pub async fn set_permissions(&self, object: &str, principal: &str, flags: &PermissionsRequest) -> ClientResult<()> {
        let path = Self::permissions_path(object, principal);
        let r = self.send(Method::POST, &path, &[], Some(flags)).await?;
        if r.status != 409 {
            return r.success().map(drop);
        }
        self.send(Method::PUT, &path, &[], Some(flags)).await?.success().map(drop)
    }

    /// `DELETE` the principal's explicit entry; `false` when there was none (404).
    pub async fn delete_permissions(&self, object: &str, principal: &str) -> ClientResult<bool> {
        let r = self.send::<()>(Method::DELETE, &Self::permissions_path(object, principal), &[], None).await?;
        if r.status == 404 && r.json().ok().is_some_and(|v| v.get("error").is_none()) {
            return Ok(false);
        }
        r.success().map(|_| true)
    }

    // --- Groups and passwords (Identity/AddGroup …, SetPassword) ---

    /// `POST /vedsdk/Identity/AddGroup`: a new local group `local:NAME`, with no members.
    pub async fn add_group(&self, name: &str) -> ClientResult<IdentityEntry> {
        let body = AddGroupRequest { name: local_name(name), ..AddGroupRequest::default() };
        let r: AddGroupResponse = self.sdk(Method::POST, "/vedsdk/Identity/AddGroup", Some(&body)).await?;
        Ok(r.id)
    }

    /// `PUT /vedsdk/Identity/AddGroupMembers`: the members now, and those asked for that name no user.
    pub async fn add_group_members(&self, group: &IdentityName, members: Vec<IdentityName>) -> ClientResult<GroupMembersResponse> {
        let body = GroupMembersRequest { group: group.clone(), members, show_members: Some(true) };
        self.sdk(Method::PUT, "/vedsdk/Identity/AddGroupMembers", Some(&body)).await
    }

    /// `PUT /vedsdk/Identity/RemoveGroupMembers`.
    pub async fn remove_group_members(&self, group: &IdentityName, members: Vec<IdentityName>) -> ClientResult<GroupMembersResponse> {
        let body = GroupMembersRequest { group: group.clone(), members, show_members: Some(true) };
        self.sdk(Method::PUT, "/vedsdk/Identity/RemoveGroupMembers", Some(&body)).await
    }

    /// `DELETE /vedsdk/Identity/Group/local/{guid}` (`universal` with or without braces).
    pub async fn delete_group(&self, universal: &str) -> ClientResult<()> {
        let guid = universal.trim_start_matches('{').trim_end_matches('}');
        let _: MessageOnly = self.sdk::<(), _>(Method::DELETE, &format!("/vedsdk/Identity/Group/local/{guid}"), None).await?;
        Ok(())
    }

    /// `POST /vedsdk/Identity/SetPassword` (a Master Admin sets anyone's; every grant of the user ends).
    pub async fn set_password(&self, id: &IdentityName, password: SecretString) -> ClientResult<IdentityEntry> {
        let body = SetPasswordRequest { id: id.clone(), password, old_password: None };
        let r: IdResponse = self.sdk(Method::POST, "/vedsdk/Identity/SetPassword", Some(&body)).await?;
        Ok(r.id)
    }

    // --- API integrations and grants (oauth/*) ---

    /// One `oauth/*` call: HTTP 200 with `Result` 0, else a refusal.
    async fn oauth<B: Serialize + ?Sized>(&self, op: &str, body: &B) -> ClientResult<OAuthResponse> {
        let path = format!("/vedsdk/oauth/{op}");
        let r = self.send(Method::POST, &path, &[], Some(body)).await?.success()?;
        let v = r.json()?;
        result_code(&v, 0)?;
        shape(&path, v)
    }

    /// `oauth/CreateApplication`.
    pub async fn create_application(&self, app: &OAuthApplicationRequest) -> ClientResult<OAuthApplication> {
        let r = self.oauth("CreateApplication", app).await?;
        r.application.ok_or_else(|| ClientError::BadResponse("oauth/CreateApplication: no Application".into()))
    }

    /// `oauth/UpdateApplication`: the fields given change, the others stay.
    pub async fn update_application(&self, app: &OAuthApplicationRequest) -> ClientResult<OAuthApplication> {
        let r = self.oauth("UpdateApplication", &serde_json::json!({"Application": app})).await?;
        r.application.ok_or_else(|| ClientError::BadResponse("oauth/UpdateApplication: no Application".into()))
    }

    /// `oauth/GetApplications`: every API integration.
    pub async fn applications(&self) -> ClientResult<Vec<OAuthApplication>> {
        Ok(self.oauth("GetApplications", &OAuthAdminRequest::default()).await?.applications.unwrap_or_default())
    }

    /// `oauth/DeleteApplication`.
    pub async fn delete_application(&self, client_id: &str) -> ClientResult<()> {
        self.oauth("DeleteApplication", &OAuthAdminRequest { application_id: Some(client_id.to_owned()), ..Default::default() })
            .await
            .map(drop)
    }

    /// `oauth/GetRules`: who may use an integration.
    pub async fn rules(&self, client_id: &str) -> ClientResult<Vec<OAuthRule>> {
        let r = self.oauth("GetRules", &OAuthAdminRequest { application_id: Some(client_id.to_owned()), ..Default::default() }).await?;
        Ok(r.rules.unwrap_or_default())
    }

    /// `oauth/CreateRule`: `trustee` (`local:NAME` or `local:{guid}`, a user or a group) may use the integration.
    pub async fn create_rule(&self, client_id: &str, trustee: &str) -> ClientResult<()> {
        let body = OAuthAdminRequest {
            application_id: Some(client_id.to_owned()),
            trustee_prefixed_universal: Some(trustee.to_owned()),
            ..Default::default()
        };
        self.oauth("CreateRule", &body).await.map(drop)
    }

    /// `oauth/DeleteRule`.
    pub async fn delete_rule(&self, client_id: &str, trustee: &str) -> ClientResult<()> {
        let body = OAuthAdminRequest {
            application_id: Some(client_id.to_owned()),
            trustee_prefixed_universal: Some(trustee.to_owned()),
            ..Default::default()
        };
        self.oauth("DeleteRule", &body).await.map(drop)
    }

    /// `oauth/GetGrants`: the live grants (of `grantee`, of `client_id`, or all).
    pub async fn grants(&self, grantee: Option<&str>, client_id: Option<&str>) -> ClientResult<Vec<OAuthGrant>> {
        let body = OAuthAdminRequest {
            application_id: client_id.map(str::to_owned),
            grantee_prefixed_universal: grantee.map(str::to_owned),
            ..Default::default()
        };
        Ok(self.oauth("GetGrants", &body).await?.grants.unwrap_or_default())
    }

    /// `oauth/RevokeGrants`: ends the live grants of `grantee` (a user, or
    /// each member of a group) and/or of `client_id`; how many.
    pub async fn revoke_grants(&self, grantee: Option<&str>, client_id: Option<&str>) -> ClientResult<i64> {
        let body = OAuthAdminRequest {
            application_id: client_id.map(str::to_owned),
            grantee_prefixed_universal: grantee.map(str::to_owned),
            ..Default::default()
        };
        Ok(self.oauth("RevokeGrants", &body).await?.revoked.unwrap_or(0))
    }
}

/// `local:NAME` as an `ID`.
pub fn local_name(name: &str) -> IdentityName {
    IdentityName { prefixed_name: Some(format!("local:{name}")), ..IdentityName::default() }
}

/// `Config/*`'s `Result` of success.
const CONFIG_SUCCESS: i64 = 1;

/// A GUID without its braces, for a path.
fn bare(guid: &str) -> &str {
    guid.trim().trim_start_matches('{').trim_end_matches('}')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(status: u16, body: &str) -> Reply {
        Reply { path: "/vedsdk/X".into(), status, body: body.as_bytes().to_vec() }
    }

    #[test]
    fn answers_are_classified_by_status_and_result() {
        assert!(
            matches!(refusal(&reply(403, r#"{"error":"insufficient_scope","error_description":"Grant rejected scope 'configuration'."}"#)),
            ClientError::Forbidden(m) if m.contains("configuration"))
        );
        assert!(matches!(refusal(&reply(503, "{}")), ClientError::ServerError { status: 503 }));
        assert!(matches!(refusal(&reply(404, r#"{"error":"not_found","error_description":"No such endpoint."}"#)),
            ClientError::Refused { status: 404, message, .. } if message.contains("/vedsdk/X")));
        assert!(matches!(refusal(&reply(409, r#"{"Error":"Permission already exists"}"#)),
            ClientError::Refused { status: 409, code: None, message } if message == "Permission already exists"));
        assert!(matches!(refusal(&reply(400, "")), ClientError::Refused { status: 400, .. }));
        assert!(matches!(refusal(&reply(400, r#"{"Message":"No such group."}"#)),
            ClientError::Refused { status: 400, message, .. } if message == "No such group."));
        let e = result_code(&serde_json::json!({"Result": 400, "Error": "No such object"}), 1).unwrap_err();
        assert_eq!(e.to_string(), "refused: No such object (Result 400)");
        assert!(result_code(&serde_json::json!({"Result": 1}), 1).is_ok());
        assert!(result_code(&serde_json::json!({"LogEvents": []}), 0).is_ok());
        assert_eq!(reply(200, " ").json().unwrap(), Value::Null);
        assert!(matches!(reply(200, "<html>").json(), Err(ClientError::BadResponse(_))));
    }
}
