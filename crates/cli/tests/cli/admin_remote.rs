//! `strongroom admin --server URL …`: the admin CLI over the API, against
//! two replicas on one PostgreSQL database. What is changed through one
//! replica is seen through the other at once (nothing is cached); a listing
//! over the API prints what the same listing on the store prints, as far as
//! the API tells the same facts; a token without the scope is refused with
//! the client's exit code; commands that work only on the store say so and
//! exit 2; a token file others may read is refused.
//!
//! Needs PostgreSQL at `STRONGROOM_TEST_POSTGRES_URL` (skips loudly without it).

use serde_json::Value;
use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};

use crate::process::{BIN, Run, approve, run};
use crate::replicas::{Cluster, pg_url};

/// The scope an operator's admin integration offers (book/src/administration/admin-cli.md).
const ADMIN_SCOPE: &str = "configuration:manage,delete;security:manage,delete;admin:delete";
const OPS: &str = "ops";
const ROSA: &str = "rosa";
const PASSWORD: &str = "a long passphrase";

struct Remote {
    cluster: Cluster,
    dir: tempfile::TempDir,
    /// The operator's token (a Master Admin, [`ADMIN_SCOPE`]).
    admin_token: std::path::PathBuf,
    /// A token of the same operator with scope `restricted:manage` only.
    narrow_token: std::path::PathBuf,
}

impl Remote {
    async fn start() -> Remote {
        let cluster = Cluster::start(2).await;
        cluster.admin(&["users", "create", OPS, "--master-admin"], &format!("{PASSWORD}\n"));
        cluster.admin(&["users", "create", ROSA], &format!("{PASSWORD}\n"));
        cluster
            .admin(&["integrations", "create", "admin-cli", "--scope", ADMIN_SCOPE, "--allow-user", OPS, "--password-grant", "true"], "");
        cluster.admin(
            &["integrations", "create", "rosa-app", "--scope", "restricted:manage", "--allow-user", ROSA, "--password-grant", "true"],
            "",
        );
        cluster.admin(
            &["integrations", "create", "narrow", "--scope", "restricted:manage", "--allow-user", OPS, "--password-grant", "true"],
            "",
        );
        let dir = tempfile::tempdir().unwrap();
        let token = cluster.api(0).password_grant("admin-cli", OPS, PASSWORD, ADMIN_SCOPE).await;
        let admin_token = dir.path().join("admin.token");
        strongroom_proto::files::write_private(&admin_token, format!("{}\n", token.access_token.expose()).as_bytes()).unwrap();
        let token = cluster.api(1).password_grant("narrow", OPS, PASSWORD, "restricted:manage").await;
        let narrow_token = dir.path().join("narrow.token");
        strongroom_proto::files::write_private(&narrow_token, token.access_token.expose().as_bytes()).unwrap();
        Remote { cluster, dir, admin_token, narrow_token }
    }

    /// `strongroom admin --server REPLICA --token-file TOKEN ARGS`.
    fn on(&self, replica: usize, token: &std::path::Path, args: &[&str]) -> Run {
        let base = self.cluster.base(replica);
        let mut all = vec!["admin", "--server", base.as_str(), "--token-file", token.to_str().unwrap()];
        all.extend_from_slice(args);
        let config = self.dir.path().join("config");
        run(&all, &[("STRONGROOM_CONFIG_DIR", config.to_str().unwrap()), ("STRONGROOM_LOG", "warn")])
    }

    /// [`Remote::on`] with the operator's token; it must succeed.
    fn ok(&self, replica: usize, args: &[&str]) -> String {
        let r = self.on(replica, &self.admin_token, args);
        assert_eq!(r.code, 0, "admin {args:?} through replica {replica}: stdout {}\nstderr {}", r.stdout, r.stderr);
        r.stdout
    }

    fn json(&self, replica: usize, args: &[&str]) -> Value {
        let all: Vec<&str> = args.iter().copied().chain(["--json"]).collect();
        serde_json::from_str(&self.ok(replica, &all)).unwrap()
    }

    fn env(&self) -> Vec<(&'static str, String)> {
        vec![("STRONGROOM_CONFIG_DIR", self.dir.path().join("config").display().to_string()), ("STRONGROOM_LOG", "warn".to_owned())]
    }

    /// `strongroom login` to replica `replica` as [`OPS`] through the
    /// admin integration, approved on the page.
    async fn login(&self, replica: usize) {
        let base = self.cluster.base(replica);
        let mut child = Command::new(BIN)
            .args(["login", "--server", &base, "--client-id", "admin-cli", "--scope", ADMIN_SCOPE, "--no-browser"])
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
        let page = approve(&self.cluster.http, &link, OPS, PASSWORD, true).await;
        assert!(page.contains("Access approved"), "{page}");
        let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    }

    /// `strongroom admin --server REPLICA ARGS` with the token of the last login.
    fn logged_in(&self, replica: usize, args: &[&str]) -> Run {
        let base = self.cluster.base(replica);
        let mut all = vec!["admin", "--server", base.as_str()];
        all.extend_from_slice(args);
        let env = self.env();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        run(&all, &env)
    }

    /// [`Remote::on`] with the operator's token, `stdin` written to the command.
    fn with_stdin(&self, replica: usize, args: &[&str], stdin: &str) -> Run {
        let base = self.cluster.base(replica);
        let mut all = vec!["admin", "--server", base.as_str(), "--token-file", self.admin_token.to_str().unwrap()];
        all.extend_from_slice(args);
        let mut child = Command::new(BIN)
            .args(&all)
            .envs(self.env())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), stdin.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// The same command on the store.
    fn direct_json(&self, args: &[&str]) -> Value {
        let all: Vec<&str> = args.iter().copied().chain(["--json"]).collect();
        serde_json::from_str(&self.cluster.admin(&all, "")).unwrap()
    }
}

/// `(name, identity)` of each element of a JSON listing.
fn named(v: &Value) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap().to_owned(), e["identity"].as_str().unwrap().to_owned()))
        .collect();
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_over_the_api_on_two_replicas_of_one_database() {
    if pg_url("admin_remote").is_none() {
        return;
    }
    let r = Remote::start().await;

    // Users and groups over Identity/*, through either replica, name the
    // same identities as the store.
    let users = r.json(1, &["users", "list"]);
    assert_eq!(named(&users), named(&r.direct_json(&["users", "list"])));
    assert_eq!(named(&users).iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), [OPS, ROSA]);
    let text = r.ok(0, &["users", "list"]);
    assert!(text.starts_with("NAME") && text.contains(ROSA) && text.contains("local:{"), "{text}");

    r.cluster.admin(&["groups", "add", "deployers"], "");
    r.cluster.admin(&["groups", "members", "add", "deployers", ROSA], "");
    for replica in [0, 1] {
        let groups = r.json(replica, &["groups", "list"]);
        let direct = r.direct_json(&["groups", "list"]);
        assert_eq!(named(&groups), named(&direct));
        assert_eq!(groups[0]["members"], 1, "{groups}");
        assert_eq!(
            named(&r.json(replica, &["groups", "members", "list", "deployers"])),
            named(&r.direct_json(&["groups", "members", "list", "deployers"]))
        );
    }

    // With the token of `strongroom login` (its profile names the integration).
    r.login(0).await;
    let out = r.logged_in(0, &["groups", "members", "list", "deployers", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(named(&serde_json::from_str(&out.stdout).unwrap()), named(&r.direct_json(&["groups", "members", "list", "deployers"])));
    // Another server: no login there.
    let out = r.logged_in(1, &["users", "list"]);
    assert_eq!(out.code, 3, "{out:?}");
    assert!(out.stderr.contains("strongroom login"), "{}", out.stderr);

    // The event log over GET Log: the same events, field by field, as on the store.
    let remote = r.json(1, &["events", "list", "--kind", "group.member_added", "--limit", "5"]);
    let direct = r.direct_json(&["events", "list", "--kind", "group.member_added", "--limit", "5"]);
    assert_eq!(remote.as_array().unwrap().len(), 1, "{remote}");
    assert_eq!(remote, direct);
    let text = r.ok(0, &["events", "list", "--limit", "2"]);
    assert!(text.starts_with("SEQ") && text.contains("--offset 2 for the next 2"), "{text}");

    // The \VED tree: folders over Config/*, rights over Permissions/*.
    let team = "\\VED\\Policy\\Team A";
    let app = "\\VED\\Policy\\Team A\\App";
    assert_eq!(r.json(0, &["folders", "create", app])["folder"], app, "the folder above it is made first");
    assert_eq!(r.json(1, &["folders", "list"]), r.direct_json(&["folders", "list"]));
    let out = r.on(1, &r.admin_token, &["folders", "create", app]);
    assert_eq!(out.code, 7, "{out:?}");
    assert!(out.stderr.contains("Result 401"), "{}", out.stderr);
    assert_eq!(r.ok(1, &["rights", "grant", team, ROSA, "--rights", "read,write"]).trim(), format!("{ROSA} has read,write on {team}"));
    let show = |replica: usize| r.json(replica, &["rights", "show", app, ROSA]);
    let direct = r.direct_json(&["rights", "show", app, ROSA]);
    assert_eq!(show(0)["rights"], direct["rights"], "{direct}");
    assert_eq!(r.json(0, &["rights", "show", team, ROSA])["sources"][0]["inherited"], false);
    assert_eq!(show(1)["sources"][0]["inherited"], true);
    // Granting again replaces (the server's 409, then PUT).
    r.ok(0, &["rights", "grant", team, ROSA, "--rights", "view"]);
    assert_eq!(r.direct_json(&["rights", "show", team, ROSA])["rights"], r.json(1, &["rights", "show", team, ROSA])["rights"]);
    r.ok(1, &["rights", "grant", team, "deployers", "--group", "--rights", "read"]);
    let all = r.direct_json(&["rights", "list"]);
    assert!(all.as_array().unwrap().iter().any(|g| g["user"] == "deployers" && g["group"] == true && g["folder"] == team), "{all}");
    let sorted = |v: Value| {
        let mut all: Vec<String> = v.as_array().unwrap().iter().map(Value::to_string).collect();
        all.sort();
        all
    };
    let listed = sorted(r.json(0, &["rights", "list"]));
    assert_eq!(listed, sorted(r.direct_json(&["rights", "list"])));
    assert_eq!(listed.len(), 2, "{listed:?}");
    r.ok(0, &["rights", "revoke", team, ROSA]);
    let all = r.direct_json(&["rights", "list"]);
    assert!(!all.as_array().unwrap().iter().any(|g| g["user"] == ROSA), "{all}");
    // A folder with a folder below it is deleted only with --recursive.
    let out = r.on(0, &r.admin_token, &["folders", "delete", team]);
    assert_eq!(out.code, 7, "{out:?}");
    assert!(out.stderr.contains("Result 402"), "{}", out.stderr);
    assert_eq!(r.ok(1, &["folders", "delete", team, "--recursive"]).trim(), format!("deleted folder {team}"));
    assert_eq!(r.json(0, &["folders", "list"]), r.direct_json(&["folders", "list"]));
    assert!(!r.ok(0, &["folders", "list"]).contains("Team A"));
    // A user deleted through one replica is gone through the other.
    r.cluster.admin(&["users", "create", "temp"], &format!("{PASSWORD}\n"));
    assert_eq!(r.ok(0, &["users", "delete", "temp"]).trim(), "deleted user temp");
    assert!(!named(&r.json(1, &["users", "list"])).iter().any(|(n, _)| n == "temp"));
    // Changes through one replica, seen through the other at once.
    // Groups (Identity/AddGroup, AddGroupMembers, RemoveGroupMembers, DELETE Identity/Group).
    let out = r.json(0, &["groups", "add", "platform"]);
    assert_eq!(out["name"], "platform");
    assert!(named(&r.json(1, &["groups", "list"])).iter().any(|(n, id)| n == "platform" && *id == out["identity"]));
    assert_eq!(r.ok(1, &["groups", "members", "add", "platform", ROSA]).trim(), format!("added {ROSA} to platform"));
    assert_eq!(
        named(&r.json(0, &["groups", "members", "list", "platform"])),
        named(&r.direct_json(&["groups", "members", "list", "platform"]))
    );
    assert_eq!(r.json(0, &["groups", "members", "list", "platform"]).as_array().unwrap().len(), 1);
    assert_eq!(r.ok(0, &["groups", "members", "add", "platform", ROSA]).trim(), "no change: already members of platform");
    let out = r.on(1, &r.admin_token, &["groups", "members", "add", "platform", "nobody"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("no such user: nobody"), "{}", out.stderr);
    assert_eq!(r.ok(1, &["groups", "members", "remove", "platform", ROSA]).trim(), format!("removed {ROSA} from platform"));
    assert_eq!(r.json(0, &["groups", "members", "list", "platform"]), serde_json::json!([]));
    assert_eq!(r.ok(0, &["groups", "remove", "platform"]).trim(), "deleted group platform");
    assert!(!named(&r.json(1, &["groups", "list"])).iter().any(|(n, _)| n == "platform"));
    // The events name the operator who acted through the API.
    let ev = r.json(1, &["events", "list", "--kind", "group.deleted", "--limit", "1"]);
    assert_eq!(ev[0]["user"], OPS, "{ev}");

    // A new password through replica 0 works for sign-in through replica 1 at once.
    let out = r.with_stdin(0, &["users", "set-password", ROSA], "another long passphrase\n");
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("every grant of theirs ended"), "{}", out.stdout);
    let (status, _) = r
        .cluster
        .api(1)
        .post_json(
            "/vedauth/authorize/oauth",
            &serde_json::json!({"client_id": "rosa-app", "username": ROSA, "password": PASSWORD, "scope": "restricted:manage"}),
        )
        .await;
    assert_eq!(status, 400, "the old password no longer works");
    r.cluster.api(1).password_grant("rosa-app", ROSA, "another long passphrase", "restricted:manage").await;

    // A user made through one replica (Config/Create, then Identity/SetPassword), seen through the other.
    let out = r.with_stdin(1, &["users", "create", "carol", "--json"], "carol's long passphrase\n");
    assert_eq!(out.code, 0, "{out:?}");
    let carol: Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(
        named(&r.json(0, &["users", "list"])).contains(&("carol".to_owned(), carol["identity"].as_str().unwrap().to_owned())),
        "{carol}"
    );
    assert_eq!(named(&r.json(0, &["users", "list"])), named(&r.direct_json(&["users", "list"])));
    let out = r.with_stdin(0, &["users", "create", "dave", "--master-admin"], "dave's long passphrase\n");
    assert_eq!(out.code, 2, "{out:?}");
    let rosa_password = "another long passphrase";

    // API integrations and grants (oauth/*).
    let out = r.json(1, &["integrations", "create", "ci-app", "--name", "CI", "--scope", "restricted:manage", "--allow-user", ROSA]);
    assert_eq!(out["client_id"], "ci-app");
    let listed = r.json(0, &["integrations", "list"]);
    let ci = listed.as_array().unwrap().iter().find(|i| i["client_id"] == "ci-app").unwrap().clone();
    assert_eq!((ci["name"].clone(), ci["allowed_users"].clone()), (serde_json::json!("CI"), serde_json::json!([ROSA])), "{ci}");
    let direct = r.direct_json(&["integrations", "list"]);
    let d = direct.as_array().unwrap().iter().find(|i| i["client_id"] == "ci-app").unwrap();
    for k in ["name", "scope", "allowed_users", "allowed_groups", "access_validity", "grant_validity", "refreshable", "disabled"] {
        assert_eq!(ci[k], d[k], "{k}");
    }
    r.ok(0, &["integrations", "update", "ci-app", "--name", "CI builds", "--allow-group", "deployers"]);
    let ci = r.json(1, &["integrations", "list"]);
    let ci = ci.as_array().unwrap().iter().find(|i| i["client_id"] == "ci-app").unwrap().clone();
    assert_eq!(
        (ci["name"].clone(), ci["allowed_groups"].clone()),
        (serde_json::json!("CI builds"), serde_json::json!(["deployers"])),
        "{ci}"
    );
    let out = r.on(0, &r.admin_token, &["integrations", "create", "x", "--scope", "restricted", "--password-grant", "true"]);
    assert_eq!(out.code, 2, "{out:?}");
    // Grants: rosa's grant listed through one replica, revoked through the other, refused everywhere at once.
    let pw = r.cluster.api(0).password_grant("rosa-app", ROSA, rosa_password, "restricted:manage").await;
    let grants = r.json(1, &["grants", "list"]);
    assert!(grants.as_array().unwrap().iter().any(|g| g["user"] == ROSA && g["client_id"] == "rosa-app"), "{grants}");
    assert_eq!(r.cluster.api(1).verify(pw.access_token.expose()).await, 200);
    let live = grants.as_array().unwrap().iter().filter(|g| g["user"] == ROSA).count();
    assert_eq!(live, r.direct_json(&["grants", "list"]).as_array().unwrap().iter().filter(|g| g["user"] == ROSA).count());
    let out = r.json(0, &["grants", "revoke", "--user", ROSA]);
    assert_eq!(out["grants_revoked"], live, "{out}");
    assert_eq!(r.cluster.api(1).verify(pw.access_token.expose()).await, 401);
    assert_eq!(r.ok(0, &["integrations", "delete", "ci-app"]).trim(), "deleted integration ci-app");
    assert!(!r.json(1, &["integrations", "list"]).as_array().unwrap().iter().any(|i| i["client_id"] == "ci-app"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_over_the_api_have_clear_messages_and_exit_codes() {
    if pg_url("admin_remote").is_none() {
        return;
    }
    let r = Remote::start().await;

    // A token without the scope: 403, the client's exit code 10.
    let out = r.on(0, &r.narrow_token, &["users", "list"]);
    assert_eq!(out.code, 10, "{out:?}");
    assert!(out.stderr.contains("scope") && out.stderr.contains("configuration"), "{}", out.stderr);

    // Commands that work only on the store: exit 2, saying so.
    for args in [&["keys", "list"][..], &["init"], &["jwt-issuers", "list"], &["users", "unlock", ROSA], &["events", "verify"]] {
        let out = r.on(1, &r.admin_token, args);
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        assert!(out.stderr.contains("only on the store") && out.stderr.contains("without --server"), "{}", out.stderr);
    }
    // STRONGROOM_SERVER works like --server.
    let config = r.dir.path().join("config");
    let out = run(
        &["admin", "--token-file", r.admin_token.to_str().unwrap(), "keys", "list"],
        &[("STRONGROOM_SERVER", &r.cluster.base(0)), ("STRONGROOM_CONFIG_DIR", config.to_str().unwrap())],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("unset STRONGROOM_SERVER"), "{}", out.stderr);

    // A token file others may read is refused before anything is sent.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let open = r.dir.path().join("open.token");
        std::fs::copy(&r.admin_token, &open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o644)).unwrap();
        let out = r.on(0, &open, &["users", "list"]);
        assert_eq!(out.code, 8, "{out:?}");
        assert!(out.stderr.contains("open.token") && out.stderr.contains("chmod"), "{}", out.stderr);
    }
    // A revoked token: 401, exit 3.
    let token = std::fs::read_to_string(&r.admin_token).unwrap();
    assert_eq!(r.cluster.api(1).revoke(token.trim()).await, 200);
    let out = r.on(0, &r.admin_token, &["users", "list"]);
    assert_eq!(out.code, 3, "{out:?}");
}
