//! Groups and the product's Identity calls over HTTP: `Validate`, `Browse`,
//! `GetMemberships`, `GetMembers` as VenafiPS and pyvenafi send them, the page
//! of applications a person approved, and a
//! removal from a group reaching a token that already exists at its next
//! use (the bound is zero: nothing about memberships is cached).

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::support::TestServer;

async fn identity(s: &TestServer, op: &str, token: &str, body: Value) -> (StatusCode, String) {
    let r = s.http.post(s.at(&format!("/vedsdk/Identity/{op}"))).bearer_auth(token).json(&body).send().await.unwrap();
    (r.status(), r.text().await.unwrap())
}

async fn identities(s: &TestServer, op: &str, token: &str, body: Value) -> Vec<String> {
    let (st, text) = identity(s, op, token, body).await;
    assert_eq!(st, StatusCode::OK, "{op}: {text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    v["Identities"].as_array().unwrap().iter().map(|e| e["PrefixedName"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn the_identity_calls_answer_the_products_entries() {
    let s = TestServer::start().await;
    let alice = s.user("alice").await;
    s.user("alan").await;
    s.user("bob").await;
    let ops = s.admin.create_group("ops").await.unwrap();
    s.admin.create_group("alpha-team").await.unwrap();
    s.admin.add_member("ops", "alice").await.unwrap();
    s.admin.add_member("alpha-team", "alice").await.unwrap();
    s.integration("ps", "configuration:manage", |_| {}).await;
    let t = s.tokens_for(&alice, "ps", "configuration:manage").await;
    let at = t["access_token"].as_str().unwrap();

    // Validate, by every form clients send.
    for id in [
        json!({"PrefixedName": "local:alice"}),
        json!({"PrefixedUniversal": alice.id.identity()}),
        json!({"PrefixedUniversal": format!("local:{}", alice.id)}),
        json!({"Universal": format!("{{{}}}", alice.id.as_str().to_uppercase())}),
        json!("local:ALICE"),
    ] {
        let (st, text) = identity(&s, "Validate", at, json!({"ID": id})).await;
        assert_eq!(st, StatusCode::OK, "{text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            v["ID"],
            json!({"FullName": "\\VED\\Identity\\alice", "Name": "alice", "Prefix": "local", "PrefixedName": "local:alice",
                   "PrefixedUniversal": alice.id.identity(), "Type": 1, "Universal": format!("{{{}}}", alice.id)}),
            "{id}"
        );
    }
    let (_, text) = identity(&s, "Validate", at, json!({"id": {"prefixedname": "local:ops"}})).await;
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!((v["ID"]["Type"].as_i64(), v["ID"]["PrefixedUniversal"].as_str()), (Some(2), Some(ops.id.identity().as_str())));
    // Unknown: HTTP 200 with an empty body, as the product answers.
    for id in [json!({"PrefixedName": "local:nobody"}), json!({"PrefixedName": "AD+corp:alice"}), json!(format!("local:{{{}}}", uuid()))] {
        assert_eq!(identity(&s, "Validate", at, json!({"ID": id})).await, (StatusCode::OK, String::new()), "{id}");
    }
    // Bad input: 400 with `Error`, never a 5xx.
    for body in
        [json!({}), json!({"ID": 5}), json!({"ID": {"PrefixedName": 5}}), json!({"ID": "local:{nope}"}), json!({"ID": "x".repeat(300)})]
    {
        let (st, text) = identity(&s, "Validate", at, body.clone()).await;
        assert_eq!(st, StatusCode::BAD_REQUEST, "{body}: {text}");
        assert!(serde_json::from_str::<Value>(&text).unwrap()["Error"].is_string());
    }

    // Browse: a prefix in any case, users first, Limit, IdentityType.
    assert_eq!(
        identities(&s, "Browse", at, json!({"Filter": "AL", "Limit": 50, "IdentityType": 11})).await,
        ["local:alan", "local:alice", "local:alpha-team"]
    );
    assert_eq!(
        identities(&s, "Browse", at, json!({"Filter": "al", "Limit": "2", "IdentityType": "11"})).await,
        ["local:alan", "local:alice"]
    );
    assert_eq!(identities(&s, "Browse", at, json!({"Filter": "al", "IdentityType": 2})).await, ["local:alpha-team"]);
    assert_eq!(identities(&s, "Browse", at, json!({"Filter": "a*e", "IdentityType": 1})).await, ["local:alice"]);
    assert!(identities(&s, "Browse", at, json!({"Filter": "zzz"})).await.is_empty());
    for body in [json!({"Limit": 0}), json!({"IdentityType": 0}), json!({"Limit": "many"})] {
        assert_eq!(identity(&s, "Browse", at, body).await.0, StatusCode::BAD_REQUEST);
    }

    // Memberships and members.
    assert_eq!(
        identities(&s, "GetMemberships", at, json!({"ID": {"PrefixedName": "local:alice"}})).await,
        ["local:alpha-team", "local:ops"]
    );
    assert!(identities(&s, "GetMemberships", at, json!({"ID": {"PrefixedName": "local:bob"}})).await.is_empty());
    assert_eq!(
        identities(&s, "GetMembers", at, json!({"ID": {"PrefixedUniversal": ops.id.identity()}, "ResolveNested": "1"})).await,
        ["local:alice"]
    );
    assert_eq!(identity(&s, "GetMembers", at, json!({"ID": {"PrefixedName": "local:alice"}})).await.0, StatusCode::BAD_REQUEST, "a user");
    assert_eq!(identity(&s, "GetMemberships", at, json!({"ID": {"PrefixedName": "local:nobody"}})).await.0, StatusCode::BAD_REQUEST);

    // Scope `configuration`, as the product; a bad token is 401 whatever the body.
    s.integration("vault", "restricted:manage", |_| {}).await;
    let other = s.tokens_for(&alice, "vault", "restricted:manage").await;
    for op in ["Validate", "Browse", "GetMemberships", "GetMembers"] {
        assert_eq!(identity(&s, op, other["access_token"].as_str().unwrap(), json!({})).await.0, StatusCode::FORBIDDEN, "{op}");
        assert_eq!(identity(&s, op, "AAAA", json!("not an object")).await.0, StatusCode::UNAUTHORIZED, "{op}");
    }
}

fn uuid() -> String {
    "0b8f7f8e-1111-4222-8333-444455556666".into()
}

fn result(v: &Value) -> i64 {
    v["Result"].as_i64().unwrap()
}

/// A removal from a group takes effect on a token that already exists at
/// its next use: the vault write after it is refused (Result 10) with the
/// same access token, no refresh needed; and when the group was what
/// allowed the user on the integration, the token stops (401) and its
/// refresh is refused.
#[tokio::test]
async fn a_removal_from_a_group_reaches_live_tokens_at_their_next_use() {
    let s = TestServer::start().await;
    let alice = s.user("alice").await;
    s.admin.create_group("writers").await.unwrap();
    s.admin.create_group("app-users").await.unwrap();
    s.admin.create_folder("\\VED\\Policy\\Team").await.unwrap();
    // Alice reads of her own; Write comes from the group.
    s.admin.set_rights("\\VED\\Policy\\Team", "alice", strongroom_core::vault::Rights::READ).await.unwrap();
    s.admin.set_group_rights("\\VED\\Policy\\Team", "writers", strongroom_core::vault::Rights::WRITE).await.unwrap();
    for g in ["writers", "app-users"] {
        s.admin.add_member(g, "alice").await.unwrap();
    }
    s.integration("app", "restricted:manage", |spec| {
        spec.allow_all_users = false;
        spec.allow_groups = Some(vec!["app-users".into()]);
        spec.password = Some(true);
    })
    .await;
    let t = s.tokens_for(&alice, "app", "restricted:manage").await;
    let at = t["access_token"].as_str().unwrap().to_owned();
    let (_, v) =
        s.sdk("Add", &at, json!({"VaultType": 32, "Namespace": "config", "Owner": "\\VED\\Policy\\Team", "Base64Data": "c2VjcmV0"})).await;
    assert_eq!(result(&v), 0, "{v}");
    let id = v["VaultID"].as_i64().unwrap();
    let associate = |n: &str| s.sdk("Associate", &at, json!({"VaultID": id, "Name": n, "StringValue": "v"}));
    assert_eq!(result(&associate("before").await.1), 0);

    // Out of the group that gave Write: the next write is refused, the token still works.
    s.admin.remove_member("writers", "alice").await.unwrap();
    let (st, v) = associate("after").await;
    assert_eq!((st, result(&v)), (StatusCode::OK, 10), "{v}");
    assert_eq!(s.get_bearer("/vedauth/authorize/verify", &at).await.0, StatusCode::OK);

    // Out of the group the integration allows: the token stops at once, its refresh is refused.
    s.admin.remove_member("app-users", "alice").await.unwrap();
    assert_eq!(s.get_bearer("/vedauth/authorize/verify", &at).await.0, StatusCode::UNAUTHORIZED);
    let (st, v) = s.refresh("app", t["refresh_token"].as_str().unwrap()).await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{v}");
    assert_eq!(v["error"], "unauthorized_client", "{v}");
    // Back in: the grant stands again (removal is not revocation, as for the allow-list).
    s.admin.add_member("app-users", "alice").await.unwrap();
    assert_eq!(s.get_bearer("/vedauth/authorize/verify", &at).await.0, StatusCode::OK);
    // A new device approval or password grant needs the membership too.
    s.admin.remove_member("app-users", "alice").await.unwrap();
    let d = s.start_device("app", "restricted:manage").await;
    let page = strongroom_testkit::page::Page::open(&s.http, d["verification_uri_complete"].as_str().unwrap()).await.with_origin(&s.url);
    let (status, html) = page.sign_in(d["user_code"].as_str().unwrap(), "alice", crate::support::PASSWORD).await;
    assert_eq!(status, 403, "{html}");
    assert!(html.contains("may not use this application"), "{html}");
    let (st, v) = s
        .post_json(
            "/vedauth/authorize/oauth",
            json!({"client_id": "app", "username": "alice", "password": crate::support::PASSWORD, "scope": "restricted:manage"}),
        )
        .await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{v}");
    assert_eq!(v["error"], "unauthorized_client", "{v}");
}

/// "Applications I have approved": a person signs in, sees their live
/// grants (application, scope, when approved, when tokens were last
/// issued), revokes one: its tokens stop at once; another person's grant
/// cannot be revoked with their list, nor with a list of another browser.
#[tokio::test]
async fn a_person_sees_and_revokes_the_applications_they_approved() {
    let s = TestServer::start().await;
    let alice = s.user("alice").await;
    let bob = s.user("bob").await;
    s.integration("vcert-sdk", "certificate:manage", |_| {}).await;
    s.integration("vault-app", "restricted:manage", |_| {}).await;
    let a1 = s.tokens_for(&alice, "vcert-sdk", "certificate:manage").await;
    let a2 = s.tokens_for(&alice, "vault-app", "restricted:manage").await;
    let b1 = s.tokens_for(&bob, "vault-app", "restricted:manage").await;
    let grants = s.store.list_grants(false, s.state.now()).await.unwrap();
    let id_of = |user: &str, app: &str| {
        grants.iter().find(|g| g.user_name == user && g.grant.client_id == app).unwrap().grant.id.as_str().to_owned()
    };

    let page = strongroom_testkit::page::Page::open(&s.http, &s.at("/vedauth/device/grants")).await.with_origin(&s.url);
    let (st, html) = page.post("/vedauth/device/grants", &[("username", "alice"), ("password", "wrong")], &[]).await;
    assert_eq!(st, 401, "{html}");
    let (st, html) = page.post("/vedauth/device/grants", &[("username", "alice"), ("password", crate::support::PASSWORD)], &[]).await;
    assert_eq!(st, 200, "{html}");
    assert!(html.contains("vcert-sdk app") && html.contains("vault-app app"), "{html}");
    assert!(html.contains("certificate:manage") && html.contains("restricted:manage"), "{html}");
    // From where: the client address of each grant's last token issue.
    assert_eq!(html.matches(r#" to <span class="addr">127.0.0.1</span>"#).count(), 2, "{html}");
    assert!(!html.contains(&id_of("bob", "vault-app")), "only alice's grants: {html}");
    let ticket = strongroom_testkit::page::hidden_field(&html, "ticket").unwrap();

    // Bob's grant with alice's list: nothing happens to it.
    let (st, _) = page.post("/vedauth/device/grants/revoke", &[("ticket", &ticket), ("grant", &id_of("bob", "vault-app"))], &[]).await;
    assert_eq!(st, 200);
    assert_eq!(s.get_bearer("/vedauth/authorize/verify", b1["access_token"].as_str().unwrap()).await.0, StatusCode::OK);
    // Alice's list in another browser (another anti-forgery token): refused.
    let other = strongroom_testkit::page::Page::open(&s.http, &s.at("/vedauth/device/grants")).await.with_origin(&s.url);
    let (st, _) = other.post("/vedauth/device/grants/revoke", &[("ticket", &ticket), ("grant", &id_of("alice", "vault-app"))], &[]).await;
    assert_eq!(st, 400);
    // Alice revokes vault-app: its tokens stop at once, vcert-sdk's work on.
    let (st, html) = page.post("/vedauth/device/grants/revoke", &[("ticket", &ticket), ("grant", &id_of("alice", "vault-app"))], &[]).await;
    assert_eq!(st, 200, "{html}");
    assert!(html.contains("Access of vault-app app revoked") && !html.contains(&id_of("alice", "vault-app")), "{html}");
    assert_eq!(s.get_bearer("/vedauth/authorize/verify", a2["access_token"].as_str().unwrap()).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(s.refresh("vault-app", a2["refresh_token"].as_str().unwrap()).await.0, StatusCode::BAD_REQUEST);
    assert_eq!(s.get_bearer("/vedauth/authorize/verify", a1["access_token"].as_str().unwrap()).await.0, StatusCode::OK);
    let revoked = s.store.events(strongroom_store::EventFilter { kind: Some("grant.revoked".into()), limit: 10, ..Default::default() });
    let e = revoked.await.unwrap().pop().unwrap().event;
    assert_eq!((e.identity, e.object), (alice.id.identity(), id_of("alice", "vault-app")));
    // Without a cookie's token, or from another origin: refused.
    let r = s
        .http
        .post(s.at("/vedauth/device/grants/revoke"))
        .form(&[("csrf", "x"), ("ticket", &ticket), ("grant", "g")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
}
