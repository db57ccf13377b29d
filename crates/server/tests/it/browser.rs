//! The approval page in a real browser: headless Chromium driven through
//! ChromeDriver (the test kit's `browser`: `fantoccini`, ChromeDriver on a
//! port it picks itself).

use reqwest::StatusCode;
use serde_json::Value;
use std::time::Duration;

use strongroom_testkit::browser::ChromeDriver;

use crate::support::{PASSWORD, TestServer};

/// The page's title without the site's name: the page's heading.
fn heading(title: &str) -> String {
    title.trim_end_matches(" · Strongroom").to_owned()
}

/// Polls like a client does until the answer is final.
async fn poll_until_final(s: &TestServer, code: &str) -> (StatusCode, Value) {
    for _ in 0..200 {
        s.clock.advance_secs(5);
        let (st, v) = s.poll("app", code).await;
        if v["error"] != "authorization_pending" {
            return (st, v);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the device flow never finished");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_and_deny_in_a_real_browser() {
    let Some(driver) = ChromeDriver::start() else { return };
    let s = TestServer::start().await;
    s.user("alice").await;
    s.integration("app", "restricted:manage", |_| {}).await;

    for approve in [true, false] {
        let d = s.start_device("app", "restricted:manage").await;
        let code = d["device_code"].as_str().unwrap().to_owned();
        let page = driver.session().await;
        page.goto(d["verification_uri_complete"].as_str().unwrap()).await;
        page.wait_title(heading, "Sign in to approve a device").await;
        page.type_into("#username", "alice").await;
        page.type_into("#password", PASSWORD).await;
        page.click("#sign_in").await;
        page.wait_title(heading, "Approve access?").await;
        page.click(if approve { "#approve" } else { "#deny" }).await;
        page.wait_title(heading, if approve { "Access approved" } else { "Access denied" }).await;
        page.close().await;

        let (st, v) = poll_until_final(&s, &code).await;
        if approve {
            assert_eq!(st, StatusCode::OK, "{v}");
            assert!(v["access_token"].as_str().unwrap().ends_with("=="));
        } else {
            assert_eq!((st, v["error"].as_str()), (StatusCode::BAD_REQUEST, Some("access_denied")));
        }
    }
}

/// Saves the page as `name.png` into `STRONGROOM_SCREENSHOTS` when it is set
/// (relative to the repository's root).
async fn screenshot(page: &strongroom_testkit::browser::Session, name: &str) {
    let Some(dir) = std::env::var_os("STRONGROOM_SCREENSHOTS") else { return };
    // A relative directory is the repository's (tests run in the crate's directory).
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(dir);
    let png = page.client.screenshot().await.unwrap();
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(std::path::Path::new(&dir).join(format!("{name}.png")), png).unwrap();
}

/// The console's heading (its title without the site's name).
fn console_heading(title: &str) -> String {
    title.trim_end_matches(" · Strongroom admin").to_owned()
}

/// The admin console in headless Chromium: sign in with the keyboard, every
/// page, one action per page by clicking, and a post from another site
/// refused (screenshots into `STRONGROOM_SCREENSHOTS` when set).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_in_chromium() {
    let Some(driver) = ChromeDriver::start() else { return };
    let s = TestServer::start().await;
    s.admin.create_user("root", &strongroom_core::secret::Secret::new(PASSWORD), true).await.unwrap();
    let alice = s.user("alice").await;
    s.user("bob").await;
    s.integration("app", "restricted:manage", |_| {}).await;
    s.admin.create_group("ops").await.unwrap();
    s.admin.add_member("ops", "bob").await.unwrap();
    s.admin.create_folder("\\VED\\Policy\\Team A\\App").await.unwrap();
    s.admin.set_group_rights("\\VED\\Policy\\Team A", "ops", strongroom_core::vault::Rights::parse("read,write").unwrap()).await.unwrap();
    s.tokens_for(&alice, "app", "restricted:manage").await;
    // Events with long words: a wide scope, and a user deleted since, whom the log names by their identity.
    let wide = "admin:viewlogs,rotate;certificate:approve,manage,revoke;restricted:delete,manage;security:delete,manage";
    s.integration("wide-app", wide, |_| {}).await;
    let dave = s.user("dave").await;
    s.tokens_for(&dave, "wide-app", wide).await;
    s.admin.delete_user("dave").await.unwrap();
    let city = strongroom_app::admin::certs::PolicyChange { city: Some("Lyon".into()), ..Default::default() };
    s.admin.set_cert_policy("\\VED\\Policy", city).await.unwrap();

    let page = driver.session().await;
    page.client.set_window_size(1000, 700).await.unwrap();
    page.goto(&s.at("/admin")).await;
    page.wait_title(console_heading, "Sign in to the admin console").await;
    page.type_into("#username", "root").await;
    page.type_into("#password", PASSWORD).await;
    screenshot(&page, "sign-in").await;
    // The keyboard reaches the sign-in button from the password, and Enter presses it.
    // WebDriver's key codes: Tab U+E004, Enter U+E007.
    let tab = '\u{E004}';
    page.element("#password").await.send_keys(&tab.to_string()).await.unwrap();
    let focused = page.client.active_element().await.unwrap();
    assert_eq!(focused.attr("id").await.unwrap().as_deref(), Some("sign_in"));
    let enter = '\u{E007}';
    focused.send_keys(&enter.to_string()).await.unwrap();
    page.wait_title(console_heading, "Overview").await;
    screenshot(&page, "overview").await;

    // Integrations: create one.
    page.click("a[href='/admin/integrations']").await;
    page.wait_title(console_heading, "Integrations").await;
    page.type_into("#new_client_id", "ci-runner").await;
    page.type_into("#new_name", "CI runner").await;
    page.type_into("#new_scope", "restricted:manage").await;
    page.type_into("#new_groups", "ops").await;
    page.click("#create_integration").await;
    page.element(".notice").await;
    assert!(s.store.integration("ci-runner".into()).await.unwrap().is_some());
    screenshot(&page, "integrations").await;

    // Users and groups: create a user.
    page.click("a[href='/admin/users']").await;
    page.wait_title(console_heading, "Users and groups").await;
    page.type_into("#new_user", "carol").await;
    page.type_into("#new_password", PASSWORD).await;
    page.click("#create_user").await;
    page.element(".notice").await;
    assert!(s.store.user_by_name("carol".into()).await.unwrap().is_some());
    screenshot(&page, "users").await;

    // Folders: grant a right, then a user's effective rights and where they come from.
    page.click("a[href='/admin/folders']").await;
    page.wait_title(console_heading, "Folders and permissions").await;
    page.click("ul.tree a[href*='App']").await;
    page.element("#grant_name").await;
    page.type_into("#grant_name", "bob").await;
    page.click("#grant_view").await;
    page.click("#grant_rights").await;
    page.element(".notice").await;
    let (eff, _) = s.admin.effective_rights("\\VED\\Policy\\Team A\\App", "bob").await.unwrap();
    assert_eq!(eff.to_string(), "view,read,write");
    page.type_into("#effective_user", "bob").await;
    page.click("#show_effective").await;
    // The folder's page has a caption of its own already: wait for the effective rights' one.
    page.wait_text("body", "What bob may do on").await;
    let src = page.client.source().await.unwrap();
    assert!(src.contains("to group <strong>ops</strong>"), "{src}");
    screenshot(&page, "folders").await;

    // Grants: revoke alice's.
    page.click("a[href='/admin/grants']").await;
    page.wait_title(console_heading, "Grants").await;
    screenshot(&page, "grants").await;
    page.click("td a.revoke").await;
    page.wait_title(console_heading, "Revoke the grant of alice to app?").await;
    page.click("#confirm").await;
    page.element(".notice").await;
    assert!(s.admin.list_grants(false).await.unwrap().is_empty());

    // The log: filter by kind.
    page.click("a[href='/admin/log']").await;
    page.wait_title(console_heading, "Event log").await;
    page.element("#log_kind").await.select_by_value("user.created").await.unwrap();
    page.click("#filter").await;
    page.wait_url("kind=user.created").await;
    page.element("caption").await;
    screenshot(&page, "log").await;
    // Every event at 1280 px (a laptop's window): the table stays inside its card.
    page.client.set_window_size(1280, 800).await.unwrap();
    page.goto(&s.at("/admin/log")).await;
    page.wait_title(console_heading, "Event log").await;
    let (table, card) = widths(&page, "main table").await;
    assert!(table <= card, "the event log's table is {table} px wide in a card of {card} px");
    page.client.set_window_size(1000, 700).await.unwrap();

    // Certificate authorities: create a root CA by clicking, open it; then a policy on a folder.
    page.click("a[href='/admin/cas']").await;
    page.wait_title(console_heading, "Certificate authorities").await;
    page.type_into("#ca_name", "Web CA").await;
    page.element("#ca_algorithm").await.select_by_value("p384").await.unwrap();
    page.click("#create_ca").await;
    page.element(".notice").await;
    let cas = s.admin.cas().await.unwrap();
    assert_eq!((cas.len(), cas[0].algorithm.as_str(), cas[0].kind()), (1, "p384", "root"));
    screenshot(&page, "cas").await;
    page.click("#cas a[href*='Web']").await;
    page.wait_title(console_heading, "CA Web CA").await;
    assert!(page.text("#pem").await.starts_with("-----BEGIN CERTIFICATE-----"));
    page.click("a[href='/admin/policies']").await;
    page.wait_title(console_heading, "Certificate policies").await;
    // No folder picked yet: the root's policy, which every folder inherits.
    assert_eq!(page.text("h2").await, "In force in \\VED\\Policy");
    assert!(page.text("#effective").await.contains("Lyon"), "{}", page.text("#effective").await);
    // (The folder's option holds backslashes, which a CSS selector would read as escapes: its URL instead.)
    page.goto(&s.at("/admin/policies?folder=%5CVED%5CPolicy%5CTeam%20A")).await;
    page.wait_title(console_heading, "Certificate policies").await;
    page.element("#p_ca").await.select_by_value("Web CA").await.unwrap();
    page.type_into("#p_organization", "Acme").await;
    page.click("#p_locked").await;
    page.click("#set_policy").await;
    page.element(".notice").await;
    let (own, _) = s.admin.cert_policy("\\VED\\Policy\\Team A").await.unwrap();
    assert_eq!(own.organization.map(|o| (o.value, o.locked)), Some(("Acme".to_owned(), true)));
    assert!(page.text("#effective").await.contains("Acme (locked)"));
    screenshot(&page, "policies").await;

    // A form on another site posting here: refused, nothing created.
    let forged = format!(
        "data:text/html,<form method=post action='{}/admin/users/create'><input name=name value=mallory>\
         <input name=password value='{PASSWORD}'><input name=csrf value=x><button id=go>go</button></form>",
        s.url
    );
    page.goto(&forged).await;
    page.click("#go").await;
    page.wait_title(console_heading, "Not done").await;
    assert!(s.store.user_by_name("mallory".into()).await.unwrap().is_none());

    // Sign out.
    page.goto(&s.at("/admin")).await;
    page.click("#sign_out").await;
    page.wait_title(console_heading, "Sign in to the admin console").await;
    page.close().await;
}

/// How wide the element `css` selects is (its content, overflow included:
/// `scrollWidth`) and how wide the inside of its card (`main`, without its
/// padding) is, in CSS pixels.
async fn widths(page: &strongroom_testkit::browser::Session, css: &str) -> (f64, f64) {
    let script = "const e = document.querySelector(arguments[0]); const m = document.querySelector('main'); \
                  const s = getComputedStyle(m); \
                  return [Math.max(e.scrollWidth, e.getBoundingClientRect().width), \
                          m.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight)];";
    let v = page.client.execute(script, vec![serde_json::json!(css)]).await.unwrap();
    (v[0].as_f64().unwrap(), v[1].as_f64().unwrap())
}

/// Signs `user` in to the console and waits for the overview.
async fn console_sign_in(page: &strongroom_testkit::browser::Session, s: &TestServer, user: &str) {
    page.goto(&s.at("/admin")).await;
    page.wait_title(console_heading, "Sign in to the admin console").await;
    page.type_into("#username", user).await;
    page.type_into("#password", PASSWORD).await;
    page.click("#sign_in").await;
    page.wait_title(console_heading, "Overview").await;
}

/// Clicks the link `css` to a confirmation page, waits for its heading
/// `question`, and returns what the page says it will end.
async fn ask(page: &strongroom_testkit::browser::Session, css: &str, question: &str) -> String {
    page.click(css).await;
    page.wait_title(console_heading, question).await;
    page.text("#consequences").await
}

async fn last_actor(s: &TestServer, kind: &str) -> String {
    let f = strongroom_store::EventFilter { kind: Some(kind.into()), limit: 1, ..Default::default() };
    s.store.events(f).await.unwrap().first().map(|e| e.event.identity.clone()).unwrap_or_default()
}

/// Every destructive act of the console in Chromium: its link shows a page
/// saying what it will end; Cancel changes nothing; Confirm does it, and
/// its event names the person. The new pages (folders created, renamed and
/// deleted; a user's password, Master Admin role and deletion; keys; the
/// server) by clicking; and nothing offers a person to disable themselves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_confirmations_in_chromium() {
    let Some(driver) = ChromeDriver::start() else { return };
    let s = TestServer::start().await;
    let root = s.admin.create_user("root", &strongroom_core::secret::Secret::new(PASSWORD), true).await.unwrap();
    let me = root.id.identity();
    let alice = s.user("alice").await;
    s.integration("app", "restricted:manage", |_| {}).await;
    s.integration("other", "restricted:manage", |_| {}).await;
    s.tokens_for(&alice, "app", "restricted:manage").await;
    s.tokens_for(&alice, "other", "restricted:manage").await;

    let page = driver.session().await;
    page.client.set_window_size(1100, 800).await.unwrap();
    console_sign_in(&page, &s, "root").await;

    // Integrations: delete asks, saying how many grants it ends; Cancel keeps it.
    page.click("a[href='/admin/integrations']").await;
    page.wait_title(console_heading, "Integrations").await;
    let said = ask(&page, "a[aria-label='Delete app']", "Delete integration app?").await;
    assert!(said.contains("This will end 1 live grant of integration app") && said.contains("held by alice"), "{said}");
    screenshot(&page, "confirm-integration-delete").await;
    page.click("#cancel").await;
    page.wait_title(console_heading, "Integrations").await;
    assert!(s.store.integration("app".into()).await.unwrap().is_some(), "cancelled");
    ask(&page, "a[aria-label='Delete app']", "Delete integration app?").await;
    page.click("#confirm").await;
    page.wait_text(".notice", "Integration app deleted; 1 of its grants ended.").await;
    assert!(s.store.integration("app".into()).await.unwrap().is_none());
    assert_eq!(last_actor(&s, "integration.deleted").await, me);

    // Integration settings: the retry window and a lifetime, by typing.
    page.click("a[href='/admin/integrations?edit=other']").await;
    page.element("#edit_retry_window").await.clear().await.unwrap();
    page.type_into("#edit_retry_window", "0").await;
    page.type_into("#edit_access_validity", "300").await;
    page.click("#edit_password_grant").await;
    page.click("#save_integration").await;
    page.element(".notice").await;
    let i = s.store.integration("other".into()).await.unwrap().unwrap();
    assert_eq!((i.overrides.retry_window, i.overrides.access_validity, i.grant_types.password), (Some(0), Some(300), true));

    // Grants: revoking asks first.
    page.click("a[href='/admin/grants']").await;
    page.wait_title(console_heading, "Grants").await;
    let said = ask(&page, "td a.revoke", "Revoke the grant of alice to other?").await;
    assert!(said.contains("its access and refresh tokens stop working at once"), "{said}");
    page.click("#confirm").await;
    page.element(".notice").await;
    assert!(s.admin.list_grants(false).await.unwrap().is_empty());

    // Users: nothing offers root to disable, demote or delete themselves.
    page.click("a[href='/admin/users']").await;
    page.wait_title(console_heading, "Users and groups").await;
    for own in ["Disable root", "Delete root", "Take the Master Admin role from root"] {
        assert_eq!(page.count(&format!("a[aria-label='{own}']")).await, 0, "{own}");
    }
    // A new password, saying what it ends.
    let said = ask(&page, "a[aria-label='Set a new password for alice']", "New password for alice").await;
    assert!(said.contains("A new password ends 0 live grants of alice"), "{said}");
    page.type_into("#reset_password", "a brand new password 42").await;
    page.click("#confirm").await;
    page.wait_text(".notice", "New password set for alice").await;
    assert_eq!(last_actor(&s, "user.password_changed").await, me);
    // Master Admin on, then off again.
    let said = ask(&page, "a[aria-label='Make alice a Master Admin']", "Make alice a Master Admin?").await;
    assert!(said.contains("every right on every folder"), "{said}");
    page.click("#confirm").await;
    page.element(".notice").await;
    assert!(s.store.user_by_name("alice".into()).await.unwrap().unwrap().0.master_admin);
    let said = ask(&page, "a[aria-label='Take the Master Admin role from alice']", "Remove the Master Admin role from alice?").await;
    assert!(said.contains("This will end the Master Admin role of alice"), "{said}");
    screenshot(&page, "confirm-demote").await;
    page.click("#confirm").await;
    page.element(".notice").await;
    assert!(!s.store.user_by_name("alice".into()).await.unwrap().unwrap().0.master_admin);
    assert_eq!(last_actor(&s, "user.master_admin_changed").await, me);
    // Disable, then delete.
    let said = ask(&page, "a[aria-label='Disable alice']", "Disable alice?").await;
    assert!(said.contains("This will end 0 live grants of alice for good"), "{said}");
    page.click("#confirm").await;
    page.element(".notice").await;
    assert!(s.store.user_by_name("alice".into()).await.unwrap().unwrap().0.disabled);
    let said = ask(&page, "a[aria-label='Delete alice']", "Delete alice?").await;
    assert!(said.contains("Their past events stay in the log"), "{said}");
    page.click("#confirm").await;
    page.element(".notice").await;
    assert!(s.store.user_by_name("alice".into()).await.unwrap().is_none());
    assert_eq!(last_actor(&s, "user.deleted").await, me);

    // Folders: create, one below it, rename, then delete with what goes listed.
    page.click("a[href='/admin/folders']").await;
    page.wait_title(console_heading, "Folders and permissions").await;
    page.type_into("#new_folder", "Team").await;
    page.click("#create_folder").await;
    page.wait_text(".notice", "Folder \\VED\\Policy\\Team created.").await;
    page.type_into("#sub_folder", "App").await;
    page.click("#create_subfolder").await;
    page.element(".notice").await;
    page.click("ul.tree a[href$='Team']").await;
    page.element("#rename_to").await.clear().await.unwrap();
    page.type_into("#rename_to", "Squad").await;
    page.click("#rename_folder").await;
    page.wait_text(".notice", "renamed to \\VED\\Policy\\Squad").await;
    assert!(s.store.folder_exists("\\ved\\policy\\squad\\app".into()).await.unwrap());
    let said = ask(&page, "#delete_folder", "Delete folder \\VED\\Policy\\Squad?").await;
    assert!(said.contains("1 folder below it: \\VED\\Policy\\Squad\\App") && said.contains("0 vault entries"), "{said}");
    screenshot(&page, "confirm-folder-delete").await;
    page.click("#confirm").await;
    page.element(".notice").await;
    assert!(!s.store.folder_exists("\\ved\\policy\\squad".into()).await.unwrap());
    assert_eq!(last_actor(&s, "folder.deleted").await, me);

    // Machine identities: an issuer and a JWT mapping by typing; removing the mapping asks first.
    page.click("a[href='/admin/machines']").await;
    page.wait_title(console_heading, "Machine identities").await;
    page.type_into("#issuer_name", "gh").await;
    page.type_into("#issuer_iss", "https://token.actions.example").await;
    page.type_into("#issuer_audiences", "strongroom").await;
    page.click("#save_issuer").await;
    page.wait_text(".notice", "Issuer gh saved.").await;
    page.type_into("#jwt_name", "deploy").await;
    page.type_into("#jwt_clients", "other").await;
    page.type_into("#jwt_scope", "restricted").await;
    page.type_into("#jwt_claims", "repository=acme/app").await;
    page.click("#save_jwt_mapping").await;
    page.wait_text(".notice", "Mapping deploy saved.").await;
    screenshot(&page, "machines").await;
    let said = ask(&page, "a[aria-label='Remove mapping deploy']", "Remove mapping deploy?").await;
    assert!(said.contains("This will end 0 live grants of its identities"), "{said}");
    page.click("#confirm").await;
    page.element(".notice").await;
    assert!(s.admin.mappings().await.unwrap().is_empty());
    assert_eq!(last_actor(&s, "mapping.removed").await, me);

    // Vault entries: the filter by folder, by clicking (there are none here).
    page.click("a[href='/admin/vault']").await;
    page.wait_title(console_heading, "Vault entries").await;
    page.type_into("#vault_folder", "\\VED\\Policy\\Nothing").await;
    page.click("#filter").await;
    // The page before the filter has a caption too: wait for the filtered one's URL first.
    page.wait_url("folder=%5CVED%5CPolicy%5CNothing").await;
    page.element("caption").await;
    assert!(page.text("caption").await.contains("0 entries; values are never shown"));

    // Keys: rotate asks first.
    page.click("a[href='/admin/keys']").await;
    page.wait_title(console_heading, "Keys").await;
    screenshot(&page, "keys").await;
    let said = ask(&page, "a[aria-label='Rotate Software:Default']", "Rotate Software:Default?").await;
    assert!(said.contains("nothing ends"), "{said}");
    page.click("#confirm").await;
    page.wait_text(".notice", "Software:Default rotated").await;

    // The server.
    page.click("a[href='/admin/server']").await;
    page.wait_title(console_heading, "Server").await;
    assert!(page.text("#version").await.contains(env!("CARGO_PKG_VERSION")));
    assert!(page.text("#health").await.starts_with("ready"));
    assert_eq!(page.text("#schema").await.split(' ').next().unwrap(), strongroom_store::schema_version().to_string());
    page.click("#verify").await;
    page.wait_title(console_heading, "Server").await;
    assert!(page.text("#chain").await.starts_with("whole:"), "{}", page.text("#chain").await);
    screenshot(&page, "server").await;
    page.close().await;
}
