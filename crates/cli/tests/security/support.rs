//! Shared fixtures: a server with a user and integrations, the token calls
//! (the test kit's, answering the raw status and JSON these tests report
//! on), and the report line.

use serde_json::{Value, json};

pub use crate::process::Server;
use strongroom_testkit::Api;
pub use strongroom_testkit::api::post_json;
pub use strongroom_testkit::{postgres_url, skip};

pub const PASSWORD: &str = "a long passphrase";
pub const SCOPE: &str = "restricted:manage";
pub const DEVICE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

/// Prints the line for `id` and returns `pass`, so callers can assert after.
pub fn report(id: &str, name: &str, figure: &str, pass: bool) -> bool {
    eprintln!("SECURITY {id} {name}: {figure} — {}", if pass { "pass" } else { "FAIL" });
    pass
}

/// `psql` on the test database; `None` when PostgreSQL or psql is missing.
pub fn psql(sql: &str) -> Option<String> {
    let out = std::process::Command::new("psql").args([&postgres_url(), "-XAtq", "-v", "ON_ERROR_STOP=1", "-c", sql]).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A new schema on the test PostgreSQL server and a database URL that uses
/// it, or `None` (after a loud skip) when there is none.
pub fn postgres_schema(tag: &str) -> Option<(String, String)> {
    let base = strongroom_testkit::pg_url_or_skip(&format!("security {tag}"))?;
    let schema = format!("sec_{tag}_{}_{}", std::process::id(), rand_hex(4));
    if psql(&format!("CREATE SCHEMA {schema}")).is_none() {
        skip(&format!("psql cannot reach {base} (apt-get install postgresql-client)"));
        return None;
    }
    let sep = if base.contains('?') { '&' } else { '?' };
    Some((schema.clone(), format!("{base}{sep}options=-csearch_path%3D{schema}")))
}

pub fn rand_hex(n: usize) -> String {
    let mut b = vec![0u8; n];
    getrandom(&mut b);
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Random bytes from the OS (the server's own source, through `core`).
pub fn getrandom(buf: &mut [u8]) {
    use strongroom_core::random::Random as _;
    strongroom_app::OsRandom.fill(buf);
}

/// A running server with its base URL and an HTTP client.
pub struct Fx {
    pub server: Server,
    pub base: String,
    pub http: reqwest::Client,
}

impl Fx {
    /// `serve --insecure-http` with `args`, a user `alice` and an
    /// integration `app` (device flow and password grant, every user).
    pub fn start(args: &[&str], env: &[(&str, &str)]) -> Fx {
        let mut all = vec!["--insecure-http"];
        all.extend_from_slice(args);
        let server = Server::start(&all, env);
        let fx = Fx::around(server);
        fx.user("alice", PASSWORD);
        fx.integration("app", &[]);
        fx
    }

    pub fn around(server: Server) -> Fx {
        Fx { base: server.http_base(), server, http: strongroom_testkit::api::client() }
    }

    /// After a restart the port changes.
    pub fn rebase(&mut self) {
        self.base = self.server.http_base();
    }

    /// The test kit's client of this server.
    pub fn api(&self) -> Api {
        Api::with(self.http.clone(), self.base.clone())
    }

    pub fn user(&self, name: &str, password: &str) {
        self.server.admin(&["users", "create", name], &format!("{password}\n"));
    }

    /// An integration with `SCOPE` for every user, password grant on, and
    /// `extra` options.
    pub fn integration(&self, client: &str, extra: &[&str]) {
        let mut args =
            vec!["integrations", "create", client, "--scope", "restricted:manage,delete", "--allow-all-users", "--password-grant", "true"];
        args.extend_from_slice(extra);
        self.server.admin(&args, "");
    }

    pub async fn post_json(&self, path: &str, body: &Value) -> (u16, Value) {
        post_json(&self.http, &format!("{}{path}", self.base), body).await
    }

    pub async fn device(&self, client: &str) -> Value {
        let (s, v) = self.post_json("/vedauth/authorize/device", &json!({"client_id": client, "scope": SCOPE})).await;
        assert_eq!(s, 200, "device start: {v}");
        v
    }

    pub async fn poll(&self, client: &str, code: &str) -> (u16, Value) {
        self.post_json("/vedauth/authorize/token", &json!({"client_id": client, "grant_type": DEVICE_GRANT, "device_code": code})).await
    }

    pub async fn password(&self, client: &str, user: &str, password: &str) -> (u16, Value) {
        self.post_json("/vedauth/authorize/oauth", &json!({"client_id": client, "username": user, "password": password, "scope": SCOPE}))
            .await
    }

    /// A fresh grant for alice on `client` through the password grant.
    pub async fn grant(&self, client: &str) -> Value {
        let (s, v) = self.password(client, "alice", PASSWORD).await;
        assert_eq!(s, 200, "password grant: {v}");
        v
    }

    pub async fn refresh(&self, client: &str, rt: &str) -> (u16, Value) {
        self.post_json("/vedauth/authorize/token", &json!({"client_id": client, "refresh_token": rt})).await
    }

    pub async fn verify(&self, at: &str) -> u16 {
        self.api().verify(at).await
    }

    /// Approves `d` (a device start's answer) as `user` through the page.
    pub async fn approve(&self, d: &Value, user: &str, password: &str, yes: bool) -> String {
        strongroom_testkit::page::approve(&self.http, d["verification_uri_complete"].as_str().unwrap(), user, password, yes).await
    }

    /// A `/vedsdk/SecretStore` call.
    pub async fn sdk(&self, at: &str, op: &str, body: &Value) -> (u16, Value) {
        let r = self.http.post(format!("{}/vedsdk/SecretStore/{op}", self.base)).bearer_auth(at).json(body).send().await.unwrap();
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    /// A folder alice may read and write.
    pub fn folder(&self, path: &str) {
        self.server.admin(&["folders", "create", path], "");
        self.server.admin(&["rights", "grant", path, "alice", "--rights", "read,write"], "");
    }

    pub fn events(&self, kind: &str) -> usize {
        let out = self.server.admin(&["events", "list", "--kind", kind, "--limit", "100000", "--json"], "");
        let list = out.lines().find(|l| l.starts_with('[')).unwrap_or_else(|| panic!("events list --json: {out}"));
        serde_json::from_str::<serde_json::Value>(list).unwrap().as_array().unwrap().len()
    }

    pub fn events_verify(&self) -> bool {
        self.server.admin(&["events", "verify"], "").contains("event log intact")
    }
}

/// A value's text at position `i` of `n` sorted samples.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}
