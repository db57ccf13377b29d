//! The client verbs against the real server over HTTPS with its
//! self-signed certificate: device login approved through the page, vault
//! round trip, automatic refresh, two processes sharing one cache while
//! tokens rotate, logout, and every kind of failure with its exit code.
//!
//! These run the binary, so lifetimes pass in real seconds; the polling and
//! refresh rules themselves are unit-tested with a manual clock in
//! `strongroom-client`.
#![allow(clippy::disallowed_methods)]

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::process::{Api, BIN, ClosedPort, Server, approve, run};

const PASSWORD: &str = "a long passphrase";
const TEAM: &str = "\\VED\\Policy\\Team A";

struct Setup {
    server: Server,
    base: String,
    ca: String,
    config: tempfile::TempDir,
    http: reqwest::Client,
    /// The test kit's client, trusting the server's certificate.
    api: Api,
}

impl Setup {
    fn new(access_validity: &str) -> Setup {
        let server = Server::start(&[], &[]);
        server.admin(&["users", "create", "alice"], &format!("{PASSWORD}\n"));
        server.admin(
            &[
                "integrations",
                "create",
                "cli-app",
                "--scope",
                "restricted:manage,delete",
                "--allow-all-users",
                "--poll-interval",
                "1",
                "--access-validity",
                access_validity,
            ],
            "",
        );
        server.admin(&["folders", "create", TEAM], "");
        server.admin(&["rights", "grant", TEAM, "alice", "--rights", "read,write"], "");
        let ca_path = server.data_dir.path().join("tls").join("cert.pem");
        let pem = std::fs::read(&ca_path).unwrap();
        let http = reqwest::Client::builder()
            .tls_built_in_root_certs(false)
            .add_root_certificate(reqwest::Certificate::from_pem(&pem).unwrap())
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let base = format!("https://localhost:{}", server.port);
        let api = Api::with(http.clone(), base.clone());
        Setup { ca: ca_path.display().to_string(), server, base, config: tempfile::tempdir().unwrap(), http, api }
    }

    fn env(&self) -> Vec<(&str, &str)> {
        vec![("STRONGROOM_CONFIG_DIR", self.config.path().to_str().unwrap()), ("STRONGROOM_LOG", "warn")]
    }

    fn sr(&self, args: &[&str]) -> crate::process::Run {
        run(args, &self.env())
    }

    /// `strongroom login`, approved through the page by "a person".
    async fn login(&self) -> crate::process::Run {
        self.login_in(&std::env::current_dir().unwrap(), &self.ca).await
    }

    /// [`Setup::login`] run in directory `cwd`, with `--ca ca` as given.
    async fn login_in(&self, cwd: &std::path::Path, ca: &str) -> crate::process::Run {
        self.login_with(cwd, ca, "alice", "cli-app", "restricted:manage,delete").await
    }

    /// `strongroom login` to `client` for `scope`, approved by `user`.
    async fn login_with(&self, cwd: &std::path::Path, ca: &str, user: &str, client: &str, scope: &str) -> crate::process::Run {
        let mut child = Command::new(BIN)
            .args(["login", "--server", &self.base, "--client-id", client, "--ca", ca, "--scope", scope, "--no-browser"])
            .current_dir(cwd)
            .envs(self.env())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut first = String::new();
        stderr.read_line(&mut first).unwrap();
        let link = first.trim().strip_prefix("To sign in, open ").unwrap_or_else(|| panic!("unexpected prompt {first:?}")).to_owned();
        let mut second = String::new();
        stderr.read_line(&mut second).unwrap();
        assert!(second.contains("the code"), "{second}");
        let page = approve(&self.http, &link, user, PASSWORD, true).await;
        assert!(page.contains("Access approved"), "{page}");
        let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap();
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
        crate::process::Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: format!("{first}{second}{rest}"),
        }
    }

    fn cache_file(&self) -> std::path::PathBuf {
        let dir = self.config.path().join("tokens");
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).find(|p| p.extension().is_some_and(|e| e == "json")).unwrap()
    }

    fn cached(&self) -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(self.cache_file()).unwrap()).unwrap()
    }
}

fn ok(r: &crate::process::Run) -> &str {
    assert_eq!(r.code, 0, "stdout: {}\nstderr: {}", r.stdout, r.stderr);
    r.stdout.trim()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_vault_round_trip_status_and_logout() {
    let s = Setup::new("3600");
    let r = s.login().await;
    assert!(ok(&r).starts_with("Logged in to"), "{}", r.stdout);
    assert!(r.stderr.contains("check that the page shows the code"));

    // The cache is private; status shows no token.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(std::fs::metadata(s.cache_file()).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let access = s.cached()["access_token"].as_str().unwrap().to_owned();
    let st = s.sr(&["status", "--json"]);
    let status: serde_json::Value = serde_json::from_str(ok(&st)).unwrap();
    assert_eq!(status["scope"], "restricted:delete,manage");
    assert!(!st.stdout.contains(&access) && !st.stderr.contains(&access));
    let human = s.sr(&["status"]);
    assert!(ok(&human).contains("Identity: local:{"));

    // A vault round trip through the CLI.
    let id = ok(&s.sr(&["vault", "add", "--owner", TEAM, "--data", "top secret"])).trim_start_matches("VaultID ").to_owned();
    ok(&s.sr(&["vault", "associate", &id, "Purpose", "--string", "Access to endpoint"]));
    ok(&s.sr(&["vault", "associate", &id, "Key Size", "--int", "2048"]));
    ok(&s.sr(&["vault", "associate", &id, "Created", "--date", "2024-01-02T03:04:05Z"]));
    assert_eq!(ok(&s.sr(&["vault", "lookup", "Purpose", "--string", "Access to endpoint"])), id);
    assert_eq!(ok(&s.sr(&["vault", "get", &id, "Created"])), "2024-01-02T03:04:05.0000000Z");
    let all: serde_json::Value = serde_json::from_str(ok(&s.sr(&["vault", "get", &id, "--json"]))).unwrap();
    assert_eq!(all["TypedNameValues"].as_array().unwrap().len(), 3);
    ok(&s.sr(&["vault", "dissociate", &id, "Purpose"]));
    assert_eq!(ok(&s.sr(&["vault", "lookup", "Purpose"])), "");
    assert_eq!(ok(&s.sr(&["vault", "list"])), id);
    // A refusal carries the vault's Result code and exit code 7.
    let again = s.sr(&["vault", "associate", &id, "Key Size", "--int", "2048"]);
    assert_eq!(again.code, 7, "{again:?}");
    assert!(again.stderr.contains("Result 27"), "{}", again.stderr);
    let denied = s.sr(&["vault", "retrieve", &id]);
    assert_eq!(denied.code, 7);
    assert!(denied.stderr.contains("Result 10"), "{}", denied.stderr);

    // Logout revokes the grant: the old token is dead, and commands say "log in".
    assert!(ok(&s.sr(&["logout"])).contains("revoked"));
    assert_eq!(s.api.verify(&access).await, 401);
    let after = s.sr(&["vault", "list"]);
    assert_eq!(after.code, 3, "{after:?}");
    assert!(after.stderr.contains("strongroom login"));
    drop(s.server);
}

/// `strongroom ARGS` with `input` on its standard input.
fn sr_with_input(s: &Setup, args: &[&str], input: &str) -> crate::process::Run {
    use std::io::Write as _;
    let mut child =
        Command::new(BIN).args(args).envs(s.env()).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    crate::process::Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `credential set` by a writer, `credential get` and `list` by a user
/// with Read only (who may not write), the password fed on standard input.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credential_verbs_with_read_only() {
    let s = Setup::new("3600");
    s.server.admin(&["users", "create", "bob"], &format!("{PASSWORD}\n"));
    s.server.admin(&["integrations", "create", "cred-app", "--scope", "security:manage", "--allow-all-users", "--poll-interval", "1"], "");
    s.server.admin(&["rights", "grant", TEAM, "alice", "--rights", "view,read,write,create"], "");
    s.server.admin(&["rights", "grant", TEAM, "bob", "--rights", "read"], "");
    let dn = format!("{TEAM}\\db");
    let cwd = std::env::current_dir().unwrap();

    ok(&s.login_with(&cwd, &s.ca, "alice", "cred-app", "security:manage").await);
    let set = sr_with_input(&s, &["credential", "set", &dn, "--value", "Username=svc", "--stdin", "Password"], "s3cret pass\n");
    assert_eq!(ok(&set), format!("created {dn}"));
    let set = sr_with_input(&s, &["credential", "set", &dn, "--value", "Username=svc", "--stdin", "Password"], "rotated pass\n");
    assert_eq!(ok(&set), format!("updated {dn}"));
    assert!(!set.stderr.contains("rotated pass"));
    ok(&s.sr(&["logout"]));

    ok(&s.login_with(&cwd, &s.ca, "bob", "cred-app", "security").await);
    assert_eq!(ok(&s.sr(&["credential", "get", &dn, "--value", "password"])), "rotated pass");
    let all: serde_json::Value = serde_json::from_str(ok(&s.sr(&["credential", "get", &dn, "--json"]))).unwrap();
    assert_eq!(all["Classname"], "Username Password Credential");
    assert_eq!(all["Values"][0], serde_json::json!({"Name": "Username", "Type": "string", "Value": "svc"}));
    assert_eq!(ok(&s.sr(&["credential", "list", TEAM])), format!("{dn}\tUsername Password Credential"));
    // Read only: no writing (the scope first, then the rights), and a missing one is Result 400.
    let denied = sr_with_input(&s, &["credential", "set", &dn, "--stdin", "Password"], "mine\n");
    assert_eq!(denied.code, 10, "{denied:?}");
    let missing = s.sr(&["credential", "get", &format!("{TEAM}\\nothing")]);
    assert_eq!(missing.code, 7, "{missing:?}");
    assert!(missing.stderr.contains("400"), "{}", missing.stderr);
    ok(&s.sr(&["logout"]));
    ok(&s.login_with(&cwd, &s.ca, "bob", "cred-app", "security:manage").await);
    let denied = sr_with_input(&s, &["credential", "set", &dn, "--stdin", "Password"], "mine\n");
    assert_eq!(denied.code, 7, "{denied:?}");
    assert!(denied.stderr.contains("Result 7"), "{}", denied.stderr);
    drop(s.server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_refresh_by_themselves_even_with_two_processes_sharing_the_cache() {
    // Access tokens valid for 1 s (the shortest allowed): a round waits
    // 1.1 s, and every command then finds its token expired.
    let s = Setup::new("1");
    ok(&s.login().await);
    let id = ok(&s.sr(&["vault", "add", "--owner", TEAM, "--data", "x"])).trim_start_matches("VaultID ").to_owned();
    let first = s.cached()["refresh_token"].as_str().unwrap().to_owned();
    for round in 0..3 {
        std::thread::sleep(Duration::from_millis(1100));
        // Two processes at once, both finding the access token expired.
        let a = {
            let env: Vec<(String, String)> = s.env().iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            let id = id.clone();
            std::thread::spawn(move || {
                let e: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                run(&["vault", "get", &id], &e)
            })
        };
        let b = s.sr(&["vault", "list"]);
        let a = a.join().unwrap();
        assert_eq!(a.code, 0, "round {round}: {a:?}");
        assert_eq!(ok(&b), id, "round {round}");
    }
    let last = s.cached()["refresh_token"].as_str().unwrap().to_owned();
    assert_ne!(first, last, "the refresh token rotated");
    // The grant survived the races (no reuse detected).
    let access = s.cached()["access_token"].as_str().unwrap().to_owned();
    assert_eq!(s.api.verify(&access).await, 200);
    let events = s.server.admin(&["events", "list", "--kind", "token.refresh_reuse"], "");
    assert_eq!(events.trim(), "no events");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_have_clear_messages_and_distinct_exit_codes() {
    let s = Setup::new("3600");
    // No profile at all.
    let r = s.sr(&["vault", "list"]);
    assert_eq!(r.code, 3, "{r:?}");
    assert!(r.stderr.contains("not logged in"), "{}", r.stderr);
    // A login naming the server and not the integration: told what is missing, by its flag.
    let r = run(&["login", "--server", &s.base, "--ca", &s.ca, "--no-browser"], &s.env());
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("no client id for") && r.stderr.contains("--client-id") && !r.stderr.contains("no server"), "{}", r.stderr);
    // Unreachable server.
    let closed = ClosedPort::new();
    let dead = format!("https://127.0.0.1:{}", closed.port);
    let r = s.sr(&["vault", "list", "--server", &dead, "--client-id", "x"]);
    assert_eq!(r.code, 3, "no tokens for that server: {r:?}");
    let r = run(&["login", "--server", &dead, "--client-id", "x", "--no-browser"], &s.env());
    assert_eq!(r.code, 4, "{r:?}");
    // TLS mismatch: the self-signed certificate without --ca, and a wrong pin.
    let r = run(&["login", "--server", &s.base, "--client-id", "cli-app", "--no-browser"], &s.env());
    assert_eq!(r.code, 5, "{r:?}");
    assert!(r.stderr.contains("TLS"), "{}", r.stderr);
    let r = run(&["login", "--server", &s.base, "--client-id", "cli-app", "--no-browser", "--pin", &"00".repeat(32)], &s.env());
    assert_eq!(r.code, 5, "{r:?}");
    // The right pin works as well as the CA file.
    let pem = std::fs::read_to_string(&s.ca).unwrap();
    let der = pem_to_der(&pem);
    let pin: String = sha256_hex(&der);
    let r = run(&["login", "--server", &s.base, "--client-id", "nope", "--no-browser", "--pin", &pin], &s.env());
    assert_eq!(r.code, 10, "TLS passed, then the unknown client id was refused: {r:?}");

    // A 5xx and a non-JSON answer from something that is not Strongroom.
    for (reply, code) in [
        ("HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\n\r\n", 6),
        ("HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: 5\r\n\r\nhello", 6),
    ] {
        let fake = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = fake.local_addr().unwrap().port();
        std::thread::spawn(move || {
            if let Ok((mut sock, _)) = fake.accept() {
                let mut buf = [0u8; 4096];
                let _ = std::io::Read::read(&mut sock, &mut buf);
                let _ = std::io::Write::write_all(&mut sock, reply.as_bytes());
            }
        });
        let r = run(&["login", "--server", &format!("http://127.0.0.1:{port}"), "--client-id", "x", "--no-browser"], &s.env());
        assert_eq!(r.code, code, "{reply}: {r:?}");
    }

    // The cache: corrupt, too open, from a newer version.
    ok(&s.login().await);
    let cache = s.cache_file();
    let good = std::fs::read(&cache).unwrap();
    std::fs::write(&cache, b"{garbage").unwrap();
    let r = s.sr(&["vault", "list"]);
    assert_eq!(r.code, 8, "{r:?}");
    assert!(r.stderr.contains("corrupt"));
    let mut v: serde_json::Value = serde_json::from_slice(&good).unwrap();
    v["version"] = serde_json::json!(99);
    std::fs::write(&cache, serde_json::to_vec(&v).unwrap()).unwrap();
    let r = s.sr(&["status"]);
    assert_eq!(r.code, 8, "{r:?}");
    assert!(r.stderr.contains("newer"));
    std::fs::write(&cache, &good).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o644)).unwrap();
        let r = s.sr(&["vault", "list"]);
        assert_eq!(r.code, 8, "{r:?}");
        assert!(r.stderr.contains("chmod 600"), "{}", r.stderr);
        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    ok(&s.sr(&["vault", "list"]));
    // No output of any command held a token.
    let token = s.cached()["access_token"].as_str().unwrap().to_owned();
    for args in [&["status"][..], &["status", "--json"], &["vault", "list", "--json"]] {
        let r = s.sr(args);
        assert!(!r.stdout.contains(&token) && !r.stderr.contains(&token), "{args:?}");
    }
}

fn pem_to_der(pem: &str) -> Vec<u8> {
    use base64::Engine as _;
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    base64::engine::general_purpose::STANDARD.decode(body).unwrap()
}

fn sha256_hex(der: &[u8]) -> String {
    let out = Command::new("sha256sum").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    let mut child = out;
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), der).unwrap();
    drop(child.stdin.take());
    let o = child.wait_with_output().unwrap();
    String::from_utf8(o.stdout).unwrap().split_whitespace().next().unwrap().to_owned()
}

/// `login --ca` with a relative path, then commands from another directory:
/// the profile keeps the CA file's absolute path. `login` and `status` name
/// the user beside the identity.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relative_ca_path_works_from_any_directory_later() {
    let s = Setup::new("3600");
    let data = s.server.data_dir.path();
    let r = s.login_in(data, "tls/cert.pem").await;
    assert!(ok(&r).contains("(alice)"), "{}", r.stdout);
    let profile: serde_json::Value = serde_json::from_slice(&std::fs::read(s.config.path().join("profile.json")).unwrap()).unwrap();
    let ca = profile["trust"]["ca_file"].as_str().unwrap_or_else(|| panic!("{profile}"));
    assert!(std::path::Path::new(ca).is_absolute() && ca.ends_with("tls/cert.pem"), "{profile}");
    let elsewhere = tempfile::tempdir().unwrap();
    for args in [&["status"][..], &["vault", "list"]] {
        let out = Command::new(BIN).args(args).current_dir(elsewhere.path()).envs(s.env()).stdin(Stdio::null()).output().unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{args:?} from another directory: {stdout}{stderr}");
        if args == ["status"] {
            assert!(stdout.contains("(alice)") && stdout.contains("local:{"), "{stdout}");
        }
    }
}
