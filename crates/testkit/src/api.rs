//! A client of `/vedauth` and `/vedsdk` for tests, on the wire types of
//! `strongroom_proto`: requests are built from the request types and
//! answers read into the response types, so a test says what it means
//! (`api.refresh(client, rt).await?.access()`) rather than spelling JSON.
//!
//! Every call tells apart the three ways it can go: the answer the test
//! wanted, an HTTP answer that refused ([`Fail::Http`], or a `/vedsdk`
//! [`Fail::Result`] other than 0), and no answer at all
//! ([`Fail::Transport`]: a killed server, a dropped connection). Tests
//! whose subject is the wire itself (malformed bodies, the exact JSON of an
//! answer) keep the raw calls at the end of this module on purpose.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use strongroom_proto::SecretString;
use strongroom_proto::vedauth::{DEVICE_CODE_GRANT, DeviceRequest, DeviceResponse, OAuthRequest, TokenRequest, TokenResponse};
use strongroom_proto::vedsdk::{
    AddRequest, AddResponse, AssociateRequest, AssociationValue, LookupAssociationRequest, NAMESPACE, ResultResponse, RetrieveResponse,
    TypedNameValuesResponse, ValueFields, ValueResponse, VaultIdRequest,
};

/// Why a call did not give the answer a test wanted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fail {
    /// No (whole) HTTP answer arrived.
    Transport(String),
    /// An HTTP answer that is not a success: its status and body.
    Http { status: u16, body: String },
    /// A `/vedsdk` answer 200 whose `Result` is not 0: the code and body.
    Result { code: i64, body: String },
}

impl Fail {
    /// The HTTP status, when an answer arrived (200 for a `Result` refusal).
    pub fn status(&self) -> Option<u16> {
        match self {
            Fail::Transport(_) => None,
            Fail::Http { status, .. } => Some(*status),
            Fail::Result { .. } => Some(200),
        }
    }

    /// The RFC 6749 `error` of a refused `/vedauth` call (`invalid_grant`…).
    pub fn error(&self) -> Option<String> {
        match self {
            Fail::Http { body, .. } => serde_json::from_str::<Value>(body).ok()?["error"].as_str().map(str::to_owned),
            _ => None,
        }
    }

    /// The `/vedsdk` `Result` code of a refusal.
    pub fn code(&self) -> Option<i64> {
        match self {
            Fail::Result { code, .. } => Some(*code),
            Fail::Http { body, .. } => serde_json::from_str::<Value>(body).ok()?["Result"].as_i64(),
            Fail::Transport(_) => None,
        }
    }

    /// `"200"`-free summary for tallies: `400 invalid_grant`, `503`,
    /// `Result 22`, `transport`.
    pub fn summary(&self) -> String {
        match self {
            Fail::Transport(_) => "transport".to_owned(),
            Fail::Http { status, .. } => match self.error() {
                Some(e) => format!("{status} {e}"),
                None => status.to_string(),
            },
            Fail::Result { code, .. } => format!("Result {code}"),
        }
    }

    /// The body of the answer (empty for a transport failure).
    pub fn body(&self) -> &str {
        match self {
            Fail::Transport(_) => "",
            Fail::Http { body, .. } | Fail::Result { body, .. } => body,
        }
    }
}

impl std::fmt::Display for Fail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fail::Transport(e) => write!(f, "no answer: {e}"),
            Fail::Http { status, body } => write!(f, "{status} {body}"),
            Fail::Result { code, body } => write!(f, "Result {code}: {body}"),
        }
    }
}

/// The token strings of a token answer.
pub trait TokensExt {
    fn access(&self) -> &str;
    /// The refresh token (the integration's grants are refreshable).
    fn refresh(&self) -> &str;
}

impl TokensExt for TokenResponse {
    fn access(&self) -> &str {
        self.access_token.expose()
    }

    fn refresh(&self) -> &str {
        self.refresh_token.as_ref().map(SecretString::expose).unwrap_or_else(|| panic!("no refresh token in {self:?}"))
    }
}

/// A client of one server.
#[derive(Debug, Clone)]
pub struct Api {
    pub http: reqwest::Client,
    /// `scheme://host:port`, no trailing slash.
    pub base: String,
}

/// What the tests' clients are: no redirects followed (the page's answers
/// are read as they are), and a bound on every request.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).timeout(Duration::from_secs(30)).build().unwrap()
}

impl Api {
    /// A client of `base` with [`client`]'s settings.
    pub fn new(base: impl Into<String>) -> Api {
        Api { http: client(), base: base.into() }
    }

    /// A client of `base` on `http` (a client with its own TLS roots,
    /// timeout or pool).
    pub fn with(http: reqwest::Client, base: impl Into<String>) -> Api {
        Api { http, base: base.into() }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn read<T: DeserializeOwned>(r: Result<reqwest::Response, reqwest::Error>) -> Result<T, Fail> {
        let r = r.map_err(|e| Fail::Transport(e.to_string()))?;
        let status = r.status().as_u16();
        let body = r.text().await.map_err(|e| Fail::Transport(e.to_string()))?;
        if !(200..300).contains(&status) {
            return Err(Fail::Http { status, body });
        }
        serde_json::from_str(&body).map_err(|e| panic!("{status} answer that is not the expected type ({e}): {body}"))
    }

    /// `POST /vedauth/authorize/device`.
    pub async fn try_device(&self, client_id: &str, scope: &str) -> Result<DeviceResponse, Fail> {
        let body = DeviceRequest { client_id: Some(client_id.into()), scope: Some(scope.into()) };
        Self::read(self.http.post(self.url("/vedauth/authorize/device")).json(&body).send().await).await
    }

    /// A device authorization start, which must succeed.
    pub async fn device(&self, client_id: &str, scope: &str) -> DeviceResponse {
        self.try_device(client_id, scope).await.unwrap_or_else(|f| panic!("device start for {client_id}: {f}"))
    }

    /// `POST /vedauth/authorize/token` with `body`.
    pub async fn token(&self, body: &TokenRequest) -> Result<TokenResponse, Fail> {
        Self::read(self.http.post(self.url("/vedauth/authorize/token")).json(body).send().await).await
    }

    /// The device-code exchange (a poll).
    pub async fn poll(&self, client_id: &str, device_code: &str) -> Result<TokenResponse, Fail> {
        self.token(&exchange(client_id, device_code)).await
    }

    /// A refresh in the product's shape: `{client_id, refresh_token}`.
    pub async fn refresh(&self, client_id: &str, refresh_token: &str) -> Result<TokenResponse, Fail> {
        self.token(&refresh(client_id, refresh_token)).await
    }

    /// The password grant (`POST /vedauth/authorize/oauth`).
    pub async fn try_password_grant(&self, client_id: &str, user: &str, password: &str, scope: &str) -> Result<TokenResponse, Fail> {
        let body = OAuthRequest {
            client_id: Some(client_id.into()),
            username: Some(user.into()),
            password: Some(SecretString(password.into())),
            scope: Some(scope.into()),
            ..OAuthRequest::default()
        };
        Self::read(self.http.post(self.url("/vedauth/authorize/oauth")).json(&body).send().await).await
    }

    /// The password grant for `user` on `client_id`, which must succeed.
    pub async fn password_grant(&self, client_id: &str, user: &str, password: &str, scope: &str) -> TokenResponse {
        self.try_password_grant(client_id, user, password, scope)
            .await
            .unwrap_or_else(|f| panic!("password grant for {user} on {client_id}: {f}"))
    }

    /// `GET /vedauth/authorize/verify` with `access`: the status.
    pub async fn verify(&self, access: &str) -> u16 {
        self.http.get(self.url("/vedauth/authorize/verify")).bearer_auth(access).send().await.unwrap().status().as_u16()
    }

    /// `GET /vedauth/revoke/token` with `access`: the status.
    pub async fn revoke(&self, access: &str) -> u16 {
        self.http.get(self.url("/vedauth/revoke/token")).bearer_auth(access).send().await.unwrap().status().as_u16()
    }

    /// A `/vedsdk/SecretStore/<op>` call with the bearer `token`: the answer
    /// as `T` when it is 200 with `Result` 0.
    pub async fn sdk<T: DeserializeOwned>(&self, token: &str, op: &str, body: &impl Serialize) -> Result<T, Fail> {
        self.sdk_at(token, &format!("/vedsdk/SecretStore/{op}"), body).await
    }

    /// Like [`Api::sdk`], on any `/vedsdk` path.
    pub async fn sdk_at<T: DeserializeOwned>(&self, token: &str, path: &str, body: &impl Serialize) -> Result<T, Fail> {
        let sent = self.http.post(self.url(path)).bearer_auth(token).json(body).send().await;
        Self::result(path, Self::read(sent).await?)
    }

    /// `GET path` (a `/vedsdk` path and query) with the bearer `token`: the
    /// answer as `T` when it is 200 with `Result` 0 (or no `Result`).
    pub async fn sdk_get<T: DeserializeOwned>(&self, token: &str, path: &str) -> Result<T, Fail> {
        let sent = self.http.get(self.url(path)).bearer_auth(token).send().await;
        Self::result(path, Self::read(sent).await?)
    }

    fn result<T: DeserializeOwned>(path: &str, v: Value) -> Result<T, Fail> {
        match v["Result"].as_i64() {
            Some(0) | None => {
                Ok(serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{path}: not the expected answer ({e}): {v}")))
            }
            Some(code) => Err(Fail::Result { code, body: v.to_string() }),
        }
    }

    /// `SecretStore/Add` of `data` (bytes, sent as base64) under `key` in `owner`.
    pub async fn add(&self, token: &str, owner: &str, key: &str, data: &[u8]) -> Result<AddResponse, Fail> {
        let body = AddRequest {
            base64_data: SecretString(STANDARD.encode(data)),
            keyname: key.into(),
            namespace: NAMESPACE.into(),
            owner: Some(owner.into()),
            vault_type: 32,
        };
        self.sdk(token, "Add", &body).await
    }

    /// `SecretStore/Associate` of `name` = `value` on entry `vault_id`.
    pub async fn associate(&self, token: &str, vault_id: i64, name: &str, value: &AssociationValue) -> Result<ResultResponse, Fail> {
        let body = AssociateRequest { vault_id, name: name.into(), value: ValueFields::from(value) };
        self.sdk(token, "Associate", &body).await
    }

    /// `SecretStore/Retrieve` of entry `vault_id`.
    pub async fn retrieve(&self, token: &str, vault_id: i64) -> Result<RetrieveResponse, Fail> {
        self.sdk(token, "Retrieve", &VaultIdRequest { vault_id }).await
    }

    /// `SecretStore/LookupAssociationbyVaultID`: the value of `name`.
    pub async fn lookup_association(&self, token: &str, vault_id: i64, name: &str) -> Result<ValueResponse, Fail> {
        self.sdk(token, "LookupAssociationbyVaultID", &LookupAssociationRequest { vault_id, name: name.into() }).await
    }

    /// `SecretStore/LookupAllAssociationsbyVaultid`: every (name, value) of
    /// entry `vault_id`, as strings.
    pub async fn associations(&self, token: &str, vault_id: i64) -> Result<Vec<(String, String)>, Fail> {
        let all: TypedNameValuesResponse = self.sdk(token, "LookupAllAssociationsbyVaultid", &VaultIdRequest { vault_id }).await?;
        Ok(all.typed_name_values.into_iter().map(|v| (v.name, v.value.0)).collect())
    }

    /// `POST path` with a JSON body, raw: the status and the answer as JSON
    /// (`null` when it is not JSON). For tests of the wire itself.
    pub async fn post_json(&self, path: &str, body: &Value) -> (u16, Value) {
        post_json(&self.http, &self.url(path), body).await
    }
}

/// A string value for [`Api::associate`].
pub fn string(v: &str) -> AssociationValue {
    AssociationValue::String(SecretString(v.into()))
}

/// The device-code exchange's body.
pub fn exchange(client_id: &str, device_code: &str) -> TokenRequest {
    TokenRequest {
        client_id: Some(client_id.into()),
        grant_type: Some(DEVICE_CODE_GRANT.into()),
        device_code: Some(SecretString(device_code.into())),
        ..TokenRequest::default()
    }
}

/// A refresh's body, in the product's shape (no `grant_type`).
pub fn refresh(client_id: &str, refresh_token: &str) -> TokenRequest {
    TokenRequest { client_id: Some(client_id.into()), refresh_token: Some(SecretString(refresh_token.into())), ..TokenRequest::default() }
}

/// `POST url` with a JSON body, raw: the status and the answer as JSON
/// (`null` when it is not JSON).
pub async fn post_json(http: &reqwest::Client, url: &str, body: &Value) -> (u16, Value) {
    let r = http.post(url).json(body).send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_the_wire_shapes() {
        let v = serde_json::to_value(exchange("app", "code")).unwrap();
        assert_eq!(v, serde_json::json!({"client_id": "app", "grant_type": DEVICE_CODE_GRANT, "device_code": "code"}));
        let v = serde_json::to_value(refresh("app", "rt")).unwrap();
        assert_eq!(v, serde_json::json!({"client_id": "app", "refresh_token": "rt"}));
        let f = Fail::Http { status: 400, body: r#"{"error":"invalid_grant"}"#.into() };
        assert_eq!((f.error().as_deref(), f.summary().as_str()), (Some("invalid_grant"), "400 invalid_grant"));
        assert_eq!(Fail::Result { code: 27, body: String::new() }.code(), Some(27));
    }
}
