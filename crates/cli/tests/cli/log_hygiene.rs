//! Run the flows with every log level turned up, then look for every secret
//! that crossed the wire in everything the server printed.

use base64::Engine as _;
use serde_json::Value;
use strongroom_testkit::api::{client, string};
use strongroom_testkit::page::{Page, hidden_field};

use crate::process::{Api, Server, TokensExt as _};

const PASSWORD: &str = "Pa55word-that-must-never-be-logged";

/// The forms a secret may take in a log line.
fn encodings(secret: &str) -> Vec<String> {
    let mut v = vec![secret.to_owned()];
    v.push(url_encode(secret));
    v.push(base64::engine::general_purpose::STANDARD.encode(secret));
    v.push(secret.bytes().map(|b| format!("{b:02x}")).collect());
    v.push(format!("{secret:?}"));
    v
}

fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_reaches_the_logs_even_at_trace() {
    let server = Server::start(&["--insecure-http"], &[("STRONGROOM_LOG", "trace"), ("RUST_LOG", "trace")]);
    server.admin(&["users", "create", "alice"], &format!("{PASSWORD}\n"));
    // Polls may come every second (the shortest interval), so the flow waits 1 s, not 5.
    server.admin(
        &[
            "integrations",
            "create",
            "app",
            "--scope",
            "restricted:manage;security:manage",
            "--allow-all-users",
            "--password-grant",
            "true",
            "--poll-interval",
            "1",
        ],
        "",
    );
    let base = server.http_base();
    let http = client();
    let api = Api::with(http.clone(), base.clone());
    let mut secrets: Vec<String> = vec![PASSWORD.to_owned()];

    // Device flow, approved through the page's forms.
    let d = api.device("app", "restricted:manage").await;
    let device_code = d.device_code.expose().to_owned();
    let user_code = d.user_code.clone();
    secrets.extend([device_code.clone(), user_code.clone(), user_code.replace('-', "")]);
    let poll = |code: String| {
        let http = http.clone();
        let base = base.clone();
        async move {
            http.post(format!("{base}/vedauth/authorize/token"))
                .form(&[("client_id", "app"), ("grant_type", "urn:ietf:params:oauth:grant-type:device_code"), ("device_code", &code)])
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        }
    };
    assert_eq!(poll(device_code.clone()).await["error"], "authorization_pending");

    let page = Page::open(&http, &d.verification_uri_complete).await;
    // A wrong password first, then the right one.
    for password in ["wrong-password-also-secret", PASSWORD] {
        secrets.push(password.to_owned());
        let (_, html) = page.sign_in(&user_code, "alice", password).await;
        if password == PASSWORD {
            let ticket = hidden_field(&html, "ticket").unwrap();
            assert!(page.decide(&ticket, true).await.1.contains("Access approved"));
        }
    }
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let t = poll(device_code.clone()).await;
    let access = t["access_token"].as_str().unwrap_or_else(|| panic!("{t}")).to_owned();
    let refresh = t["refresh_token"].as_str().unwrap().to_owned();
    secrets.extend([access.clone(), refresh.clone()]);
    // Verify (which uses the pair, so the code cannot be exchanged again),
    // a replayed code, refresh, reuse, password grant, revoke, garbage.
    assert_eq!(api.verify(&access).await, 200);
    assert_eq!(poll(device_code.clone()).await["error"], "invalid_grant");
    let t2 = api.refresh("app", &refresh).await.unwrap();
    let access2 = t2.access().to_owned();
    secrets.extend([access2.clone(), t2.refresh().to_owned()]);
    assert_eq!(api.verify(&access2).await, 200, "the new pair is used: presenting the old token again is reuse");
    let reuse = api.refresh("app", &refresh).await.unwrap_err();
    assert_eq!(reuse.error().as_deref(), Some("invalid_grant"));
    let t3 = api.password_grant("app", "alice", PASSWORD, "restricted:manage").await;
    let access3 = t3.access().to_owned();
    secrets.extend([access3.clone(), t3.refresh().to_owned()]);
    // A vault value and secret data: never logged either.
    server.admin(&["folders", "create", "\\VED\\Policy\\Logs"], "");
    server.admin(&["rights", "grant", "\\VED\\Policy\\Logs", "alice", "--rights", "view,read,write,create"], "");
    let value = "vault-value-that-must-never-be-logged";
    let data = "secret-data-that-must-never-be-logged";
    secrets.extend([value.to_owned(), data.to_owned()]);
    let added = api.add(&access3, "\\VED\\Policy\\Logs", "Software:Default", data.as_bytes()).await.unwrap();
    api.associate(&access3, added.vault_id, "n", &string(value)).await.unwrap();
    // A credential's value, stored and read back.
    let t4 = api.password_grant("app", "alice", PASSWORD, "security:manage").await;
    let access4 = t4.access().to_owned();
    let credential = "credential-value-that-must-never-be-logged";
    secrets.extend([access4.clone(), t4.refresh().to_owned(), credential.to_owned()]);
    let dn = "\\VED\\Policy\\Logs\\cred";
    let values = serde_json::json!([{"Name": "Password", "Type": "string", "Value": credential}]);
    for (op, body) in [
        ("Create", serde_json::json!({"CredentialPath": dn, "FriendlyName": "Password", "Values": values})),
        ("Retrieve", serde_json::json!({"CredentialPath": dn})),
    ] {
        let r = http.post(format!("{base}/vedsdk/Credentials/{op}")).bearer_auth(&access4).json(&body).send().await.unwrap();
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["Result"], 1, "{op}: {v}");
    }
    assert_eq!(api.revoke(&access3).await, 200);
    let garbage = "GarbageTokenGarbageTokenGarbageTokenGarbageTo==";
    secrets.push(garbage.to_owned());
    assert_eq!(api.verify(garbage).await, 401);

    let output = server.stop();
    // The capture really is at trace level and covers the requests.
    assert!(output.contains("TRACE"), "no trace lines captured");
    assert!(output.matches("/vedauth/authorize/token").count() >= 4, "request lines missing");
    for secret in &secrets {
        for form in encodings(secret) {
            assert!(!output.contains(&form), "a secret ({} chars) appears in the logs as {form:?}", secret.len());
        }
    }
}
