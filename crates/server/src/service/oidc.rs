//! OpenID Connect sign-in on the approval page (`[oidc]`): the
//! authorization code flow with PKCE (S256), written on the server's own
//! `reqwest` and `ring` rather than the `openidconnect` crate (which brings
//! `oauth2`, `chrono`, `serde_path_to_error`, a JOSE stack and its RSA
//! implementation into the binary; the flow needs discovery, one token
//! request and one signature check).
//!
//! A start ([`Oidc::start`]) makes a random `state` and stores its hash with
//! the device's user code, the hash of a browser binding (a random value in
//! a `SameSite=Lax` cookie, which a top-level redirect back from the
//! provider carries), and an expiry (5 minutes). The `nonce` and the PKCE
//! verifier are derived from the state under the server's page key, so
//! nothing secret is stored. The callback takes the state in one
//! conditional write (`take_oidc_state`: unused, unexpired, this browser's),
//! so a state is good once: a replayed callback, and with it its nonce, is
//! refused. Then the code is exchanged (client id and secret, the verifier),
//! and the id token is checked ([`verify_id_token`]): its signature (RS256
//! or ES256, a key of the provider's JWKS), `iss` the configured issuer,
//! `aud` the client id (and `azp` when there are several), `exp`, `iat`,
//! and `nonce` the one derived from this state. The person is
//! `OIDC+<name>:{<uuid from issuer and sub>}`, named and grouped by the
//! configured claims, and stored as a directory person is
//! (`AdminStore::sync_directory_user`).

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use strongroom_core::time::UnixTime;

/// `[oidc]`, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OidcConfig {
    /// The issuer (`https://…`; `http://` only on a loopback address).
    pub issuer: String,
    pub client_id: String,
    pub client_secret_file: Option<std::path::PathBuf>,
    pub client_secret_env: Option<String>,
    /// The provider's name in identities (`OIDC+sso:{…}`) and on the page's button.
    pub name: String,
    /// The claim that names a person (default `preferred_username`, else `sub`).
    pub name_claim: String,
    /// The claim listing a person's groups (default `groups`).
    pub groups_claim: String,
    pub scopes: String,
    pub timeout: Duration,
}

impl OidcConfig {
    pub fn prefix(&self) -> String {
        format!("OIDC+{}", self.name)
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OidcError {
    /// The provider could not be reached, or answered what it should not.
    #[error("the identity provider cannot be reached: {0}")]
    Unavailable(String),
    /// The state is unknown, spent, expired, or another browser's.
    #[error("the sign-in was not started here, was used already, or expired")]
    State,
    /// The id token is not acceptable (the reason is logged).
    #[error("the identity provider's answer is not acceptable: {0}")]
    Token(String),
    #[error("{0}")]
    Config(String),
}

/// What the provider's discovery document says.
#[derive(Debug, Clone, Deserialize)]
pub struct Discovery {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub jwks_uri: String,
}

/// The claims a sign-in reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person {
    pub issuer: String,
    pub subject: String,
    pub name: String,
    pub groups: Vec<String>,
}

/// The provider.
#[derive(Debug)]
pub struct Oidc {
    pub config: OidcConfig,
    http: reqwest::Client,
    discovery: tokio::sync::OnceCell<(Discovery, Value)>,
}

/// How long a started sign-in may take.
pub const STATE_SECS: i64 = 300;
/// Clock skew forgiven on `iat` and `exp`.
const SKEW_SECS: i64 = 60;

impl Oidc {
    pub fn new(config: OidcConfig) -> Oidc {
        let http = reqwest::Client::builder()
            .timeout(config.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_else(|_| reqwest::Client::new());
        Oidc { config, http, discovery: tokio::sync::OnceCell::new() }
    }

    /// Discovery and the JWKS, fetched once.
    async fn discovered(&self) -> Result<&(Discovery, Value), OidcError> {
        self.discovery
            .get_or_try_init(|| async {
                let url = format!("{}/.well-known/openid-configuration", self.config.issuer.trim_end_matches('/'));
                let d: Discovery = self.get_json(&url).await?;
                if d.issuer.trim_end_matches('/') != self.config.issuer.trim_end_matches('/') {
                    return Err(OidcError::Unavailable(format!("discovery names issuer {:?}", d.issuer)));
                }
                let jwks: Value = self.get_json(&d.jwks_uri).await?;
                Ok((d, jwks))
            })
            .await
    }

    async fn get_json<T: serde::de::DeserializeOwned>(&self, url: &str) -> Result<T, OidcError> {
        let r = self.http.get(url).send().await.map_err(|e| OidcError::Unavailable(e.to_string()))?;
        if !r.status().is_success() {
            return Err(OidcError::Unavailable(format!("{url} answered {}", r.status())));
        }
        r.json().await.map_err(|e| OidcError::Unavailable(format!("{url}: {e}")))
    }

    fn client_secret(&self) -> Result<String, OidcError> {
        match (&self.config.client_secret_file, &self.config.client_secret_env) {
            (Some(p), _) => std::fs::read_to_string(p)
                .map(|s| s.trim_end_matches(['\r', '\n']).to_owned())
                .map_err(|e| OidcError::Config(format!("oidc.client_secret_file {}: {e}", p.display()))),
            (None, Some(v)) => std::env::var(v).map_err(|_| OidcError::Config(format!("oidc.client_secret_env: {v} is not set"))),
            (None, None) => Ok(String::new()),
        }
    }

    /// The provider's authorization URL for `state`.
    pub async fn authorization_url(&self, key: &[u8; 32], state: &str, redirect_uri: &str) -> Result<String, OidcError> {
        let (d, _) = self.discovered().await?;
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier(key, state).as_bytes()));
        let q = serde_urlencoded::to_string([
            ("response_type", "code"),
            ("client_id", self.config.client_id.as_str()),
            ("redirect_uri", redirect_uri),
            ("scope", self.config.scopes.as_str()),
            ("state", state),
            ("nonce", nonce(key, state).as_str()),
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "S256"),
        ])
        .map_err(|e| OidcError::Config(e.to_string()))?;
        let sep = if d.authorization_endpoint.contains('?') { '&' } else { '?' };
        Ok(format!("{}{sep}{q}", d.authorization_endpoint))
    }

    /// Exchanges `code` (of the sign-in `state` started) and checks the id token.
    pub async fn finish(&self, key: &[u8; 32], state: &str, code: &str, redirect_uri: &str, now: UnixTime) -> Result<Person, OidcError> {
        let (d, jwks) = self.discovered().await?;
        let secret = self.client_secret()?;
        let verifier = verifier(key, state);
        let form =
            [("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirect_uri), ("code_verifier", verifier.as_str())];
        let r = self
            .http
            .post(&d.token_endpoint)
            .basic_auth(form_encode(&self.config.client_id), Some(form_encode(&secret)))
            .form(&form)
            .send()
            .await
            .map_err(|e| OidcError::Unavailable(e.to_string()))?;
        let status = r.status();
        let body: Value = r.json().await.map_err(|e| OidcError::Unavailable(format!("token endpoint: {e}")))?;
        if !status.is_success() {
            return Err(OidcError::Token(format!("token endpoint answered {status}: {}", body["error"])));
        }
        let id_token = body["id_token"].as_str().ok_or_else(|| OidcError::Token("no id_token".into()))?;
        let claims = verify_id_token(id_token, jwks, &self.config.issuer, &self.config.client_id, &nonce(key, state), now)?;
        let subject = claims["sub"].as_str().filter(|s| !s.is_empty()).ok_or_else(|| OidcError::Token("no sub".into()))?.to_owned();
        let name = claims[&self.config.name_claim].as_str().filter(|s| !s.is_empty()).unwrap_or(&subject).to_owned();
        let groups = match &claims[&self.config.groups_claim] {
            Value::Array(a) => a.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
            Value::String(s) => vec![s.clone()],
            _ => Vec::new(),
        };
        Ok(Person { issuer: self.config.issuer.clone(), subject, name, groups })
    }
}

/// RFC 6749 §2.3.1: the client id and secret are form-encoded before Basic.
fn form_encode(s: &str) -> String {
    serde_urlencoded::to_string([("", s)]).map(|e| e.trim_start_matches('=').to_owned()).unwrap_or_default()
}

/// The nonce of a state: derived under the page key, never stored.
pub fn nonce(key: &[u8; 32], state: &str) -> String {
    URL_SAFE_NO_PAD.encode(strongroom_core::mac::hmac_sha256_of(key, &[b"strongroom/oidc-nonce/v1\0", state.as_bytes()]))
}

/// The PKCE verifier of a state (43 characters).
pub fn verifier(key: &[u8; 32], state: &str) -> String {
    URL_SAFE_NO_PAD.encode(strongroom_core::mac::hmac_sha256_of(key, &[b"strongroom/oidc-pkce/v1\0", state.as_bytes()]))
}

/// A person's stable id: a UUID made of SHA-256(issuer, sub).
pub fn person_id(issuer: &str, subject: &str) -> String {
    let h = Sha256::digest([issuer.as_bytes(), b"\0", subject.as_bytes()].concat());
    let mut b: [u8; 16] = [0; 16];
    b.copy_from_slice(&h[..16]);
    uuid::Builder::from_sha1_bytes(b).into_uuid().hyphenated().to_string()
}

/// Checks a compact JWS id token against `jwks` and the expected claims;
/// its claims.
pub fn verify_id_token(jwt: &str, jwks: &Value, issuer: &str, client_id: &str, nonce: &str, now: UnixTime) -> Result<Value, OidcError> {
    let bad = |why: &str| OidcError::Token(why.to_owned());
    let mut parts = jwt.split('.');
    let (Some(h), Some(p), Some(s), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else { return Err(bad("not a JWS")) };
    let header: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(h).map_err(|_| bad("header"))?).map_err(|_| bad("header"))?;
    let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(p).map_err(|_| bad("payload"))?).map_err(|_| bad("payload"))?;
    let sig = URL_SAFE_NO_PAD.decode(s).map_err(|_| bad("signature"))?;
    let alg = header["alg"].as_str().unwrap_or("");
    let kid = header["kid"].as_str();
    let keys = jwks["keys"].as_array().ok_or_else(|| bad("no keys"))?;
    let key = keys
        .iter()
        .find(|k| kid.is_none_or(|kid| k["kid"].as_str() == Some(kid)) && k["use"].as_str().is_none_or(|u| u == "sig"))
        .ok_or_else(|| bad("no key for its kid"))?;
    let signed = format!("{h}.{p}");
    let b64 = |v: &Value| v.as_str().and_then(|s| URL_SAFE_NO_PAD.decode(s).ok()).ok_or_else(|| bad("key"));
    let ok = match (alg, key["kty"].as_str()) {
        ("RS256", Some("RSA")) => ring::signature::RsaPublicKeyComponents { n: b64(&key["n"])?, e: b64(&key["e"])? }
            .verify(&ring::signature::RSA_PKCS1_2048_8192_SHA256, signed.as_bytes(), &sig)
            .is_ok(),
        ("ES256", Some("EC")) if key["crv"].as_str() == Some("P-256") => {
            let mut point = vec![4u8];
            point.extend(b64(&key["x"])?);
            point.extend(b64(&key["y"])?);
            ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, point)
                .verify(signed.as_bytes(), &sig)
                .is_ok()
        }
        _ => return Err(bad("an algorithm or key type not accepted (RS256, ES256)")),
    };
    if !ok {
        return Err(bad("signature"));
    }
    if claims["iss"].as_str().map(|i| i.trim_end_matches('/')) != Some(issuer.trim_end_matches('/')) {
        return Err(bad("issuer"));
    }
    let aud_ok = match &claims["aud"] {
        Value::String(a) => a == client_id,
        Value::Array(list) => {
            list.iter().any(|a| a.as_str() == Some(client_id)) && (list.len() == 1 || claims["azp"].as_str() == Some(client_id))
        }
        _ => false,
    };
    if !aud_ok {
        return Err(bad("audience"));
    }
    let t = now.millis() / 1000;
    if claims["exp"].as_i64().is_none_or(|exp| exp + SKEW_SECS <= t) {
        return Err(bad("expired"));
    }
    if claims["iat"].as_i64().is_some_and(|iat| iat > t + SKEW_SECS) {
        return Err(bad("issued in the future"));
    }
    let expected = nonce.as_bytes();
    let got = claims["nonce"].as_str().unwrap_or("").as_bytes();
    if !bool::from(subtle::ConstantTimeEq::ct_eq(expected, got)) {
        return Err(bad("nonce"));
    }
    Ok(claims)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::rand::SystemRandom;
    use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
    use serde_json::json;

    const ISS: &str = "https://idp.example.org";
    const NOW: UnixTime = UnixTime::from_secs(1_800_000_000);

    fn key() -> (EcdsaKeyPair, Value) {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let kp = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
        let pt = kp.public_key().as_ref();
        let jwk = json!({"kty": "EC", "crv": "P-256", "kid": "k1", "use": "sig",
                         "x": URL_SAFE_NO_PAD.encode(&pt[1..33]), "y": URL_SAFE_NO_PAD.encode(&pt[33..65])});
        (kp, json!({"keys": [jwk]}))
    }

    fn sign(kp: &EcdsaKeyPair, claims: &Value) -> String {
        let h = URL_SAFE_NO_PAD.encode(json!({"alg": "ES256", "kid": "k1"}).to_string());
        let p = URL_SAFE_NO_PAD.encode(claims.to_string());
        let sig = kp.sign(&SystemRandom::new(), format!("{h}.{p}").as_bytes()).unwrap();
        format!("{h}.{p}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()))
    }

    fn claims() -> Value {
        json!({"iss": ISS, "aud": "strongroom", "sub": "u1", "exp": 1_800_000_300, "iat": 1_800_000_000, "nonce": "n1"})
    }

    #[test]
    fn an_id_token_is_checked_for_signature_issuer_audience_time_and_nonce() {
        let (kp, jwks) = key();
        let check = |c: &Value| verify_id_token(&sign(&kp, c), &jwks, ISS, "strongroom", "n1", NOW);
        assert_eq!(check(&claims()).unwrap()["sub"], "u1");
        let with = |k: &str, v: Value| {
            let mut c = claims();
            c[k] = v;
            c
        };
        assert_eq!(check(&with("iss", json!("https://evil.example.org"))), Err(OidcError::Token("issuer".into())));
        assert_eq!(check(&with("aud", json!("another-client"))), Err(OidcError::Token("audience".into())));
        assert_eq!(check(&with("aud", json!(["strongroom", "another"]))), Err(OidcError::Token("audience".into())), "azp needed");
        assert!(
            check(&{
                let mut c = with("aud", json!(["strongroom", "another"]));
                c["azp"] = json!("strongroom");
                c
            })
            .is_ok()
        );
        assert_eq!(check(&with("exp", json!(1_799_999_000))), Err(OidcError::Token("expired".into())));
        assert_eq!(check(&with("nonce", json!("replayed"))), Err(OidcError::Token("nonce".into())));
        assert_eq!(check(&with("nonce", Value::Null)), Err(OidcError::Token("nonce".into())));
        // Another key's signature, a token cut short, an algorithm refused.
        let (other, _) = key();
        assert_eq!(
            verify_id_token(&sign(&other, &claims()), &jwks, ISS, "strongroom", "n1", NOW),
            Err(OidcError::Token("signature".into()))
        );
        assert!(verify_id_token("a.b", &jwks, ISS, "strongroom", "n1", NOW).is_err());
        let none = format!("{}.{}.", URL_SAFE_NO_PAD.encode(r#"{"alg":"none"}"#), URL_SAFE_NO_PAD.encode(claims().to_string()));
        assert!(verify_id_token(&none, &jwks, ISS, "strongroom", "n1", NOW).is_err());
    }

    #[test]
    fn nonce_and_verifier_are_the_states_own() {
        let k = [5u8; 32];
        assert_ne!(nonce(&k, "s1"), nonce(&k, "s2"));
        assert_ne!(nonce(&k, "s1"), verifier(&k, "s1"));
        assert_eq!(verifier(&k, "s1").len(), 43, "RFC 7636: 43 to 128 characters");
        assert_eq!(person_id("https://a", "u"), person_id("https://a", "u"));
        assert_ne!(person_id("https://a", "u"), person_id("https://b", "u"));
    }
}

/// The page's side of the flow: starting a sign-in for a device's code, and
/// finishing it at the callback.
pub mod page {
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    use strongroom_core::event::EventKind;
    use strongroom_core::identity::{Group, GroupId, User, UserId};
    use strongroom_core::random::bytes;

    use super::{OidcError, STATE_SECS, person_id};
    use crate::service::Origin;
    use crate::service::device::{self, Consent, PageError};
    use crate::state::AppState;

    /// Where the provider sends the browser back.
    pub fn redirect_uri(app: &AppState) -> String {
        format!("{}/vedauth/device/oidc/callback", app.public_url)
    }

    fn keyed(app: &AppState, what: &[u8], value: &str) -> [u8; 32] {
        strongroom_core::mac::hmac_sha256_of(&app.keys.page, &[what, value.as_bytes()])
    }

    /// A started sign-in: the provider's URL to send the browser to, and the
    /// binding to set as its cookie.
    #[derive(Debug)]
    pub struct Started {
        pub location: String,
        pub binding: String,
    }

    /// Starts a sign-in for the device code `user_code` (as typed; checked after the sign-in).
    pub async fn start(app: &AppState, user_code: &str) -> Result<Started, PageError> {
        let oidc = app.oidc.as_ref().ok_or(PageError::BadForm)?;
        let state = URL_SAFE_NO_PAD.encode(bytes::<32>(&*app.rng));
        let binding = URL_SAFE_NO_PAD.encode(bytes::<32>(&*app.rng));
        let now = app.now();
        let code: String = user_code.chars().take(32).collect();
        app.store
            .insert_oidc_state(
                keyed(app, b"oidc-state\0", &state),
                keyed(app, b"oidc-binding\0", &binding),
                code,
                now.plus_secs(STATE_SECS),
                now,
            )
            .await?;
        let location = oidc.authorization_url(&app.keys.page, &state, &redirect_uri(app)).await.map_err(refused)?;
        Ok(Started { location, binding })
    }

    fn refused(e: OidcError) -> PageError {
        match e {
            OidcError::State => PageError::SignInExpired,
            OidcError::Unavailable(why) | OidcError::Config(why) => {
                tracing::warn!(why, "OIDC: the identity provider cannot be reached");
                PageError::DirectoryUnavailable
            }
            OidcError::Token(why) => {
                tracing::warn!(why, "OIDC: the identity provider's answer was refused");
                PageError::ProviderRefused
            }
        }
    }

    /// The callback: takes the state (once), exchanges the code, checks the
    /// id token, stores the person, and shows the device's request.
    pub async fn finish(app: &AppState, state: &str, code: &str, binding: &str, csrf: &str, origin: &Origin) -> Result<Consent, PageError> {
        let oidc = app.oidc.as_ref().ok_or(PageError::BadForm)?;
        let now = app.now();
        let user_code = app
            .store
            .take_oidc_state(keyed(app, b"oidc-state\0", state), keyed(app, b"oidc-binding\0", binding), now)
            .await?
            .ok_or(PageError::SignInExpired)?;
        let person = oidc.finish(&app.keys.page, state, code, &redirect_uri(app), now).await.map_err(refused)?;
        let prefix = oidc.config.prefix();
        let user = User {
            id: UserId::directory(&prefix, &person_id(&person.issuer, &person.subject)),
            name: format!("{prefix}:{}", person.name),
            disabled: false,
            master_admin: false,
            created_at: now,
        };
        let groups = person
            .groups
            .iter()
            .map(|g| Group { id: GroupId::generate(&*app.rng), name: format!("{prefix}:{g}"), created_at: now })
            .collect();
        let event = app.event(EventKind::DirectorySynced, origin).identity(user.id.identity()).object(user.name.as_str());
        let user = app.store.sync_directory_user(user, prefix, groups, event).await?;
        if user.disabled {
            return Err(PageError::NotAllowed);
        }
        device::consent_for(app, user, &user_code, csrf, origin).await
    }
}
