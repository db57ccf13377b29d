//! M1-M6: what an outside probe of the release binary found, each attacked
//! as the probe did, over HTTP on the in-process server (its manual clock
//! moves the time the JWT, replay and quota checks wait on).
//!
//! - M1: a recursive folder delete by someone who could not delete an entry
//!   through the vault leaves that entry as an orphan, not destroyed.
//! - M2: console sessions end on the server: a copy of the cookie taken
//!   before a sign-out, a password reset or a disable works no more.
//! - M3: an ES256 JWT without `jti`, once used, is refused when presented
//!   again with its signature's twin (r, n − s).
//! - M4: JWT replay records are purged by the janitor at their expiry.
//! - M5: `POST Log` holds a per-identity quota under a parallel flood.
//! - M6: taking a user off an integration's allow-list, or disabling the
//!   integration, revokes: put back or enabled, old tokens stay dead.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use reqwest::StatusCode;
use serde_json::{Value, json};

use strongroom_app::admin::IntegrationSpec;
use strongroom_app::admin::machines::MappingSpec;
use strongroom_core::secret::Secret;
use strongroom_core::time::Clock as _;
use strongroom_core::vault::Rights;
use strongroom_store::EventFilter;

use super::report;
use crate::config::result;
use crate::console::Console;
use crate::support::{PASSWORD, TestServer};

fn tok(v: &Value, k: &str) -> String {
    v[k].as_str().unwrap_or_else(|| panic!("no {k} in {v}")).to_owned()
}

async fn verify(s: &TestServer, access: &str) -> StatusCode {
    s.get_bearer("/vedauth/Authorize/Verify", access).await.0
}

/// M1: bob's entry under `\VED\Policy\K7\team`; alice holds View and Delete
/// on `\VED\Policy\K7` and a `configuration:delete` token. The vault refuses
/// her `OwnerDelete` (Result 10); her recursive `Config/Delete` succeeds, and
/// the entry is kept as an orphan that a Master Admin finds and re-owns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn m1_recursive_delete_keeps_entries_as_orphans() {
    let s = TestServer::start().await;
    let scope = "configuration:delete,manage;restricted:delete,manage";
    s.integration("admin-app", scope, |_| {}).await;
    let root = s.admin.create_user("root", &Secret::new(PASSWORD), true).await.unwrap();
    let bob = s.vault_user("bob", "\\VED\\Policy\\K7\\team", "view,read,write").await;
    let alice = s.user("alice").await;
    s.admin.set_rights("\\VED\\Policy\\K7", "alice", Rights::VIEW.union(Rights::DELETE)).await.unwrap();
    let s = &s;
    let token = |u| async move { tok(&s.tokens_for(u, "admin-app", scope).await, "access_token") };
    let (bt, at, rt) = (token(&bob).await, token(&alice).await, token(&root).await);
    let (st, v) = s
        .sdk(
            "Add",
            &bt,
            json!({"VaultType": 32, "Keyname": "Software:Default", "Namespace": "config", "Owner": "\\VED\\Policy\\K7\\team", "Base64Data": "c2VjcmV0"}),
        )
        .await;
    assert_eq!((st, v["Result"].as_i64()), (StatusCode::OK, Some(0)), "{v}");
    let id = v["VaultID"].as_i64().unwrap();
    let (_, v) = s.sdk("OwnerDelete", &at, json!({"Namespace": "config", "Owner": "\\VED\\Policy\\K7\\team", "VaultID": id})).await;
    let owner_delete = v["Result"].as_i64().unwrap_or(-1);
    let (folder_delete, _) = result(s, "Config/Delete", &at, json!({"ObjectDN": "\\VED\\Policy\\K7", "Recursive": true})).await;
    let (_, v) = s.sdk("OrphanLookup", &rt, json!({})).await;
    let orphans: Vec<i64> = v["VaultIDs"].as_array().map(|a| a.iter().filter_map(Value::as_i64).collect()).unwrap_or_default();
    let (_, v) = s.sdk("Retrieve", &rt, json!({"VaultID": id})).await;
    let kept = v["Result"].as_i64() == Some(0) && v["Base64Data"] == "c2VjcmV0";
    s.admin.create_folder("\\VED\\Policy\\Rescued").await.unwrap();
    let (_, v) = s.sdk("OwnerAdd", &rt, json!({"Namespace": "config", "Owner": "\\VED\\Policy\\Rescued", "VaultID": id})).await;
    let reowned = v["Result"].as_i64() == Some(0);
    let (_, v) = s.sdk("OrphanLookup", &rt, json!({})).await;
    let after = v["VaultIDs"].as_array().map_or(0, Vec::len);
    let m1 = report(
        "M1",
        "recursive folder delete keeps entries",
        &format!(
            "alice (View+Delete on K7, configuration:delete): OwnerDelete of bob's entry Result {owner_delete}; Config/Delete \
             Recursive Result {folder_delete}; OrphanLookup {orphans:?} (the entry {id}); its value retrieved by a Master Admin: \
             {kept}; re-owned: {reowned}, orphans afterwards {after}. Before: the entry was deleted, OrphanLookup empty"
        ),
        owner_delete == 10 && folder_delete == 1 && orphans == [id] && kept && reowned && after == 0,
    );
    assert!(m1, "M1");
}

/// M2: a copy of a Master Admin's console cookie, taken before the sign-out
/// (and before a password reset, a disable, an administrator's end of
/// sessions), creates nothing afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn m2_console_sessions_end_on_the_server() {
    let s = TestServer::start().await;
    s.admin.create_user("root", &Secret::new(PASSWORD), true).await.unwrap();
    s.admin.create_user("other", &Secret::new(PASSWORD), true).await.unwrap();
    let stolen_then = |what: &'static str| {
        let s = &s;
        async move {
            let mut owner = Console::signed_in(s, "root").await;
            let mut thief = Console::open(s).await;
            thief.cookies = owner.cookies.clone();
            thief.csrf = owner.csrf.clone();
            assert_eq!(thief.get("/admin/users").await.0, StatusCode::OK, "the copy works before");
            match what {
                "sign-out" => assert_eq!(owner.post("/admin/signout", &[]).await.0, StatusCode::SEE_OTHER),
                "password reset" => {
                    s.admin.set_password("root", &Secret::new(PASSWORD), true).await.unwrap();
                }
                "end-sessions" => s.admin.end_console_sessions("root").await.unwrap(),
                _ => unreachable!(),
            }
            let name = format!("made-after-{}", what.replace(' ', "-"));
            let (st, _) = thief.post("/admin/users/create", &[("name", &name), ("password", "a long new password 1")]).await;
            let page = thief.get("/admin/users").await.0;
            let made = s.admin.list_users().await.unwrap().iter().any(|u| u.name == name);
            (st, page, made)
        }
    };
    let mut figures = Vec::new();
    let mut pass = true;
    for what in ["sign-out", "password reset", "end-sessions"] {
        let (st, page, made) = stolen_then(what).await;
        figures.push(format!("after {what}: create {} (user made: {made}), page {}", st.as_u16(), page.as_u16()));
        pass &= st == StatusCode::UNAUTHORIZED && page == StatusCode::SEE_OTHER && !made;
    }
    // Disabled: the other Master Admin's copy ends too; an unrelated session goes on.
    let mut other = Console::signed_in(&s, "other").await;
    let mut root = Console::signed_in(&s, "root").await;
    s.admin.set_user_disabled("other", true).await.unwrap();
    let disabled = other.get("/admin/users").await.0;
    let unrelated = root.get("/admin/users").await.0;
    figures.push(format!("after disable: {}; another user's session {}", disabled.as_u16(), unrelated.as_u16()));
    pass &= disabled == StatusCode::SEE_OTHER && unrelated == StatusCode::OK;
    let ended = s
        .store
        .events(EventFilter { kind: Some("user.console_sessions_ended".into()), limit: 100, ..Default::default() })
        .await
        .unwrap()
        .len();
    figures.push(format!("{ended} user.console_sessions_ended events"));
    pass &= ended == 2;
    let m2 = report(
        "M2",
        "console sessions end on the server",
        &format!("{}. Before: the copied cookie created a Master Admin after a reset (200)", figures.join("; ")),
        pass,
    );
    assert!(m2, "M2");
}

/// M3 and M4: an ES256 issuer whose keys are a file; tokens without `jti`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn m3_m4_es256_twins_and_replay_records() {
    let s = TestServer::start().await;
    let es = crate::support::Es256Issuer::save(&s, |i| {
        i.clock_skew = Some(0);
        i.max_lifetime = Some(600);
    })
    .await;
    let issuer = crate::support::Es256Issuer::ISSUER;
    s.integration("ci", "restricted", |i| i.allow_all_users = false).await;
    let spec = MappingSpec { name: "deploy".into(), clients: vec!["ci".into()], scope: "restricted".into() };
    s.admin.save_jwt_mapping(spec, "es", &["sub=repo:*".into()], "sub").await.unwrap();
    let sign = |n: u32| {
        let now = s.clock.now().secs();
        let claims = json!({"iss": issuer, "aud": "strongroom", "sub": format!("repo:{n}"), "iat": now, "exp": now + 20});
        let (input, sig) = es.sign_parts(&claims);
        let (r, s_part) = sig.split_at(32);
        let twin = [r, &strongroom_testkit::jwt::p256_twin(s_part)].concat();
        (format!("{input}.{}", URL_SAFE_NO_PAD.encode(&sig)), format!("{input}.{}", URL_SAFE_NO_PAD.encode(twin)))
    };
    let server = &s;
    let present = |jwt: String| async move {
        server.post_json("/vedauth/authorize/jwt", json!({"client_id": "ci", "jwt": jwt, "scope": "restricted"})).await
    };
    // M3: each token once, then its twin.
    let (mut first_ok, mut twins_refused) = (0, 0);
    const TOKENS: u32 = 10;
    for n in 0..TOKENS {
        let (jwt, twin) = sign(n);
        first_ok += u32::from(present(jwt).await.0 == StatusCode::OK);
        let (st, v) = present(twin).await;
        twins_refused += u32::from(st == StatusCode::BAD_REQUEST && v["error"] == "invalid_grant");
    }
    let m3 = report(
        "M3",
        "ES256 signature twin replay",
        &format!(
            "{TOKENS} ES256 JWTs without jti: {first_ok} accepted once; their twins (r, n - s): {twins_refused}/{TOKENS} refused \
             400 invalid_grant. Before: each twin accepted once more"
        ),
        first_ok == TOKENS && twins_refused == TOKENS,
    );
    // M4: their replay records, purged by the janitor once their tokens expired.
    let rows = || {
        let db = rusqlite::Connection::open(s.db_path()).unwrap();
        db.query_row("SELECT count(*) FROM jwt_replay", [], |r| r.get::<_, i64>(0)).unwrap()
    };
    let written = rows();
    s.clock.advance_secs(19);
    strongroom_server::serve::upkeep(&s.state, 1, None).await;
    let before_expiry = rows();
    s.clock.advance_secs(2);
    strongroom_server::serve::upkeep(&s.state, 1, None).await;
    let after_expiry = rows();
    let m4 = report(
        "M4",
        "JWT replay records purged at expiry",
        &format!(
            "{written} records of 20-second JWTs; one janitor round (the minute's, not the ten minutes') at 19 s left \
             {before_expiry}, at 21 s {after_expiry} (manual clock). Before: 300 records stayed for 16 minutes and after a restart"
        ),
        written == i64::from(TOKENS) && before_expiry == written && after_expiry == 0,
    );
    assert!(m3, "M3");
    assert!(m4, "M4");
}

/// M5: 200 `POST Log` at once with one user's token: 120 written, 80
/// refused 429 with `Retry-After`; another user's go on; a minute later,
/// room again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn m5_client_event_quota_under_a_parallel_flood() {
    let s = TestServer::start().await;
    s.integration("app", "restricted", |_| {}).await;
    let (alice, bob) = (s.user("alice").await, s.user("bob").await);
    let at = tok(&s.tokens_for(&alice, "app", "restricted").await, "access_token");
    let bt = tok(&s.tokens_for(&bob, "app", "restricted").await, "access_token");
    let body = json!({"Component": "\\VED\\Policy", "ID": 1, "Text1": "x".repeat(1000)});
    let post = |t: String| {
        let (http, url, body) = (s.http.clone(), s.at("/vedsdk/Log"), body.clone());
        async move {
            let r = http.post(url).bearer_auth(t).json(&body).send().await.unwrap();
            let retry = r.headers().get("retry-after").and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<i64>().ok());
            let st = r.status();
            let v: Value = r.json().await.unwrap();
            (st, v["LogResult"].as_i64(), retry)
        }
    };
    const FLOOD: usize = 200;
    let tasks: Vec<_> = (0..FLOOD).map(|_| tokio::spawn(post(at.clone()))).collect();
    let (mut written, mut refused, mut retry_ok) = (0, 0, 0);
    for t in tasks {
        match t.await.unwrap() {
            (StatusCode::OK, Some(0), _) => written += 1,
            (StatusCode::TOO_MANY_REQUESTS, Some(1), Some(r)) => {
                refused += 1;
                retry_ok += usize::from((1..=60).contains(&r));
            }
            other => panic!("unexpected answer {other:?}"),
        }
    }
    let stored = |s: &TestServer| {
        let store = s.store.clone();
        async move { store.events(EventFilter { kind: Some("client.log".into()), limit: 1000, ..Default::default() }).await.unwrap().len() }
    };
    let in_log = stored(&s).await;
    let other = post(bt.clone()).await.0;
    s.clock.advance_secs(60);
    let later = post(at.clone()).await.0;
    let m5 = report(
        "M5",
        "POST Log quota",
        &format!(
            "{FLOOD} events of 1 KB at once from one identity: {written} written, {refused} refused 429 ({retry_ok} with \
             Retry-After 1-60 s), {in_log} in the log; another identity meanwhile {}; a minute later {}. Before: 10,000 events \
             in 12.7 s",
            other.as_u16(),
            later.as_u16()
        ),
        written == 120
            && refused == FLOOD - 120
            && retry_ok == refused
            && in_log == 120
            && other == StatusCode::OK
            && later == StatusCode::OK,
    );
    assert!(m5, "M5");
}

/// M6: alice off the allow-list, then back: her old tokens stay dead; the
/// integration disabled, then enabled: bob's old tokens stay dead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn m6_allow_list_removal_and_disable_revoke() {
    let s = TestServer::start().await;
    let (alice, bob) = (s.user("alice").await, s.user("bob").await);
    let only =
        |names: &[&str]| IntegrationSpec { allow_users: Some(names.iter().map(|n| (*n).to_owned()).collect()), ..Default::default() };
    s.integration("app", "restricted", |i| {
        i.allow_all_users = false;
        i.allow_users = Some(vec!["alice".into(), "bob".into()]);
    })
    .await;
    let ta = s.tokens_for(&alice, "app", "restricted").await;
    let tb = s.tokens_for(&bob, "app", "restricted").await;
    let alive = |t: &Value| {
        let (access, refresh) = (tok(t, "access_token"), tok(t, "refresh_token"));
        let s = &s;
        async move { (verify(s, &access).await, s.refresh("app", &refresh).await.0) }
    };
    let before = verify(&s, &tok(&ta, "access_token")).await;
    s.admin.update_integration("app", only(&["bob"])).await.unwrap();
    let off = verify(&s, &tok(&ta, "access_token")).await;
    s.admin.update_integration("app", only(&["alice", "bob"])).await.unwrap();
    let (back_access, back_refresh) = alive(&ta).await;
    let bob_meanwhile = verify(&s, &tok(&tb, "access_token")).await;
    s.admin.update_integration("app", IntegrationSpec { disabled: Some(true), ..Default::default() }).await.unwrap();
    s.admin.update_integration("app", IntegrationSpec { disabled: Some(false), ..Default::default() }).await.unwrap();
    let (enabled_access, enabled_refresh) = alive(&tb).await;
    let fresh = verify(&s, &tok(&s.tokens_for(&alice, "app", "restricted").await, "access_token")).await;
    let m6 = report(
        "M6",
        "allow-list removal and disable revoke",
        &format!(
            "alice's access token {} before, {} once off the list; put back: access {}, refresh {}; bob's meanwhile {}; \
             integration disabled then enabled: bob's access {}, refresh {}; a new grant afterwards {}. Before: put back or \
             enabled, the old access tokens worked again",
            before.as_u16(),
            off.as_u16(),
            back_access.as_u16(),
            back_refresh.as_u16(),
            bob_meanwhile.as_u16(),
            enabled_access.as_u16(),
            enabled_refresh.as_u16(),
            fresh.as_u16()
        ),
        before == StatusCode::OK
            && off == StatusCode::UNAUTHORIZED
            && back_access == StatusCode::UNAUTHORIZED
            && back_refresh == StatusCode::BAD_REQUEST
            && bob_meanwhile == StatusCode::OK
            && enabled_access == StatusCode::UNAUTHORIZED
            && enabled_refresh == StatusCode::BAD_REQUEST
            && fresh == StatusCode::OK,
    );
    assert!(m6, "M6");
}
