//! OpenID Connect sign-in on the approval page (`[oidc]`): the
//! authorization code flow with PKCE (S256), written on the server's own
//! `reqwest` rather than the `openidconnect` crate (which brings `oauth2`,
//! `chrono`, `serde_path_to_error`, a JOSE stack and its RSA implementation
//! into the binary; the flow needs discovery, one token request and one
//! signature check).
//!
//! A start ([`page::start`]) makes a random `state` and stores its hash with
//! the device's user code, the hash of a browser binding (a random value in
//! a `SameSite=Lax` cookie, which a top-level redirect back from the
//! provider carries), and an expiry (5 minutes). The `nonce` and the PKCE
//! verifier are derived from the state under the server's page key, so
//! nothing secret is stored. The callback takes the state in one
//! conditional write (`take_oidc_state`: unused, unexpired, this browser's),
//! so a state is good once: a replayed callback, and with it its nonce, is
//! refused. Then the code is exchanged (client id and secret, the verifier),
//! and the id token is checked ([`check_id_token`]) by the one JWS
//! implementation, the machine grants' (`strongroom_core::machine`:
//! [`Jwt::parse`], [`Jwt::verify`], [`Jwt::check_claims`]), with keys from a
//! [`KeyCache`] of the provider's own (a rotated key is fetched again for its
//! unknown `kid`); only what is OIDC's own is here: `azp`, the `nonce`, an
//! issuer's trailing `/`. The person is
//! `OIDC+<name>:{<uuid from issuer and sub>}`, named and grouped by the
//! configured claims, and stored as a directory person is
//! (`AdminStore::sync_directory_user`).

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

use strongroom_core::machine::{Algorithm, Jwk, Jwt, JwtError, JwtIssuer, KeySource};
use strongroom_core::time::UnixTime;

use crate::jwks::{JwtSettings, KeyCache, KeysError, http_client, is_loopback_http};

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
    /// Extra CA certificates (PEM) trusted for the provider.
    pub ca_file: Option<std::path::PathBuf>,
    /// A grant of a person who signed in through the provider is refreshed
    /// only until this long after their last sign-in there (the provider is
    /// asked nothing at a refresh, so this bounds how stale their groups get).
    pub session_secs: i64,
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
    /// The provider's endpoints, read once.
    discovery: tokio::sync::OnceCell<Discovery>,
    /// The provider's signing keys: the JWT issuers' cache, an instance of
    /// its own (kept `jwt.key_cache_secs`, fetched again for an unknown
    /// `kid` at most once per `jwt.refetch_min_secs`).
    keys: KeyCache,
    /// The provider as the JWT checks see it.
    issuer: JwtIssuer,
}

/// `oidc.session_secs` by default: 12 hours.
pub const SESSION_SECS: i64 = 43_200;

/// How long a started sign-in may take.
pub const STATE_SECS: i64 = 300;
/// Clock skew forgiven on `iat`, `nbf` and `exp`.
const SKEW_SECS: i64 = 60;
/// The longest id token lifetime (`exp - iat`) accepted: a day.
const MAX_LIFETIME_SECS: i64 = 86_400;
/// The name of the provider's entry in its key cache.
const KEYS_NAME: &str = "oidc";

impl Oidc {
    /// The provider of `config`; `jwt` gives the key cache's bounds. An
    /// unreadable `oidc.ca_file` is an error.
    pub fn new(config: OidcConfig, jwt: &JwtSettings) -> Result<Oidc, KeysError> {
        let secs = i64::try_from(config.timeout.as_secs()).unwrap_or(5);
        let settings = JwtSettings { fetch_timeout_secs: secs, ca_file: config.ca_file.clone(), ..jwt.clone() };
        let keys = KeyCache::with_loopback_http(&settings)?;
        // The token request carries the client secret: no redirects.
        let http = http_client(config.ca_file.as_deref(), config.timeout, true, 0)?;
        let issuer = id_token_issuer(&config);
        Ok(Oidc { config, http, discovery: tokio::sync::OnceCell::new(), keys, issuer })
    }

    /// The endpoints of the discovery document, read once.
    async fn discovered(&self) -> Result<&Discovery, OidcError> {
        self.discovery
            .get_or_try_init(|| async {
                let url = discovery_url(&self.config.issuer);
                let d: Discovery = self.get_json(&url).await?;
                if d.issuer.trim_end_matches('/') != self.config.issuer.trim_end_matches('/') {
                    return Err(OidcError::Unavailable(format!("discovery names issuer {:?}", d.issuer)));
                }
                for endpoint in [&d.authorization_endpoint, &d.token_endpoint] {
                    if !(endpoint.starts_with("https://") || is_loopback_http(endpoint)) {
                        return Err(OidcError::Unavailable(format!("discovery names {endpoint:?}: https:// only")));
                    }
                }
                Ok(d)
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
        let d = self.discovered().await?;
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
        let d = self.discovered().await?;
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
        let claims = self.id_token_claims(id_token, &nonce(key, state), now).await?;
        let text = |v: Option<&Value>| v.and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_owned);
        let subject = text(claims.get("sub")).ok_or_else(|| OidcError::Token("no sub".into()))?;
        let name = text(claims.get(&self.config.name_claim)).unwrap_or_else(|| subject.clone());
        let groups = match claims.get(&self.config.groups_claim) {
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
            Some(Value::String(s)) => vec![s.clone()],
            _ => Vec::new(),
        };
        Ok(Person { issuer: self.config.issuer.clone(), subject, name, groups })
    }
}

impl Oidc {
    /// The claims of `id_token` once checked ([`check_id_token`]) with the
    /// provider's keys from the cache: an unknown `kid` (a key rotated at
    /// the provider) fetches them again, at most once per `jwt.refetch_min_secs`.
    pub async fn id_token_claims(&self, id_token: &str, nonce: &str, now: UnixTime) -> Result<Map<String, Value>, OidcError> {
        let token = Jwt::parse(id_token).map_err(refused)?;
        let keys = self
            .keys
            .keys(&self.issuer, token.kid.as_deref(), now, |_| {})
            .await
            .map_err(|e| OidcError::Unavailable(format!("the provider's keys: {e}")))?;
        check_id_token(&token, &keys, &self.issuer, nonce, now)
    }
}

/// The discovery document's URL of `issuer`.
fn discovery_url(issuer: &str) -> String {
    format!("{}/.well-known/openid-configuration", issuer.trim_end_matches('/'))
}

/// The provider as a JWT issuer: its keys from discovery, the client id
/// the one audience, the four algorithms, 60 s of skew, a day's lifetime.
pub fn id_token_issuer(config: &OidcConfig) -> JwtIssuer {
    JwtIssuer {
        name: KEYS_NAME.to_owned(),
        issuer: config.issuer.clone(),
        keys: KeySource::Discovery(discovery_url(&config.issuer)),
        audiences: vec![config.client_id.clone()],
        algorithms: Algorithm::ALL.to_vec(),
        clock_skew: SKEW_SECS,
        max_lifetime: MAX_LIFETIME_SECS,
        created_at: UnixTime::from_secs(0),
    }
}

/// The reason logged for a refused id token.
fn refused(e: JwtError) -> OidcError {
    OidcError::Token(
        match e {
            JwtError::UnknownIssuer => "issuer",
            JwtError::WrongAudience => "audience",
            JwtError::BadSignature => "signature",
            JwtError::UnknownKey => "no key for its kid and algorithm",
            JwtError::Expired | JwtError::NoExpiry => "expired",
            JwtError::NotYetValid => "issued in the future",
            JwtError::LifetimeTooLong => "a lifetime longer than a day",
            JwtError::AlgorithmRefused | JwtError::AlgorithmNotAllowed => "an algorithm not accepted (RS256, PS256, ES256, EdDSA)",
            JwtError::TooLarge => "larger than 16 KiB",
            JwtError::Malformed => "not a JWS",
            JwtError::BadJti => "jti",
        }
        .to_owned(),
    )
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

/// Checks an id token with the machine grants' JWS code
/// (`strongroom_core::machine`: [`Jwt::verify`] against `keys`,
/// [`Jwt::check_claims`] against `issuer`: issuer, algorithm, `exp`/`nbf`/`iat`
/// with skew, lifetime, audience), then what is OIDC's own: an `iss` that
/// differs from the configured issuer by a trailing `/` only is the same
/// issuer; with several audiences, `azp` must be the client id; `nonce`
/// must be this state's (compared in constant time). Its claims.
pub fn check_id_token(token: &Jwt, keys: &[Jwk], issuer: &JwtIssuer, nonce: &str, now: UnixTime) -> Result<Map<String, Value>, OidcError> {
    token.verify(keys).map_err(refused)?;
    let iss = token.issuer().ok_or_else(|| OidcError::Token("issuer".into()))?;
    if iss.trim_end_matches('/') != issuer.issuer.trim_end_matches('/') {
        return Err(OidcError::Token("issuer".into()));
    }
    let as_sent = JwtIssuer { issuer: iss.to_owned(), ..issuer.clone() };
    token.check_claims(&as_sent, now).map_err(refused)?;
    let client_id = issuer.audiences.first().map(String::as_str).unwrap_or("");
    if let Some(Value::Array(list)) = token.claims.get("aud")
        && list.len() > 1
        && token.claims.get("azp").and_then(Value::as_str) != Some(client_id)
    {
        return Err(OidcError::Token("audience".into()));
    }
    let got = token.claims.get("nonce").and_then(Value::as_str).unwrap_or("");
    if !bool::from(subtle::ConstantTimeEq::ct_eq(nonce.as_bytes(), got.as_bytes())) {
        return Err(OidcError::Token("nonce".into()));
    }
    Ok(token.claims.clone())
}

/// [`check_id_token`] on a compact JWS.
pub fn verify_id_token(jwt: &str, keys: &[Jwk], issuer: &JwtIssuer, nonce: &str, now: UnixTime) -> Result<Map<String, Value>, OidcError> {
    check_id_token(&Jwt::parse(jwt).map_err(refused)?, keys, issuer, nonce, now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::rand::SystemRandom;
    use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
    use serde_json::json;

    const ISS: &str = "https://idp.example.org";
    const NOW: UnixTime = UnixTime::from_secs(1_800_000_000);

    fn config(issuer: &str) -> OidcConfig {
        OidcConfig {
            issuer: issuer.to_owned(),
            client_id: "strongroom".into(),
            client_secret_file: None,
            client_secret_env: None,
            name: "sso".into(),
            name_claim: "preferred_username".into(),
            groups_claim: "groups".into(),
            scopes: "openid".into(),
            timeout: Duration::from_secs(5),
            ca_file: None,
            session_secs: SESSION_SECS,
        }
    }

    /// A P-256 key and its JWKS entry under `kid`.
    fn key_with(kid: &str) -> (EcdsaKeyPair, Value) {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let kp = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
        let pt = kp.public_key().as_ref();
        let jwk = json!({"kty": "EC", "crv": "P-256", "kid": kid, "use": "sig",
                         "x": URL_SAFE_NO_PAD.encode(&pt[1..33]), "y": URL_SAFE_NO_PAD.encode(&pt[33..65])});
        (kp, jwk)
    }

    fn key() -> (EcdsaKeyPair, Vec<Jwk>) {
        let (kp, jwk) = key_with("k1");
        (kp, Jwk::parse_set(json!({"keys": [jwk]}).to_string().as_bytes()).unwrap())
    }

    fn sign_as(kp: &EcdsaKeyPair, kid: &str, claims: &Value) -> String {
        let h = URL_SAFE_NO_PAD.encode(json!({"alg": "ES256", "kid": kid}).to_string());
        let p = URL_SAFE_NO_PAD.encode(claims.to_string());
        let sig = kp.sign(&SystemRandom::new(), format!("{h}.{p}").as_bytes()).unwrap();
        format!("{h}.{p}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()))
    }

    fn sign(kp: &EcdsaKeyPair, claims: &Value) -> String {
        sign_as(kp, "k1", claims)
    }

    fn claims() -> Value {
        json!({"iss": ISS, "aud": "strongroom", "sub": "u1", "exp": 1_800_000_300, "iat": 1_800_000_000, "nonce": "n1"})
    }

    #[test]
    fn an_id_token_is_checked_for_signature_issuer_audience_time_and_nonce() {
        let (kp, jwks) = key();
        let issuer = id_token_issuer(&config(ISS));
        let check = |c: &Value| verify_id_token(&sign(&kp, c), &jwks, &issuer, "n1", NOW);
        assert_eq!(check(&claims()).unwrap()["sub"], "u1");
        let with = |k: &str, v: Value| {
            let mut c = claims();
            c[k] = v;
            c
        };
        assert!(check(&with("iss", json!("https://idp.example.org/"))).is_ok(), "a trailing slash is the same issuer");
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
        assert_eq!(check(&with("exp", Value::Null)), Err(OidcError::Token("expired".into())));
        assert_eq!(check(&with("iat", json!(1_800_000_200))), Err(OidcError::Token("issued in the future".into())));
        assert_eq!(check(&with("exp", json!(1_900_000_000))), Err(OidcError::Token("a lifetime longer than a day".into())));
        assert_eq!(check(&with("nonce", json!("replayed"))), Err(OidcError::Token("nonce".into())));
        assert_eq!(check(&with("nonce", Value::Null)), Err(OidcError::Token("nonce".into())));
        // Another key's signature, a token cut short, an algorithm refused.
        let (other, _) = key();
        assert_eq!(verify_id_token(&sign(&other, &claims()), &jwks, &issuer, "n1", NOW), Err(OidcError::Token("signature".into())));
        assert!(verify_id_token("a.b", &jwks, &issuer, "n1", NOW).is_err());
        let none = format!("{}.{}.", URL_SAFE_NO_PAD.encode(r#"{"alg":"none"}"#), URL_SAFE_NO_PAD.encode(claims().to_string()));
        assert!(matches!(verify_id_token(&none, &jwks, &issuer, "n1", NOW), Err(OidcError::Token(why)) if why.contains("algorithm")));
        let hs = format!("{}.{}.c2ln", URL_SAFE_NO_PAD.encode(r#"{"alg":"HS256"}"#), URL_SAFE_NO_PAD.encode(claims().to_string()));
        assert!(verify_id_token(&hs, &jwks, &issuer, "n1", NOW).is_err());
    }

    /// A provider on 127.0.0.1 (discovery and JWKS over plain HTTP, as
    /// `oidc.issuer` allows on a loopback host) rotates its key: the next
    /// id token's unknown kid fetches the keys again, no restart.
    #[tokio::test]
    async fn a_key_rotated_at_the_provider_is_fetched_again_for_its_unknown_kid() {
        use std::sync::{Arc, Mutex};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let issuer = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let (k1, jwk1) = key_with("k1");
        let jwks = Arc::new(Mutex::new(json!({"keys": [jwk1]})));
        let fetches = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let discovery = json!({"issuer": issuer, "authorization_endpoint": format!("{issuer}/auth"),
                               "token_endpoint": format!("{issuer}/token"), "jwks_uri": format!("{issuer}/jwks")});
        let app = axum::Router::new()
            .route("/.well-known/openid-configuration", axum::routing::get(move || async move { axum::Json(discovery) }))
            .route(
                "/jwks",
                axum::routing::get({
                    let (jwks, fetches) = (jwks.clone(), fetches.clone());
                    move || async move {
                        fetches.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        axum::Json(jwks.lock().unwrap().clone())
                    }
                }),
            );
        tokio::spawn(async move { axum::serve(listener, app).await });
        let oidc = Oidc::new(config(&issuer), &JwtSettings::default()).unwrap();
        let c = |iat: i64| json!({"iss": issuer, "aud": "strongroom", "sub": "u1", "exp": iat + 300, "iat": iat, "nonce": "n1"});
        let t0 = NOW;
        assert_eq!(oidc.id_token_claims(&sign_as(&k1, "k1", &c(t0.secs())), "n1", t0).await.unwrap()["sub"], "u1");
        assert_eq!(oidc.id_token_claims(&sign_as(&k1, "k1", &c(t0.secs())), "n1", t0.plus_secs(1)).await.unwrap()["sub"], "u1");
        assert_eq!(fetches.load(std::sync::atomic::Ordering::SeqCst), 1, "the keys are cached");
        // The provider rotates: k2 published, k1 withdrawn.
        let (k2, jwk2) = key_with("k2");
        *jwks.lock().unwrap() = json!({"keys": [jwk2]});
        let t1 = t0.plus_secs(30);
        assert_eq!(oidc.id_token_claims(&sign_as(&k2, "k2", &c(t1.secs())), "n1", t1).await.unwrap()["sub"], "u1");
        assert_eq!(fetches.load(std::sync::atomic::Ordering::SeqCst), 2, "one fetch for the unknown kid");
        // A made-up kid right after does not fetch again (jwt.refetch_min_secs).
        let made_up = oidc.id_token_claims(&sign_as(&k2, "made-up", &c(t1.secs())), "n1", t1.plus_secs(1)).await;
        assert!(matches!(made_up, Err(OidcError::Token(_))), "{made_up:?}");
        assert_eq!(fetches.load(std::sync::atomic::Ordering::SeqCst), 2);
        // Another kid signed by a key the provider never published: refused.
        let (k3, _) = key_with("k2");
        let forged = oidc.id_token_claims(&sign_as(&k3, "k2", &c(t1.secs())), "n1", t1.plus_secs(2)).await;
        assert_eq!(forged, Err(OidcError::Token("signature".into())));
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
