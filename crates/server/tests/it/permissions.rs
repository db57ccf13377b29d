//! `Permissions/Object/{guid}/…`: explicit, implicit and
//! effective permissions, each status, the scopes, ManagePermissions, and
//! two administrators changing one entry at once (on SQLite, and through
//! two servers on one PostgreSQL database).

use std::sync::Arc;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use strongroom_core::secret::Secret;
use strongroom_core::vault::Rights;

use crate::config::{FULL, setup, token};
use crate::support::{PASSWORD, TestServer};

/// A request to `/vedsdk/<path>`: status and body text.
async fn send(s: &TestServer, method: Method, path: &str, t: &str, body: Option<Value>) -> (StatusCode, String) {
    let mut r = s.http.request(method, s.at(&format!("/vedsdk/{path}"))).bearer_auth(t);
    if let Some(b) = body {
        r = r.json(&b);
    }
    let r = r.send().await.unwrap();
    let status = r.status();
    (status, r.text().await.unwrap())
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| panic!("not JSON: {text}"))
}

async fn folder_guid(s: &TestServer, path: &str) -> String {
    s.store.folder_object(path.to_lowercase()).await.unwrap().unwrap().guid.braced()
}

async fn universal(s: &TestServer, name: &str) -> String {
    s.store.user_by_name(name.into()).await.unwrap().unwrap().0.id.universal()
}

#[tokio::test]
async fn permissions_answer_each_status() {
    let (s, root, bob, _) = setup().await;
    s.admin.create_folder("\\VED\\Policy\\TeamA").await.unwrap();
    s.user("alice").await;
    let g = folder_guid(&s, "\\VED\\Policy\\TeamA").await;
    let (alice, bobu) = (universal(&s, "alice").await, universal(&s, "bob").await);
    // Python percent-encodes the braces; PowerShell sends them; both forms and none work.
    let enc = |x: &str| x.replace('{', "%7B").replace('}', "%7D");
    let bare = |x: &str| x.trim_matches(|c| c == '{' || c == '}').to_owned();

    let (st, body) = send(&s, Method::GET, &format!("Permissions/Object/{}", enc(&g)), &root, None).await;
    assert_eq!((st, json_of(&body)), (StatusCode::OK, json!([])));
    let entry = format!("Permissions/Object/{}/local/{}", enc(&g), enc(&alice));
    let write_only = json!({"IsWriteAllowed": true, "IsReadAllowed": false});
    let (st, body) = send(&s, Method::POST, &entry, &root, Some(write_only.clone())).await;
    assert_eq!((st, body.as_str()), (StatusCode::CREATED, ""));
    let (st, body) = send(&s, Method::POST, &format!("permissions/object/{g}/Local/{alice}"), &root, Some(write_only)).await;
    assert_eq!((st, json_of(&body)["Error"].as_str()), (StatusCode::CONFLICT, Some("Permission already exists")));
    let (st, body) = send(&s, Method::GET, &format!("Permissions/Object/{}", bare(&g)), &root, None).await;
    assert_eq!((st, json_of(&body)), (StatusCode::OK, json!([format!("local:{alice}")])));
    let (st, body) = send(&s, Method::GET, &entry, &root, None).await;
    let v = json_of(&body);
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(
        (v["ExplicitPermissions"]["IsWriteAllowed"].as_bool(), v["ExplicitPermissions"]["IsReadAllowed"].as_bool()),
        (Some(true), Some(false))
    );
    assert_eq!(v["ExplicitPermissions"].as_object().unwrap().len(), 12);
    assert!(v["ImplicitPermissions"].as_object().unwrap().values().all(|f| f == false), "{v}");
    let (st, body) = send(&s, Method::GET, &format!("{entry}/Effective"), &root, None).await;
    let eff = &json_of(&body)["EffectivePermissions"];
    assert_eq!(
        (st, eff["IsWriteAllowed"].as_bool(), eff["IsReadAllowed"].as_bool(), eff["IsViewAllowed"].as_bool()),
        (StatusCode::OK, Some(true), Some(true), Some(false)),
        "Write implies Read"
    );
    // Inherited from above: implicit, and in effect.
    s.admin.set_rights("\\VED\\Policy", "alice", Rights::CREATE).await.unwrap();
    let v = json_of(&send(&s, Method::GET, &entry, &root, None).await.1);
    assert_eq!(
        (v["ImplicitPermissions"]["IsCreateAllowed"].as_bool(), v["ImplicitPermissions"]["IsViewAllowed"].as_bool()),
        (Some(true), Some(true))
    );
    // A principal without an explicit entry: 404 with an Error, never a 200 without ExplicitPermissions.
    let bob_entry = format!("Permissions/Object/{g}/local/{bobu}");
    let (st, body) = send(&s, Method::GET, &bob_entry, &root, None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    assert!(!json_of(&body)["Error"].as_str().unwrap().is_empty());
    let (st, body) = send(&s, Method::PUT, &bob_entry, &root, Some(json!({"IsReadAllowed": true}))).await;
    assert_eq!((st, json_of(&body)["Error"].as_str()), (StatusCode::NOT_FOUND, Some("Permission does not exist so cannot be updated")));
    // PUT replaces; DELETE deletes once.
    let (st, _) = send(&s, Method::PUT, &entry, &root, Some(json!({"IsReadAllowed": "true", "IsAssociateAllowed": 1}))).await;
    assert_eq!(st, StatusCode::OK);
    let v = json_of(&send(&s, Method::GET, &entry, &root, None).await.1);
    assert_eq!(
        (v["ExplicitPermissions"]["IsWriteAllowed"].as_bool(), v["ExplicitPermissions"]["IsAssociateAllowed"].as_bool()),
        (Some(false), Some(true))
    );
    let (st, body) = send(&s, Method::DELETE, &entry, &root, None).await;
    assert_eq!((st, body.as_str()), (StatusCode::OK, ""));
    let (st, _) = send(&s, Method::DELETE, &entry, &root, None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    // Unknown principals and objects.
    let nobody = "{00000000-1111-4111-8111-000000000000}";
    let (st, body) = send(&s, Method::GET, &format!("Permissions/Object/{g}/local/{nobody}/Effective"), &root, None).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    assert!(json_of(&body)["Error"].as_str().unwrap().contains("Unable to verify principal"));
    let (st, _) = send(&s, Method::GET, &format!("Permissions/Object/{nobody}"), &root, None).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    let (st, body) = send(&s, Method::GET, "Permissions/Object/{}", &root, None).await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "VenafiPS's empty GUID: {body}");
    let (st, _) = send(&s, Method::GET, "Permissions/Object/%7B%7D", &root, None).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    // A group is a principal too.
    let ops = s.admin.create_group("ops").await.unwrap();
    let (st, _) = send(
        &s,
        Method::POST,
        &format!("Permissions/Object/{g}/local/{}", ops.id.universal()),
        &root,
        Some(json!({"IsReadAllowed": true})),
    )
    .await;
    assert_eq!(st, StatusCode::CREATED);
    let (_, body) = send(&s, Method::GET, &format!("Permissions/Object/{g}"), &root, None).await;
    assert_eq!(json_of(&body), json!([format!("local:{}", ops.id.universal())]));
    // Bob without ManagePermissions: 403 on every call; with it inherited from above, allowed.
    let (st, _) = send(&s, Method::GET, &format!("Permissions/Object/{g}"), &bob, None).await;
    assert_eq!(st, StatusCode::FORBIDDEN);
    let (st, _) = send(&s, Method::POST, &entry, &bob, Some(json!({"IsReadAllowed": true}))).await;
    assert_eq!(st, StatusCode::FORBIDDEN);
    s.admin.set_rights("\\VED\\Policy", "bob", Rights::MANAGE_PERMISSIONS).await.unwrap();
    let (st, _) = send(&s, Method::POST, &entry, &bob, Some(json!({"IsReadAllowed": true}))).await;
    assert_eq!(st, StatusCode::CREATED);
    // The change's event names the caller.
    let events = s.store.events(strongroom_store::EventFilter { limit: 1000, ..Default::default() }).await.unwrap();
    let last = events.iter().rfind(|e| e.event.kind.as_str() == "folder.rights_changed").unwrap();
    assert_eq!(last.event.identity, format!("local:{bobu}"));
    assert_eq!(last.event.detail, "user=alice created rights=read");
    s.stop().await;
}

#[tokio::test]
async fn each_permissions_call_needs_its_scope() {
    let (s, _, _, _) = setup().await;
    s.admin.create_folder("\\VED\\Policy\\T").await.unwrap();
    s.user("alice").await;
    let root = s.store.user_by_name("root".into()).await.unwrap().unwrap().0;
    let g = folder_guid(&s, "\\VED\\Policy\\T").await;
    let entry = format!("Permissions/Object/{g}/local/{}", universal(&s, "alice").await);
    let config = token(&s, &root, "configuration:manage,delete").await;
    let read = token(&s, &root, "security").await;
    let manage = token(&s, &root, "security:manage").await;
    for (m, path, t) in [
        (Method::GET, format!("Permissions/Object/{g}"), &config),
        (Method::GET, entry.clone(), &config),
        (Method::GET, format!("{entry}/Effective"), &config),
        (Method::POST, entry.clone(), &read),
        (Method::PUT, entry.clone(), &read),
        (Method::DELETE, entry.clone(), &manage),
    ] {
        let (st, body) = send(&s, m.clone(), &path, t, Some(json!({"IsReadAllowed": true}))).await;
        assert_eq!(st, StatusCode::FORBIDDEN, "{m} {path}: {body}");
    }
    let (st, _) = send(&s, Method::POST, &entry, &manage, Some(json!({"IsReadAllowed": true}))).await;
    assert_eq!(st, StatusCode::CREATED);
    s.stop().await;
}

/// Replays the `folder.rights_changed` events on `folder` for `user` in
/// order: the entry they say should be there now, and how many changes of
/// each kind (created, replaced, deleted) they record.
async fn replay(store: &dyn strongroom_store::Store, folder: &str, user: &str) -> (Option<String>, [usize; 3]) {
    let events = store.events(strongroom_store::EventFilter { limit: 100_000, ..Default::default() }).await.unwrap();
    let (mut state, mut counts) = (None, [0; 3]);
    for e in events.iter().filter(|e| e.event.kind.as_str() == "folder.rights_changed" && e.event.object == folder) {
        let d = e.event.detail.strip_prefix(&format!("user={user} ")).unwrap();
        if let Some(r) = d.strip_prefix("created rights=") {
            assert!(state.is_none(), "a create over an entry: {d}");
            state = Some(r.to_owned());
            counts[0] += 1;
        } else if let Some(r) = d.strip_prefix("replaced rights=") {
            assert!(state.is_some(), "a replace of nothing: {d}");
            state = Some(r.to_owned());
            counts[1] += 1;
        } else {
            assert_eq!(d, "deleted");
            assert!(state.is_some(), "a delete of nothing");
            state = None;
            counts[2] += 1;
        }
    }
    (state, counts)
}

/// Two administrators (each through its own server) create, replace and
/// delete one entry at once, many rounds; every answer that says it
/// changed something must have its event, and the events replayed must
/// give the entry as it is.
async fn two_administrators_race(a: &TestServer, b: &TestServer, ta: &str, tb: &str) {
    const ROUNDS: usize = 40;
    let g = folder_guid(a, "\\VED\\Policy\\Race").await;
    let entry = format!("Permissions/Object/{g}/local/{}", universal(a, "target").await);
    async fn one_side(s: &TestServer, t: &str, entry: &str, seed: usize) -> [usize; 3] {
        let mut ok = [0; 3];
        let flags = ["IsReadAllowed", "IsWriteAllowed", "IsViewAllowed", "IsDeleteAllowed"];
        for i in 0..ROUNDS {
            let k = (i * 7 + seed) % 3;
            let flag = flags[(i + seed) % flags.len()];
            let (m, want) = match k {
                0 => (Method::POST, StatusCode::CREATED),
                1 => (Method::PUT, StatusCode::OK),
                _ => (Method::DELETE, StatusCode::OK),
            };
            let (st, body) = send(s, m.clone(), entry, t, Some(json!({ flag: true }))).await;
            if st == want {
                ok[k] += 1;
            } else {
                let refused = if k == 0 { StatusCode::CONFLICT } else { StatusCode::NOT_FOUND };
                assert_eq!(st, refused, "{m}: {body}");
            }
        }
        ok
    }
    let (x, y) = tokio::join!(one_side(a, ta, &entry, 0), one_side(b, tb, &entry, 1));
    let done = [x[0] + y[0], x[1] + y[1], x[2] + y[2]];
    let (state, counts) = replay(&*a.store, "\\VED\\Policy\\Race", "target").await;
    assert_eq!(counts, done, "every answered change has exactly one event");
    assert!(done.iter().sum::<usize>() > 10, "the race made changes: {done:?}");
    let (st, body) = send(a, Method::GET, &entry, ta, None).await;
    match state {
        None => assert_eq!(st, StatusCode::NOT_FOUND, "{body}"),
        Some(r) => {
            assert_eq!(st, StatusCode::OK, "{body}");
            let v = json_of(&body);
            let held = strongroom_core::tree::rights_from_flags(
                strongroom_core::tree::FLAGS.iter().map(|(n, _)| (*n, v["ExplicitPermissions"][n] == true)),
            );
            assert_eq!(held, Rights::parse(&r).unwrap(), "the entry is what the last event says");
        }
    }
    assert!(a.admin.verify_events().await.is_ok(), "the chain holds");
}

async fn race_setup(s: &TestServer) {
    s.integration("admin-app", FULL, |_| {}).await;
    s.admin.create_user("root", &Secret::new(PASSWORD), true).await.unwrap();
    s.admin.create_user("root2", &Secret::new(PASSWORD), true).await.unwrap();
    s.user("target").await;
    s.admin.create_folder("\\VED\\Policy\\Race").await.unwrap();
}

#[tokio::test]
async fn two_administrators_changing_one_entry_lose_no_write_on_sqlite() {
    let s = TestServer::start().await;
    race_setup(&s).await;
    let r1 = s.store.user_by_name("root".into()).await.unwrap().unwrap().0;
    let r2 = s.store.user_by_name("root2".into()).await.unwrap().unwrap().0;
    let (t1, t2) = (token(&s, &r1, FULL).await, token(&s, &r2, FULL).await);
    two_administrators_race(&s, &s, &t1, &t2).await;
    s.stop().await;
}

#[tokio::test]
async fn two_administrators_on_two_replicas_lose_no_write_on_postgres() {
    let Some(url) = crate::support::pg_url_or_skip("permissions race on PostgreSQL") else { return };
    let url = strongroom_store::postgres::testing::fresh_schema_url(&url).await.unwrap();
    let one: Arc<dyn strongroom_store::Store> = strongroom_store::open(&url).await.unwrap();
    let two: Arc<dyn strongroom_store::Store> = strongroom_store::open(&url).await.unwrap();
    let a = TestServer::start_on_store(one).await;
    let b = TestServer::start_on_store(two).await;
    race_setup(&a).await;
    let r1 = a.store.user_by_name("root".into()).await.unwrap().unwrap().0;
    let r2 = a.store.user_by_name("root2".into()).await.unwrap().unwrap().0;
    let (t1, t2) = (token(&a, &r1, FULL).await, token(&b, &r2, FULL).await);
    two_administrators_race(&a, &b, &t1, &t2).await;
    a.stop().await;
    b.stop().await;
}

/// A delegated manager (not a Master Admin) holding ManagePermissions adds
/// an entry; once the Master Admin removes their right through the API,
/// their next POST is 403 and writes nothing. The handle acting for them
/// (API and console alike) is refused at the write too, and a change on a
/// folder gone by then is not found, not a failure.
#[tokio::test]
async fn a_delegated_manager_loses_the_right_to_change_permissions_at_once() {
    use strongroom_app::admin::AdminError;
    use strongroom_store::{Holder, RightsChange};
    let (s, root, bob_token, bob) = setup().await;
    s.admin.create_folder("\\VED\\Policy\\TeamA").await.unwrap();
    s.user("alice").await;
    s.user("carol").await;
    let g = folder_guid(&s, "\\VED\\Policy\\TeamA").await;
    let (alice, carol, bobu) = (universal(&s, "alice").await, universal(&s, "carol").await, bob.id.universal());
    let bob_entry = format!("Permissions/Object/{g}/local/{bobu}");
    let (st, body) = send(&s, Method::POST, &bob_entry, &root, Some(json!({"IsManagePermissionsAllowed": true}))).await;
    assert_eq!(st, StatusCode::CREATED, "{body}");

    let (st, body) =
        send(&s, Method::POST, &format!("Permissions/Object/{g}/local/{alice}"), &bob_token, Some(json!({"IsReadAllowed": true}))).await;
    assert_eq!(st, StatusCode::CREATED, "{body}");
    let by_bob = |events: &[strongroom_core::event::StoredEvent]| {
        events.iter().filter(|e| e.event.kind.as_str() == "folder.rights_changed" && e.event.identity == format!("local:{bobu}")).count()
    };
    let all = || s.store.events(strongroom_store::EventFilter { limit: 10_000, ..Default::default() });
    assert_eq!(by_bob(&all().await.unwrap()), 1);

    // The Master Admin takes bob's right away through the API.
    let (st, body) = send(&s, Method::DELETE, &bob_entry, &root, None).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let carol_entry = format!("Permissions/Object/{g}/local/{carol}");
    let (st, body) = send(&s, Method::POST, &carol_entry, &bob_token, Some(json!({"IsReadAllowed": true}))).await;
    assert_eq!(st, StatusCode::FORBIDDEN, "{body}");
    let (st, _) = send(&s, Method::GET, &carol_entry, &root, None).await;
    assert_eq!(st, StatusCode::NOT_FOUND, "nothing was written");
    assert_eq!(by_bob(&all().await.unwrap()), 1, "no event for the refused change");

    // The write itself re-checks: a handle acting for bob (as the API and the console build it) is refused there.
    let actor = strongroom_app::admin::Actor { identity: bob.id.identity(), source: "192.0.2.9".into(), request_id: "r".into() };
    let for_bob = s.admin.acting_as(actor).on_behalf_of(bob.id.clone());
    let team = strongroom_core::vault::FolderPath::parse("\\VED\\Policy\\TeamA").unwrap();
    let carol_id = s.store.user_by_name("carol".into()).await.unwrap().unwrap().0.id;
    let refused = for_bob.change_permission(&team, Holder::User(carol_id.clone()), "carol", RightsChange::Create(Rights::READ)).await;
    assert!(matches!(refused, Err(AdminError::Forbidden(_))), "{refused:?}");
    assert!(matches!(for_bob.set_rights("\\VED\\Policy\\TeamA", "carol", Rights::READ).await, Err(AdminError::Forbidden(_))));
    assert!(matches!(for_bob.set_group_rights("\\VED\\Policy\\TeamA", "nobody", Rights::READ).await, Err(AdminError::NotFound(_))));
    assert_eq!(by_bob(&all().await.unwrap()), 1);
    // Given back, the same handle may.
    s.admin.set_rights("\\VED\\Policy", "bob", Rights::MANAGE_PERMISSIONS).await.unwrap();
    assert!(for_bob.set_rights("\\VED\\Policy\\TeamA", "carol", Rights::READ).await.is_ok());
    assert_eq!(by_bob(&all().await.unwrap()), 2);

    // A folder deleted before the write: not found (the API answers it as the missing object it is).
    let gone = strongroom_core::vault::FolderPath::parse("\\VED\\Policy\\Gone").unwrap();
    let missing = s.admin.change_permission(&gone, Holder::User(carol_id), "carol", RightsChange::Create(Rights::READ)).await;
    assert!(matches!(missing, Err(AdminError::NotFound(_))), "{missing:?}");
    s.stop().await;
}
