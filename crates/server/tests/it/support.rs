//! The in-process server: a server with a manual clock, an admin handle,
//! and helpers that speak the wire protocol as clients do (raw JSON on
//! purpose: these tests check the wire's exact shapes). The approval page,
//! the skip rule and the PostgreSQL probe are the test kit's
//! (`strongroom_testkit`).

use reqwest::StatusCode;
use serde_json::{Value, json};
use std::sync::Arc;

use strongroom_app::OsRandom;
use strongroom_app::admin::{Admin, IntegrationSpec};
use strongroom_core::grant::device::DeviceState;
use strongroom_core::identity::User;
use strongroom_core::integration::Integration;
use strongroom_core::secret::Secret;
use strongroom_core::time::{Clock as _, ManualClock};
use strongroom_core::token::{TokenKind, normalize_user_code};
use strongroom_http::state::HttpState;
use strongroom_server::config::RawConfig;
use strongroom_server::serve::{self, Running};
use strongroom_store::Store;
use strongroom_testkit::page::Page;

pub const PASSWORD: &str = "correct horse battery";
pub const DEVICE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

pub struct TestServer {
    pub url: String,
    pub clock: ManualClock,
    pub state: HttpState,
    pub store: Arc<dyn Store>,
    pub admin: Admin,
    pub http: reqwest::Client,
    running: Option<Running>,
    pub dir: tempfile::TempDir,
}

pub use strongroom_testkit::page::hidden_field;
pub use strongroom_testkit::pg_url_or_skip;

impl TestServer {
    pub async fn start() -> TestServer {
        Self::start_with(|_| {}).await
    }

    /// A server on a fresh schema of the test PostgreSQL server, or `None`
    /// (after a loud message) when none is reachable and skipping is allowed.
    pub async fn start_on_postgres() -> Option<TestServer> {
        let url = pg_url_or_skip("the in-process server on PostgreSQL")?;
        let store = strongroom_store::postgres::testing::fresh_schema(&url).await.unwrap();
        Some(Self::start_with_store(store, |_| {}).await)
    }

    pub async fn start_with(tweak: impl FnOnce(&mut RawConfig)) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        let mut raw = RawConfig { data_dir: Some(dir.path().to_owned()), ..Default::default() };
        tweak(&mut raw);
        let config = raw.clone().validate().unwrap();
        let store = strongroom_store::open(&config.database_url).await.unwrap();
        let mut s = Self::start_with_store(store, |r| *r = raw).await;
        s.dir = dir;
        s
    }

    /// A server on a store the test made.
    pub async fn start_on_store(store: Arc<dyn Store>) -> TestServer {
        Self::start_with_store(store, |_| {}).await
    }

    async fn start_with_store(store: Arc<dyn Store>, tweak: impl FnOnce(&mut RawConfig)) -> TestServer {
        // Server logs for failing tests: RUST_LOG=info cargo test ...
        let _ = tracing_subscriber::fmt().with_env_filter(tracing_subscriber::EnvFilter::from_default_env()).with_test_writer().try_init();
        let dir = tempfile::tempdir().unwrap();
        // Bound here and handed to the server as it is: the port stays ours.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let url = format!("http://127.0.0.1:{}", addr.port());
        let mut raw = RawConfig {
            data_dir: Some(dir.path().to_owned()),
            insecure_http: Some(true),
            public_url: Some(url.clone()),
            ..Default::default()
        };
        tweak(&mut raw);
        raw.insecure_http = Some(true);
        raw.public_url = Some(url.clone());
        let config = raw.validate().unwrap();
        // Start the manual clock at the real time, so timestamps look sane.
        let clock = ManualClock::new(strongroom_app::SystemClock.now());
        let keys = strongroom_keyring::keys::Keys::from_master(&[42; 32]);
        let state = serve::state(store.clone(), Arc::new(clock.clone()), Arc::new(OsRandom), keys, &config);
        let running = serve::spawn(listener, strongroom_http::app(state.clone(), serve::limits(&config)), None).unwrap();
        let admin = Admin {
            store: store.clone(),
            clock: Arc::new(clock.clone()),
            rng: Arc::new(OsRandom),
            keyring: state.keyring.clone(),
            actor: Default::default(),
            on_behalf_of: None,
        };
        let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
        TestServer { url, clock, state, store, admin, http, running: Some(running), dir }
    }

    pub async fn stop(mut self) {
        if let Some(r) = self.running.take() {
            r.shutdown(std::time::Duration::from_secs(5)).await.unwrap();
        }
    }

    pub async fn user(&self, name: &str) -> User {
        self.admin.create_user(name, &Secret::new(PASSWORD), false).await.unwrap()
    }

    /// An integration open to every user, with the given scope.
    pub async fn integration(&self, client_id: &str, scope: &str, tweak: impl FnOnce(&mut IntegrationSpec)) -> Integration {
        let mut spec = IntegrationSpec {
            name: Some(format!("{client_id} app")),
            scope: Some(scope.into()),
            allow_all_users: true,
            ..Default::default()
        };
        tweak(&mut spec);
        self.admin.create_integration(client_id, spec).await.unwrap()
    }

    pub fn at(&self, path: &str) -> String {
        format!("{}{path}", self.url)
    }

    pub async fn post_json(&self, path: &str, body: Value) -> (StatusCode, Value) {
        let r = self.http.post(self.at(path)).json(&body).send().await.unwrap();
        let status = r.status();
        let ct = r.headers().get("content-type").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
        let text = r.text().await.unwrap();
        let v = serde_json::from_str(&text).unwrap_or_else(|_| panic!("{path} answered {status} with non-JSON {ct:?}: {text}"));
        assert!(ct.starts_with("application/json"), "{path}: content-type {ct}");
        (status, v)
    }

    pub async fn post_form(&self, path: &str, form: &[(&str, &str)]) -> (StatusCode, Value) {
        let r = self.http.post(self.at(path)).form(form).send().await.unwrap();
        let status = r.status();
        (status, r.json().await.unwrap())
    }

    pub async fn get_bearer(&self, path: &str, token: &str) -> (StatusCode, Value) {
        let r = self.http.get(self.at(path)).bearer_auth(token).send().await.unwrap();
        let status = r.status();
        (status, r.json().await.unwrap())
    }

    pub async fn start_device(&self, client_id: &str, scope: &str) -> Value {
        let (s, v) = self.post_json("/vedauth/authorize/device", json!({"client_id": client_id, "scope": scope})).await;
        assert_eq!(s, StatusCode::OK, "{v}");
        v
    }

    pub async fn poll(&self, client_id: &str, device_code: &str) -> (StatusCode, Value) {
        self.post_json("/vedauth/authorize/token", json!({"client_id": client_id, "grant_type": DEVICE_GRANT, "device_code": device_code}))
            .await
    }

    /// Refresh in the product's shape: `{client_id, refresh_token}`.
    pub async fn refresh(&self, client_id: &str, refresh_token: &str) -> (StatusCode, Value) {
        self.post_json("/vedauth/authorize/token", json!({"client_id": client_id, "refresh_token": refresh_token})).await
    }

    /// Approves (or denies) a device code directly in the store, as if the
    /// page had been used: for tests whose subject is not the page.
    pub async fn approve_in_store(&self, user: &User, user_code: &str) {
        let code = normalize_user_code(user_code).unwrap();
        let hash = self.state.keys.token.hash(TokenKind::UserCode, &code);
        let d = self.store.device_by_user_code(hash).await.unwrap().unwrap();
        let e = strongroom_core::event::Event::new(strongroom_core::event::EventKind::DeviceApproved, self.clock.now());
        assert!(self.store.decide_device(d.code_hash, d.version, DeviceState::Approved { user_id: user.id.clone() }, e).await.unwrap());
    }

    /// A device flow run to the end: returns the token response.
    pub async fn tokens_for(&self, user: &User, client_id: &str, scope: &str) -> Value {
        let d = self.start_device(client_id, scope).await;
        self.approve_in_store(user, d["user_code"].as_str().unwrap()).await;
        let (s, t) = self.poll(client_id, d["device_code"].as_str().unwrap()).await;
        assert_eq!(s, StatusCode::OK, "{t}");
        t
    }

    pub async fn event_kinds(&self) -> Vec<String> {
        let f = strongroom_store::EventFilter { limit: 10_000, ..Default::default() };
        self.store.events(f).await.unwrap().into_iter().map(|e| e.event.kind.as_str().to_owned()).collect()
    }
}

/// A browser without JavaScript, as far as the approval page cares: the
/// test kit's page session, sending `Origin` as a browser does.
pub struct PageClient<'a> {
    _server: &'a TestServer,
    page: Page,
}

impl<'a> PageClient<'a> {
    /// Opens `verification_uri_complete` (or any page URL).
    pub async fn open(server: &'a TestServer, url: &str) -> PageClient<'a> {
        let page = Page::open(&server.http, url).await.with_origin(&server.url);
        assert_eq!(page.status, 200);
        assert!(page.set_cookie.contains("HttpOnly") && page.set_cookie.contains("SameSite=Strict"), "{}", page.set_cookie);
        PageClient { _server: server, page }
    }

    pub async fn post(&self, path: &str, form: &[(&str, &str)]) -> (StatusCode, String) {
        let (status, html) = self.page.post(path, form, &[]).await;
        (StatusCode::from_u16(status).unwrap(), html)
    }

    /// Signs in and answers: returns the final page.
    pub async fn sign_in_and_decide(&self, user_code: &str, user: &str, password: &str, approve: bool) -> (StatusCode, String) {
        let (status, html) = self.page.sign_in_and_decide(user_code, user, password, approve).await;
        (StatusCode::from_u16(status).unwrap(), html)
    }
}

impl TestServer {
    /// A user with `rights` on `folder` (created if needed).
    pub async fn vault_user(&self, name: &str, folder: &str, rights: &str) -> User {
        let u = self.user(name).await;
        let _ = self.admin.create_folder(folder).await;
        let r = strongroom_core::vault::Rights::parse(rights).unwrap();
        self.admin.set_rights(folder, name, r).await.unwrap();
        u
    }

    /// `POST /vedsdk/SecretStore/<op>` (or another path) with a bearer token.
    pub async fn sdk(&self, op: &str, token: &str, body: Value) -> (StatusCode, Value) {
        let r = self.http.post(self.at(&format!("/vedsdk/SecretStore/{op}"))).bearer_auth(token).json(&body).send().await.unwrap();
        let status = r.status();
        let text = r.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or_else(|_| panic!("{op}: {status} {text}")))
    }

    /// The SQLite database file, for tests that look underneath.
    pub fn db_path(&self) -> std::path::PathBuf {
        self.dir.path().join("strongroom.db")
    }
}

/// A JWT issuer of the test's: an ES256 key whose JWKS is a file, saved as
/// issuer `es` (`https://issuer.test`, audience `strongroom`), and a signer.
pub struct Es256Issuer {
    key: ring::signature::EcdsaKeyPair,
    rng: ring::rand::SystemRandom,
}

impl Es256Issuer {
    pub const ISSUER: &'static str = "https://issuer.test";

    /// Saves the issuer on `s`, `spec` adjusting its settings first.
    pub async fn save(s: &TestServer, spec: impl FnOnce(&mut strongroom_app::admin::machines::IssuerSpec)) -> Es256Issuer {
        use base64::Engine as _;
        use base64::engine::general_purpose::URL_SAFE_NO_PAD;
        use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
        let point = key.public_key().as_ref();
        let jwks = json!({"keys": [{"kty": "EC", "crv": "P-256", "kid": "k1", "x": URL_SAFE_NO_PAD.encode(&point[1..33]), "y": URL_SAFE_NO_PAD.encode(&point[33..65])}]});
        let file = s.dir.path().join("issuer-jwks.json");
        std::fs::write(&file, jwks.to_string()).unwrap();
        let mut issuer = strongroom_app::admin::machines::IssuerSpec {
            name: "es".into(),
            issuer: Self::ISSUER.into(),
            jwks_file: Some(file.display().to_string()),
            audiences: vec!["strongroom".into()],
            algorithms: Some("ES256".into()),
            ..Default::default()
        };
        spec(&mut issuer);
        s.admin.save_jwt_issuer(issuer).await.unwrap();
        Es256Issuer { key, rng }
    }

    /// The signing input of a JWT with `claims` and the raw (r || s) signature of it.
    pub fn sign_parts(&self, claims: &Value) -> (String, Vec<u8>) {
        use base64::Engine as _;
        use base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(json!({"alg": "ES256", "kid": "k1"}).to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let sig = self.key.sign(&self.rng, input.as_bytes()).unwrap().as_ref().to_vec();
        (input, sig)
    }

    /// A JWT with `claims`, signed.
    pub fn sign(&self, claims: &Value) -> String {
        use base64::Engine as _;
        let (input, sig) = self.sign_parts(claims);
        format!("{input}.{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sig))
    }
}
