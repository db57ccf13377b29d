//! OpenID Connect on the approval page: node-oidc-provider (npm, started by
//! the test on 127.0.0.1) and headless Chromium. The device approval goes
//! through the provider's sign-in and back to the same request; refused:
//! a state this browser did not start, the callback replayed (its state,
//! and with it its nonce, serve once). An id token for another audience or
//! issuer, or with another nonce, is refused by `service::oidc`'s unit tests.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;

use strongroom_server::config::RawOidc;
use strongroom_testkit::browser::ChromeDriver;
use strongroom_testkit::oidc::OidcProvider;

use crate::support::TestServer;

fn heading(title: &str) -> String {
    title.trim_end_matches(" · Strongroom").to_owned()
}

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
async fn a_device_is_approved_through_an_openid_provider() {
    let Some(driver) = ChromeDriver::start() else { return };
    let port = OidcProvider::free_port();
    let dir = tempfile::tempdir().unwrap();
    let secret_file = dir.path().join("client-secret");
    std::fs::write(&secret_file, "a-test-client-secret\n").unwrap();
    let s = TestServer::start_with(|raw| {
        raw.oidc = RawOidc {
            issuer: Some(format!("http://127.0.0.1:{port}")),
            client_id: Some("strongroom".into()),
            client_secret_file: Some(secret_file.clone()),
            ..Default::default()
        };
    })
    .await;
    let redirect = format!("{}/vedauth/device/oidc/callback", s.url);
    let Some(provider) = OidcProvider::start(port, &redirect, "strongroom", "a-test-client-secret", "OIDC approval") else { return };
    s.integration("app", "restricted:manage", |_| {}).await;

    let d = s.start_device("app", "restricted:manage").await;
    let code = d["device_code"].as_str().unwrap().to_owned();
    let page = driver.session().await;
    page.goto(d["verification_uri_complete"].as_str().unwrap()).await;
    page.wait_title(heading, "Sign in to approve a device").await;
    page.click("#oidc").await;
    // The provider's own sign-in and consent pages.
    page.type_into("input[name=login]", "carol").await;
    page.type_into("input[name=password]", "anything").await;
    let login_page = page.url().await;
    page.click("button[type=submit]").await;
    // The consent prompt is a page of its own (a new interaction): wait for
    // it before pressing its button, not the sign-in page's, gone stale.
    let start = std::time::Instant::now();
    loop {
        let url = page.url().await;
        if url != login_page && url.contains("/interaction/") {
            page.click("button[type=submit]").await;
            break;
        }
        if url.starts_with(&redirect) {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "no consent prompt: {url}\n{}", provider.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Back on the same device's request.
    let start = std::time::Instant::now();
    while heading(&page.title().await) != "Approve access?" {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "never back: {} at {}\n{}",
            page.title().await,
            page.url().await,
            provider.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let callback = page.url().await;
    assert!(callback.starts_with(&redirect), "{callback}");
    page.click("#approve").await;
    page.wait_title(heading, "Access approved").await;
    let (st, t) = poll_until_final(&s, &code).await;
    assert_eq!(st, StatusCode::OK, "{t}");
    let identity = t["identity"].as_str().unwrap().to_owned();
    assert!(identity.starts_with("OIDC+sso:{") && identity.ends_with('}'), "{identity}");
    // The person is named and grouped by the claims.
    let (_, me) = s.get_bearer("/vedsdk/Identity/Self", t["access_token"].as_str().unwrap()).await;
    let names: Vec<&str> = me["Identities"].as_array().unwrap().iter().map(|e| e["PrefixedName"].as_str().unwrap()).collect();
    assert_eq!(names[..2], ["OIDC+sso:carol", "OIDC+sso:sso-devs"], "{me}");

    // The callback replayed: its state was taken; nothing shown.
    page.goto(&callback).await;
    page.wait_title(heading, "Not signed in").await;
    // A state this browser never started.
    page.goto(&format!("{redirect}?code=abc&state=not-a-state")).await;
    page.wait_title(heading, "Not signed in").await;
    page.close().await;
    // Without the browser's binding cookie (another browser), a fresh start's state is refused too.
    let r = s.http.get(format!("{redirect}?code=abc&state=x")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let synced =
        s.store.events(strongroom_store::EventFilter { kind: Some("user.directory_synced".into()), limit: 10, ..Default::default() });
    assert_eq!(synced.await.unwrap().len(), 1, "one person made, at the one sign-in that finished");

    // The bound on groups (oidc.session_secs, 12 h by default): the grant is
    // refreshed until 12 h after the sign-in, then the person signs in again
    // (which reads their groups afresh); the access token issued last lives
    // out its hour. On the manual clock.
    s.clock.advance_secs(43_200 - 600);
    let (st, r) = s.refresh("app", t["refresh_token"].as_str().unwrap()).await;
    assert_eq!(st, StatusCode::OK, "within the session: {r}");
    let last_access = r["access_token"].as_str().unwrap().to_owned();
    s.clock.advance_secs(700);
    let (st, e) = s.refresh("app", r["refresh_token"].as_str().unwrap()).await;
    assert_eq!((st, e["error"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_grant")), "{e}");
    assert!(e["error_description"].as_str().unwrap().contains("sign in again"), "{e}");
    let (st, me) = s.get_bearer("/vedsdk/Identity/Self", &last_access).await;
    assert_eq!(st, StatusCode::OK, "the access token issued within the session lives out its lifetime: {me}");
    s.clock.advance_secs(3_600);
    let (st, _) = s.get_bearer("/vedsdk/Identity/Self", &last_access).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED, "and no longer: the bound is oidc.session_secs + one access token's lifetime");
}
