//! Typed administrative calls, one function per product call, for
//! `strongroom admin --server` and any other program: the event log
//! (`GET Log`), identities and groups (`Identity/*`), each sending the
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
}

/// `local:NAME` as an `ID`.
pub fn local_name(name: &str) -> IdentityName {
    IdentityName { prefixed_name: Some(format!("local:{name}")), ..IdentityName::default() }
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
