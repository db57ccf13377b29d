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
    page.element("caption").await;
    let src = page.client.source().await.unwrap();
    assert!(src.contains("to group <strong>ops</strong>"), "{src}");
    screenshot(&page, "folders").await;

    // Grants: revoke alice's.
    page.click("a[href='/admin/grants']").await;
    page.wait_title(console_heading, "Grants").await;
    screenshot(&page, "grants").await;
    page.click("td form button.danger").await;
    page.element(".notice").await;
    assert!(s.admin.list_grants(false).await.unwrap().is_empty());

    // The log: filter by kind.
    page.click("a[href='/admin/log']").await;
    page.wait_title(console_heading, "Event log").await;
    page.element("#log_kind").await.select_by_value("user.created").await.unwrap();
    page.click("#filter").await;
    page.element("caption").await;
    assert!(page.url().await.contains("kind=user.created"));
    screenshot(&page, "log").await;

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
