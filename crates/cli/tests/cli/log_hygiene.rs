//! Run the flows with every log level turned up, then look for every secret
//! that crossed the wire in everything the server printed.

use base64::Engine as _;
use serde_json::{Value, json};

use crate::process::Server;

const PASSWORD: &str = "Pa55word-that-must-never-be-logged";

fn hidden(html: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let start = html.find(&marker).unwrap() + marker.len();
    html[start..start + html[start..].find('"').unwrap()].to_owned()
}

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
    server.admin(&["integrations", "create", "app", "--scope", "restricted:manage", "--allow-all-users", "--password-grant", "true"], "");
    let base = format!("http://127.0.0.1:{}", server.port);
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let mut secrets: Vec<String> = vec![PASSWORD.to_owned()];

    // Device flow, approved through the page's forms.
    let d: Value = http
        .post(format!("{base}/vedauth/authorize/device"))
        .json(&json!({"client_id": "app", "scope": "restricted:manage"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let device_code = d["device_code"].as_str().unwrap().to_owned();
    let user_code = d["user_code"].as_str().unwrap().to_owned();
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

    let r = http.get(d["verification_uri_complete"].as_str().unwrap()).send().await.unwrap();
    let cookie = r.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_owned();
    let csrf = hidden(&r.text().await.unwrap(), "csrf");
    // A wrong password first, then the right one.
    for password in ["wrong-password-also-secret", PASSWORD] {
        secrets.push(password.to_owned());
        let r = http
            .post(format!("{base}/vedauth/device"))
            .header("cookie", &cookie)
            .form(&[("csrf", csrf.as_str()), ("user_code", user_code.as_str()), ("username", "alice"), ("password", password)])
            .send()
            .await
            .unwrap();
        let html = r.text().await.unwrap();
        if password == PASSWORD {
            let ticket = hidden(&html, "ticket");
            let r = http
                .post(format!("{base}/vedauth/device/decision"))
                .header("cookie", &cookie)
                .form(&[("csrf", csrf.as_str()), ("ticket", ticket.as_str()), ("action", "approve")])
                .send()
                .await
                .unwrap();
            assert!(r.text().await.unwrap().contains("Access approved"));
        }
    }
    tokio::time::sleep(std::time::Duration::from_millis(5100)).await;
    let t = poll(device_code.clone()).await;
    let access = t["access_token"].as_str().unwrap_or_else(|| panic!("{t}")).to_owned();
    let refresh = t["refresh_token"].as_str().unwrap().to_owned();
    secrets.extend([access.clone(), refresh.clone()]);
    // Verify (which uses the pair, so the code cannot be exchanged again),
    // a replayed code, refresh, reuse, password grant, revoke, garbage.
    let r = http.get(format!("{base}/vedauth/authorize/verify")).bearer_auth(&access).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(poll(device_code.clone()).await["error"], "invalid_grant");
    let t2: Value = http
        .post(format!("{base}/vedauth/authorize/token"))
        .json(&json!({"client_id": "app", "refresh_token": refresh}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let access2 = t2["access_token"].as_str().unwrap().to_owned();
    secrets.extend([access2.clone(), t2["refresh_token"].as_str().unwrap().to_owned()]);
    let r = http.get(format!("{base}/vedauth/authorize/verify")).bearer_auth(&access2).send().await.unwrap();
    assert_eq!(r.status(), 200, "the new pair is used: presenting the old token again is reuse");
    let reuse: Value = http
        .post(format!("{base}/vedauth/authorize/token"))
        .json(&json!({"client_id": "app", "refresh_token": refresh}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(reuse["error"], "invalid_grant");
    let t3 = crate::process::password_grant(&http, &base, "app", "alice", PASSWORD, "restricted:manage").await;
    let access3 = t3["access_token"].as_str().unwrap_or_else(|| panic!("{t3}")).to_owned();
    secrets.extend([access3.clone(), t3["refresh_token"].as_str().unwrap().to_owned()]);
    // A vault value and secret data: never logged either.
    server.admin(&["folders", "create", "\\VED\\Policy\\Logs"], "");
    server.admin(&["rights", "grant", "\\VED\\Policy\\Logs", "alice", "--rights", "read,write"], "");
    let value = "vault-value-that-must-never-be-logged";
    let data = "secret-data-that-must-never-be-logged";
    secrets.extend([value.to_owned(), data.to_owned()]);
    let sdk = |op: &str, body: Value| {
        let r = http.post(format!("{base}/vedsdk/SecretStore/{op}")).bearer_auth(&access3).json(&body).send();
        async move { r.await.unwrap().json::<Value>().await.unwrap() }
    };
    let added = sdk(
        "Add",
        json!({"VaultType": 32, "Keyname": "Software:Default", "Namespace": "config", "Owner": "\\VED\\Policy\\Logs",
               "Base64Data": base64::engine::general_purpose::STANDARD.encode(data)}),
    )
    .await;
    assert_eq!(added["Result"], 0, "{added}");
    let associated = sdk("Associate", json!({"VaultID": added["VaultID"], "Name": "n", "StringValue": value})).await;
    assert_eq!(associated["Result"], 0, "{associated}");
    let r = http.get(format!("{base}/vedauth/revoke/token")).bearer_auth(&access3).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let garbage = "GarbageTokenGarbageTokenGarbageTokenGarbageTo==";
    secrets.push(garbage.to_owned());
    let r = http.get(format!("{base}/vedauth/authorize/verify")).bearer_auth(garbage).send().await.unwrap();
    assert_eq!(r.status(), 401);

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
