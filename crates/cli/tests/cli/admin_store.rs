//! `strongroom admin` as an operator meets it: it never makes a store (only
//! `admin init` and `serve` do), deletes users, integrations and folders
//! with their grants and entries, lists events newest first with a footer
//! and follows them, archives the oldest events to a file that verifies on
//! its own, and prints listings as arrays of objects.
#![allow(clippy::disallowed_methods)]

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::process::{BIN, Run, Server, run};

const PASSWORD: &str = "a long passphrase";
const SCOPE: &str = "restricted:manage,delete";

/// `strongroom ARGS` run in `cwd` with `env`, `stdin` fed to it.
fn run_in(cwd: &Path, args: &[&str], env: &[(&str, &str)], stdin: &str) -> Run {
    let mut child = Command::new(BIN)
        .args(args)
        .envs(env.iter().copied())
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

fn json_of(r: &Run) -> Value {
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    serde_json::from_str(r.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {}", r.stdout))
}

#[test]
fn admin_in_an_empty_directory_creates_nothing_and_says_where_it_looked() {
    let cwd = tempfile::tempdir().unwrap();
    let here = cwd.path().canonicalize().unwrap();
    for (args, stdin) in [(&["admin", "users", "list"][..], ""), (&["admin", "users", "create", "alice"], "a long passphrase\n")] {
        let r = run_in(&here, args, &[], stdin);
        assert_eq!(r.code, 1, "{args:?} succeeded: {}{}", r.stdout, r.stderr);
        for needed in [
            "no Strongroom store here",
            "nothing was created",
            &format!("{}", here.join("strongroom-data").display()),
            "data directory from the default",
            "--data-dir",
            "--config",
            "STRONGROOM_DATA_DIR",
            "strongroom admin init",
        ] {
            assert!(r.stderr.contains(needed), "{needed:?} missing from: {}", r.stderr);
        }
        assert!(entries(&here).is_empty(), "{args:?} made {:?}", entries(&here));
    }
    // Pointed elsewhere, it names where it was pointed, and how.
    let r = run_in(&here, &["admin", "--data-dir", "elsewhere", "events", "list"], &[], "");
    assert!(r.code == 1 && r.stderr.contains(&here.join("elsewhere").display().to_string()), "{}", r.stderr);
    assert!(r.stderr.contains("data directory from --data-dir"), "{}", r.stderr);
    let r = run_in(&here, &["admin", "folders", "list"], &[("STRONGROOM_DATA_DIR", "/nonexistent/strongroom")], "");
    assert!(r.code == 1 && r.stderr.contains("/nonexistent/strongroom") && r.stderr.contains("from STRONGROOM_DATA_DIR"), "{}", r.stderr);
    assert!(entries(&here).is_empty());

    // `admin init` makes it; then admin works, and init again changes nothing.
    let r = run_in(&here, &["admin", "init"], &[], "");
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("initialised a new store") && r.stdout.contains("master key created"), "{}", r.stdout);
    let made: Vec<String> =
        entries(&here.join("strongroom-data")).into_iter().filter(|f| !f.ends_with("-wal") && !f.ends_with("-shm")).collect();
    assert_eq!(made, ["master.key", "strongroom.db"]);
    // An empty listing says so (and its JSON is an empty array).
    let r = run_in(&here, &["admin", "users", "list"], &[], "");
    assert_eq!((r.code, r.stdout.as_str()), (0, "no users\n"), "{}", r.stderr);
    assert_eq!(json_of(&run_in(&here, &["admin", "users", "list", "--json"], &[], "")), serde_json::json!([]));
    let r = run_in(&here, &["admin", "users", "create", "alice"], &[], "a long passphrase\n");
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let again = json_of(&run_in(&here, &["admin", "init", "--json"], &[], ""));
    assert_eq!((again["created"].as_bool(), again["master_key"]["source"].as_str()), (Some(false), Some("file")), "{again}");

    // A store whose key is elsewhere: refused, and no key is made in its place.
    std::fs::rename(here.join("strongroom-data/master.key"), here.join("kept.key")).unwrap();
    let r = run_in(&here, &["admin", "users", "list"], &[], "");
    assert!(r.code == 1 && r.stderr.contains("no master key") && r.stderr.contains("STRONGROOM_MASTER_KEY"), "{}", r.stderr);
    assert!(!here.join("strongroom-data/master.key").exists());
    let key = std::fs::read_to_string(here.join("kept.key")).unwrap();
    let r = run_in(&here, &["admin", "users", "list"], &[("STRONGROOM_MASTER_KEY", key.trim())], "");
    assert!(r.code == 0 && r.stdout.contains("alice"), "{}{}", r.stdout, r.stderr);
}

/// A server with a user, an integration that allows the password grant,
/// and a token of theirs.
async fn with_a_grant(server: &Server, user: &str, client: &str) -> String {
    server.admin(&["users", "create", user], &format!("{PASSWORD}\n"));
    server.admin(&["integrations", "create", client, "--scope", SCOPE, "--allow-all-users", "--password-grant", "true"], "");
    let base = format!("http://127.0.0.1:{}", server.port);
    let t = crate::process::Api::new(base).password_grant(client, user, PASSWORD, SCOPE).await;
    crate::process::TokensExt::access(&t).to_owned()
}

async fn verify_status(server: &Server, token: &str) -> u16 {
    let base = format!("http://127.0.0.1:{}", server.port);
    reqwest::Client::new().get(format!("{base}/vedauth/authorize/verify")).bearer_auth(token).send().await.unwrap().status().as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_users_integrations_and_folders_ends_what_hangs_on_them() {
    let server = Server::start(&["--insecure-http"], &[]);
    let alice = with_a_grant(&server, "alice", "app-a").await;
    let bob = with_a_grant(&server, "bob", "app-b").await;
    assert_eq!((verify_status(&server, &alice).await, verify_status(&server, &bob).await), (200, 200));
    // Names beside identities in the event log.
    let events = server.admin(&["events", "list", "--kind", "token.issued"], "");
    assert!(events.contains("(alice)") && events.contains("(bob)"), "{events}");

    // A user: their grant ends at once, the other user's does not.
    let out = server.admin(&["users", "delete", "alice"], "");
    assert!(out.contains("deleted user alice: 1 grant ended"), "{out}");
    assert_eq!((verify_status(&server, &alice).await, verify_status(&server, &bob).await), (401, 200));
    assert!(!server.admin(&["users", "list"], "").contains("alice"));
    let r = run(&["admin", "--data-dir", server.dir.to_str().unwrap(), "users", "delete", "alice"], &[]);
    assert!(r.code != 0 && r.stderr.contains("user alice not found"), "{r:?}");

    // An integration: its grants end.
    let deleted: Value = serde_json::from_str(server.admin(&["integrations", "delete", "app-b", "--json"], "").trim()).unwrap();
    assert_eq!((deleted["deleted"].as_bool(), deleted["grants_ended"].as_u64()), (Some(true), Some(1)), "{deleted}");
    assert_eq!(verify_status(&server, &bob).await, 401);
    assert!(!server.admin(&["integrations", "list"], "").contains("app-b"));

    // Folders: an empty one goes; one with something below it only with --recursive.
    server.admin(&["folders", "create", "\\VED\\Policy\\Team A\\App"], "");
    server.admin(&["folders", "create", "\\VED\\Policy\\Empty"], "");
    server.admin(&["rights", "grant", "\\VED\\Policy\\Team A", "bob", "--rights", "read,write"], "");
    let shown = server.admin(&["rights", "show", "\\VED\\Policy\\Team A\\App", "bob"], "");
    assert!(shown.contains("read,write (inherited from \\VED\\Policy\\Team A)"), "{shown}");
    let shown: Value =
        serde_json::from_str(server.admin(&["rights", "show", "\\VED\\Policy\\Team A\\App", "bob", "--json"], "").trim()).unwrap();
    assert_eq!(shown["sources"], serde_json::json!([{"folder": "\\VED\\Policy\\Team A", "rights": "read,write", "inherited": true}]));
    assert!(server.admin(&["folders", "delete", "\\VED\\Policy\\Empty"], "").contains("deleted folder \\VED\\Policy\\Empty"));
    let r = run(&["admin", "--data-dir", server.dir.to_str().unwrap(), "folders", "delete", "\\VED\\Policy\\Team A"], &[]);
    assert!(r.code != 0 && r.stderr.contains("is not empty (1 folder below it") && r.stderr.contains("--recursive"), "{r:?}");
    let out = server.admin(&["folders", "delete", "\\VED\\Policy\\Team A", "--recursive"], "");
    assert!(out.contains("and 1 folder below it") && out.contains("1 grant of rights removed"), "{out}");
    let folders: Value = serde_json::from_str(server.admin(&["folders", "list", "--json"], "").trim()).unwrap();
    assert_eq!(folders, serde_json::json!([{"folder": "\\VED"}, {"folder": "\\VED\\Policy"}]));

    // Each deletion is in the chained log.
    for kind in ["user.deleted", "integration.deleted", "folder.deleted"] {
        let listed: Value = serde_json::from_str(server.admin(&["events", "list", "--kind", kind, "--json"], "").trim()).unwrap();
        assert!(!listed.as_array().unwrap().is_empty(), "{kind}");
    }
    assert!(server.admin(&["events", "verify"], "").contains("event log intact"));
    drop(server);
}

#[test]
fn every_listing_is_an_array_of_objects() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    assert_eq!(run(&["admin", "--data-dir", d, "init"], &[]).code, 0);
    let admin = |args: &[&str]| {
        let all: Vec<&str> = ["admin", "--data-dir", d].iter().chain(args).copied().collect();
        run(&all, &[])
    };
    assert_eq!(run_in(dir.path(), &["admin", "--data-dir", d, "users", "create", "alice"], &[], "a long passphrase\n").code, 0);
    assert_eq!(admin(&["folders", "create", "\\VED\\Policy\\T"]).code, 0);
    assert_eq!(admin(&["rights", "grant", "\\VED\\Policy\\T", "alice", "--rights", "read"]).code, 0);
    assert_eq!(admin(&["integrations", "create", "app", "--scope", "restricted"]).code, 0);
    for listing in [
        &["users", "list"][..],
        &["integrations", "list"],
        &["grants", "list", "--all"],
        &["events", "list"],
        &["folders", "list"],
        &["rights", "list"],
        &["keys", "list"],
    ] {
        let mut args = listing.to_vec();
        args.push("--json");
        let v = json_of(&admin(&args));
        let items = v.as_array().unwrap_or_else(|| panic!("{listing:?}: not an array: {v}"));
        assert!(items.iter().all(Value::is_object), "{listing:?}: {v}");
    }
    let keys = json_of(&admin(&["keys", "list", "--json"]));
    assert_eq!(keys[0]["name"], "Software:Default", "{keys}");
    assert!(keys[0]["data_keys"].is_array(), "{keys}");
}

#[test]
fn events_newest_first_with_a_footer_and_paging_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    assert_eq!(run(&["admin", "--data-dir", d, "init"], &[]).code, 0);
    for n in 1..=5 {
        assert_eq!(run(&["admin", "--data-dir", d, "folders", "create", &format!("\\VED\\Policy\\F{n}")], &[]).code, 0);
    }
    // 6 events: the key recorded, then five folders.
    let r = run(&["admin", "--data-dir", d, "events", "list", "--limit", "2"], &[]);
    let seqs: Vec<&str> = r.stdout.lines().skip(1).filter_map(|l| l.split_whitespace().next()).collect();
    assert_eq!(seqs, ["6", "5", "…"], "{}", r.stdout);
    assert!(r.stdout.contains("4 older events not shown: --before 5"), "{}", r.stdout);
    let r = run(&["admin", "--data-dir", d, "events", "list", "--limit", "2", "--before", "5"], &[]);
    assert!(r.stdout.lines().nth(1).unwrap().starts_with("4 ") && r.stdout.contains("2 older events"), "{}", r.stdout);
    let r = run(&["admin", "--data-dir", d, "events", "list", "--limit", "2", "--after", "1"], &[]);
    assert!(r.stdout.lines().nth(1).unwrap().starts_with("2 ") && r.stdout.contains("3 newer events not shown: --after 3"), "{}", r.stdout);
    let r = run(&["admin", "--data-dir", d, "events", "list", "--kind", "folder.created", "--limit", "3"], &[]);
    assert!(r.stdout.contains("2 older events not shown"), "{}", r.stdout);
    // Everything shown: no footer. JSON is the array alone, newest first.
    assert!(!run(&["admin", "--data-dir", d, "events", "list"], &[]).stdout.contains("not shown"));
    let v = json_of(&run(&["admin", "--data-dir", d, "events", "list", "--limit", "2", "--json"], &[]));
    let seqs: Vec<i64> = v.as_array().unwrap().iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    assert_eq!(seqs, [6, 5]);
}

#[test]
fn events_follow_prints_new_events_as_they_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    assert_eq!(run(&["admin", "--data-dir", d, "init"], &[]).code, 0);
    for json in [false, true] {
        let mut child = Command::new(BIN)
            .args(["admin", "--data-dir", d, "events", "list", "--follow", "--limit", "1"])
            .args(if json { &["--json"][..] } else { &[] })
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let first = rx.recv_timeout(Duration::from_secs(20)).unwrap();
        let folder = format!("\\VED\\Policy\\Followed{json}");
        assert_eq!(run(&["admin", "--data-dir", d, "folders", "create", &folder], &[]).code, 0);
        let started = Instant::now();
        let mut seen = Vec::new();
        while started.elapsed() < Duration::from_secs(20) {
            if let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) {
                seen.push(line);
                if seen.iter().any(|l| l.contains("Followed")) {
                    break;
                }
            }
        }
        let line = seen.iter().find(|l| l.contains("Followed")).unwrap_or_else(|| panic!("not followed: {first} {seen:?}"));
        if json {
            let v: Value = serde_json::from_str(line).unwrap();
            assert_eq!((v["kind"].as_str(), v["object"].as_str()), (Some("folder.created"), Some(folder.as_str())), "{v}");
        } else {
            assert!(line.contains("folder.created") && line.contains("object="), "{line}");
        }
        // SIGTERM ends it cleanly.
        assert!(Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap().success());
        let status = child.wait().unwrap();
        assert!(status.success(), "{status}");
    }
}

#[test]
fn a_second_backup_with_force_replaces_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("data");
    let d = d.to_str().unwrap();
    assert_eq!(run(&["admin", "--data-dir", d, "init"], &[]).code, 0);
    let file = dir.path().join("backup.db");
    let f = file.to_str().unwrap();
    let first = json_of(&run(&["admin", "--data-dir", d, "backup", f, "--json"], &[]));
    let r = run(&["admin", "--data-dir", d, "backup", f], &[]);
    assert!(r.code != 0 && r.stderr.contains("already exists: give --force"), "{r:?}");
    assert_eq!(run(&["admin", "--data-dir", d, "folders", "create", "\\VED\\Policy\\Later"], &[]).code, 0);
    let second = json_of(&run(&["admin", "--data-dir", d, "backup", f, "--force", "--json"], &[]));
    assert!(second["event_seq"].as_i64() > first["event_seq"].as_i64(), "{first} {second}");
    let sidecar: Value = serde_json::from_slice(&std::fs::read(dir.path().join("backup.db.json")).unwrap()).unwrap();
    assert_eq!(sidecar["event_seq"], second["event_seq"]);
    assert_eq!(entries(dir.path()), ["backup.db", "backup.db.json", "data"], "nothing left beside them");
    // A backup of a store that is not there makes none.
    let r = run(
        &["admin", "--data-dir", dir.path().join("nothing").to_str().unwrap(), "backup", dir.path().join("x.db").to_str().unwrap()],
        &[],
    );
    assert!(r.code != 0 && r.stderr.contains("no SQLite store"), "{r:?}");
    assert!(!dir.path().join("nothing").exists() && !dir.path().join("x.db").exists());
}

#[test]
fn migrate_store_refuses_a_source_that_is_being_served() {
    let server = Server::start(&["--insecure-http"], &[]);
    let db = server.dir.join("strongroom.db");
    let target = tempfile::tempdir().unwrap();
    let to = target.path().join("copy.db");
    let r = run(
        &[
            "admin",
            "--data-dir",
            target.path().to_str().unwrap(),
            "migrate-store",
            "--from",
            db.to_str().unwrap(),
            "--to",
            to.to_str().unwrap(),
        ],
        &[],
    );
    assert!(r.code != 0 && r.stderr.contains("is being served by process") && r.stderr.contains(&server.pid().to_string()), "{r:?}");
    assert!(!to.exists(), "nothing was copied");
    let (_, kept) = server.stop_keeping_data();
    let db = kept.path().join("strongroom.db");
    // Stopped, it copies, from a snapshot that is gone afterwards.
    let r = run(
        &[
            "admin",
            "--data-dir",
            target.path().to_str().unwrap(),
            "migrate-store",
            "--from",
            db.to_str().unwrap(),
            "--to",
            to.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("from a snapshot of one moment") && r.stdout.contains("event log intact"), "{}", r.stdout);
    let left: Vec<String> = entries(db.parent().unwrap()).into_iter().filter(|n| n.contains("migrate")).collect();
    assert!(left.is_empty(), "{left:?}");
}

/// `… | head`: output cut short by its reader is not an error.
#[test]
fn output_cut_short_by_its_reader_exits_quietly() {
    for args in [&["openapi"][..], &["completions", "zsh"], &["man"]] {
        let mut child = Command::new(BIN).args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut first = [0u8; 16];
        std::io::Read::read_exact(&mut stdout, &mut first).unwrap();
        drop(stdout);
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && err.is_empty(), "{args:?}: {} {err}", out.status);
    }
}

#[test]
fn events_archive_moves_the_logs_start_and_the_archive_verifies_on_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let admin = |args: &[&str]| {
        let mut all = vec!["admin", "--data-dir", d];
        all.extend_from_slice(args);
        run(&all, &[])
    };
    assert_eq!(admin(&["init"]).code, 0);
    for n in 1..=5 {
        assert_eq!(admin(&["folders", "create", &format!("\\VED\\Policy\\F{n}")]).code, 0);
    }
    let tomorrow = strongroom_core::time::UnixTime::from_secs(now_secs() + 86_400).iso8601();
    let (a1, a2) = (dir.path().join("a1.jsonl"), dir.path().join("a2.jsonl"));
    let (a1s, a2s) = (a1.to_str().unwrap(), a2.to_str().unwrap());
    assert!(admin(&["events", "archive", "--before", "2000-01-01", "--to", a1s]).stdout.contains("no events before"));
    assert!(!a1.exists(), "nothing to archive: no file");
    let r = admin(&["events", "archive", "--before", &tomorrow, "--to", a1s]);
    assert!(r.code == 0 && r.stdout.contains("archived 6 events (1..=6)"), "{}{}", r.stdout, r.stderr);
    #[cfg(unix)]
    assert_eq!(std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&a1).unwrap().permissions()) & 0o777, 0o600);
    // The stored log: the archive's own event, then two more.
    for n in 6..=7 {
        assert_eq!(admin(&["folders", "create", &format!("\\VED\\Policy\\F{n}")]).code, 0);
    }
    let r = admin(&["events", "verify"]);
    assert!(r.code == 0 && r.stdout.contains("3 events after event 6"), "{}{}", r.stdout, r.stderr);
    let r = admin(&["events", "list", "--limit", "1"]);
    assert!(r.stdout.contains("2 older events not shown"), "the footer counts what is stored: {}", r.stdout);
    let r = admin(&["events", "verify", "--archive", a1s]);
    assert!(r.code == 0 && r.stdout.contains("form one chain"), "{}{}", r.stdout, r.stderr);
    // An archive is never overwritten; the next one starts where the first ended.
    let r = admin(&["events", "archive", "--before", &tomorrow, "--to", a1s]);
    assert!(r.code != 0 && r.stderr.contains("exists"), "{}{}", r.stdout, r.stderr);
    let r = admin(&["events", "archive", "--before", &tomorrow, "--to", a2s]);
    assert!(r.code == 0 && r.stdout.contains("archived 3 events (7..=9)"), "{}{}", r.stdout, r.stderr);
    let v = json_of(&admin(&["events", "verify", "--archive", a1s, "--archive", a2s, "--json"]));
    assert_eq!((v["intact"].as_bool(), v["starts_after"].as_i64(), v["events"].as_i64()), (Some(true), Some(9), Some(1)), "{v}");
    let r = admin(&["events", "verify", "--archive", a2s, "--archive", a1s]);
    assert!(r.code != 0 && r.stderr.contains("ends at event"), "archives out of order: {}{}", r.stdout, r.stderr);
    // A tampered archive is found, on its own.
    let text = std::fs::read_to_string(&a1).unwrap();
    let tampered = dir.path().join("tampered.jsonl");
    std::fs::write(&tampered, text.replacen("F2", "F7", 1)).unwrap();
    let r = admin(&["events", "verify", "--archive", tampered.to_str().unwrap()]);
    assert!(r.code != 0 && r.stderr.contains("does not verify"), "{}{}", r.stdout, r.stderr);
    let r = admin(&["events", "archive", "--before", "yesterday", "--to", a2s]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
}

fn now_secs() -> i64 {
    i64::try_from(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()).unwrap()
}

/// `admin groups`: add, members, rights granted to the group (and shown as
/// the members' effective rights), a place on an integration, removal, each
/// change a chained event, text and `--json`.
#[test]
fn groups_hold_rights_for_their_members() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    assert_eq!(run(&["admin", "--data-dir", d, "init"], &[]).code, 0);
    let admin = |args: &[&str]| {
        let all: Vec<&str> = ["admin", "--data-dir", d].iter().chain(args).copied().collect();
        let r = run(&all, &[]);
        assert_eq!(r.code, 0, "{args:?}: {r:?}");
        r.stdout
    };
    for name in ["alice", "bob"] {
        assert_eq!(run_in(dir.path(), &["admin", "--data-dir", d, "users", "create", name], &[], "a long passphrase\n").code, 0);
    }
    assert!(admin(&["groups", "add", "Deployers"]).contains("created group Deployers (local:{"));
    let r = run(&["admin", "--data-dir", d, "groups", "add", "deployers"], &[]);
    assert!(r.code != 0 && r.stderr.contains("already exists"), "{r:?}");
    let r = run(&["admin", "--data-dir", d, "groups", "add", "alice"], &[]);
    assert!(r.code != 0 && r.stderr.contains("users and groups share names"), "{r:?}");
    assert!(admin(&["groups", "members", "add", "deployers", "alice", "bob"]).contains("added alice, bob to deployers"));
    assert!(admin(&["groups", "members", "add", "deployers", "alice"]).contains("no change"));
    let listed = parse(&admin(&["groups", "list", "--json"]));
    assert_eq!((listed[0]["name"].as_str(), listed[0]["members"].as_u64()), (Some("Deployers"), Some(2)), "{listed}");
    let members = parse(&admin(&["groups", "members", "list", "deployers", "--json"]));
    assert_eq!(members.as_array().unwrap().iter().map(|m| m["name"].as_str().unwrap()).collect::<Vec<_>>(), ["alice", "bob"]);

    admin(&["folders", "create", "\\VED\\Policy\\Team\\App"]);
    assert!(
        admin(&["rights", "grant", "\\VED\\Policy\\Team", "deployers", "--group", "--rights", "read,write"])
            .contains("group deployers has read,write on \\VED\\Policy\\Team")
    );
    let shown = admin(&["rights", "show", "\\VED\\Policy\\Team\\App", "alice"]);
    assert!(shown.contains("read,write (inherited from \\VED\\Policy\\Team)"), "a member's effective rights: {shown}");
    let listed = parse(&admin(&["rights", "list", "--json"]));
    assert_eq!(listed[0]["group"], true, "{listed}");
    assert!(admin(&["rights", "list"]).contains("group:Deployers"));
    admin(&["integrations", "create", "app", "--scope", "restricted", "--allow-group", "deployers"]);
    let apps = parse(&admin(&["integrations", "list", "--json"]));
    assert_eq!(apps[0]["allowed_groups"], serde_json::json!(["Deployers"]), "{apps}");

    assert!(admin(&["groups", "members", "remove", "deployers", "alice"]).contains("removed alice from deployers"));
    assert!(admin(&["rights", "show", "\\VED\\Policy\\Team\\App", "alice"]).contains("none"));
    assert!(admin(&["groups", "remove", "deployers"]).contains("deleted group deployers (1 folder rights removed)"));
    assert!(admin(&["rights", "show", "\\VED\\Policy\\Team\\App", "bob"]).contains("none"));
    for kind in ["group.created", "group.member_added", "group.member_removed", "group.deleted"] {
        let listed = parse(&admin(&["events", "list", "--kind", kind, "--json"]));
        assert!(!listed.as_array().unwrap().is_empty(), "{kind}");
    }
    // A directory group made before any of its members signs in, to be given rights.
    assert!(admin(&["groups", "add", "LDAP+dir:engineering"]).contains("created group LDAP+dir:engineering (LDAP+dir:{"));
    assert!(admin(&["events", "verify"]).contains("event log intact"));
}

fn parse(s: &str) -> Value {
    serde_json::from_str(s.trim()).unwrap_or_else(|e| panic!("{e}: {s}"))
}

/// `admin users master-admin NAME [--off]`: the act the console calls, with
/// its event; saying so when nothing changed; the CLI on the store acts for
/// nobody, so it may take the role from anyone.
#[test]
fn master_admin_on_and_off() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    assert_eq!(run(&["admin", "--data-dir", d, "init"], &[]).code, 0);
    let admin = |args: &[&str]| {
        let all: Vec<&str> = ["admin", "--data-dir", d].iter().chain(args).copied().collect();
        run(&all, &[])
    };
    assert_eq!(run_in(dir.path(), &["admin", "--data-dir", d, "users", "create", "alice"], &[], "a long passphrase\n").code, 0);
    let is_master = || json_of(&admin(&["users", "list", "--json"]))[0]["master_admin"].clone();
    assert_eq!(is_master(), false);
    let r = admin(&["users", "master-admin", "alice"]);
    assert_eq!((r.code, r.stdout.trim()), (0, "alice is now a Master Admin"), "{}", r.stderr);
    assert_eq!(is_master(), true);
    let r = admin(&["users", "master-admin", "alice"]);
    assert_eq!(r.stdout.trim(), "alice was already a Master Admin; nothing changed");
    let v = json_of(&admin(&["users", "master-admin", "ALICE", "--off", "--json"]));
    assert_eq!((v["master_admin"].as_bool(), v["changed"].as_bool()), (Some(false), Some(true)), "{v}");
    assert_eq!(is_master(), false);
    let events = json_of(&admin(&["events", "list", "--kind", "user.master_admin_changed", "--json"]));
    let details: Vec<&str> = events.as_array().unwrap().iter().map(|e| e["detail"].as_str().unwrap()).collect();
    assert_eq!(details, ["master_admin=false", "master_admin=true"], "newest first: {events}");
    let r = admin(&["users", "master-admin", "nobody"]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("user nobody not found"), "{}", r.stderr);
}
