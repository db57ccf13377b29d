//! Bad input gets the documented error, never a 500, and changes nothing.

use reqwest::StatusCode;
use serde_json::Value;

use crate::support::TestServer;

struct Case {
    name: &'static str,
    path: &'static str,
    content_type: Option<&'static str>,
    body: Vec<u8>,
    status: StatusCode,
    error: &'static str,
}

fn case(name: &'static str, path: &'static str, ct: Option<&'static str>, body: &str, status: u16, error: &'static str) -> Case {
    Case { name, path, content_type: ct, body: body.as_bytes().to_vec(), status: StatusCode::from_u16(status).unwrap(), error }
}

const J: Option<&str> = Some("application/json");
const F: Option<&str> = Some("application/x-www-form-urlencoded");
const TOKEN: &str = "/vedauth/authorize/token";
const DEVICE: &str = "/vedauth/authorize/device";
const OAUTH: &str = "/vedauth/authorize/oauth";

#[tokio::test]
async fn every_bad_request_gets_its_documented_error() {
    let s = TestServer::start_with(|c| c.max_body_bytes = Some(64 * 1024)).await;
    let alice = s.user("alice").await;
    s.integration("app", "restricted", |_| {}).await;
    let good = s.tokens_for(&alice, "app", "restricted").await;
    let rt = good["refresh_token"].as_str().unwrap().to_owned();
    let before = s.event_kinds().await.len();

    let dc = "urn:ietf:params:oauth:grant-type:device_code";
    let garbage_dc = format!(r#"{{"client_id":"app","grant_type":"{dc}","device_code":"{}"}}"#, "A".repeat(43));
    let short_dc = format!(r#"{{"client_id":"app","grant_type":"{dc}","device_code":"x"}}"#);
    let wrong_client_rt = format!(r#"{{"client_id":"nope","refresh_token":"{rt}"}}"#);
    let mut cases = vec![
        case("malformed json", TOKEN, J, "{\"client_id\":", 400, "invalid_request"),
        case("json array", TOKEN, J, "[1,2]", 400, "invalid_request"),
        case("empty body", TOKEN, J, "", 400, "invalid_request"),
        case("no content type", TOKEN, None, r#"{"client_id":"app"}"#, 400, "invalid_request"),
        case("text content type", TOKEN, Some("text/plain"), r#"{"client_id":"app"}"#, 400, "invalid_request"),
        case("missing client_id", TOKEN, J, r#"{"refresh_token":"x"}"#, 400, "invalid_request"),
        case("empty client_id", TOKEN, J, r#"{"client_id":"","refresh_token":"x"}"#, 400, "invalid_request"),
        case("client_id of wrong type", TOKEN, J, r#"{"client_id":7,"refresh_token":"x"}"#, 400, "invalid_request"),
        case("nothing to do", TOKEN, J, r#"{"client_id":"app"}"#, 400, "invalid_request"),
        case("unknown grant type", TOKEN, J, r#"{"client_id":"app","grant_type":"password"}"#, 400, "invalid_request"),
        case("device grant without code", TOKEN, J, &format!(r#"{{"client_id":"app","grant_type":"{dc}"}}"#), 400, "invalid_request"),
        case("garbage device code", TOKEN, J, &garbage_dc, 400, "invalid_grant"),
        case("short device code", TOKEN, J, &short_dc, 400, "invalid_grant"),
        case("garbage refresh token", TOKEN, J, r#"{"client_id":"app","refresh_token":"not-a-token"}"#, 400, "invalid_grant"),
        case(
            "unknown refresh token",
            TOKEN,
            J,
            &format!(r#"{{"client_id":"app","refresh_token":"{}=="}}"#, "Q".repeat(46)),
            400,
            "invalid_grant",
        ),
        case("refresh with unknown client", TOKEN, J, &wrong_client_rt, 400, "invalid_grant"),
        case("duplicate form field", TOKEN, F, "client_id=app&client_id=app&refresh_token=x", 400, "invalid_request"),
        case("bad percent-encoding", TOKEN, F, "client_id=%ZZ&refresh_token=%", 400, "invalid_grant"),
        case("device: missing client_id", DEVICE, J, r#"{"scope":"restricted"}"#, 400, "invalid_request"),
        case("device: unknown client", DEVICE, J, r#"{"client_id":"nope","scope":"restricted"}"#, 400, "invalid_grant"),
        case("device: no scope", DEVICE, J, r#"{"client_id":"app"}"#, 400, "invalid_scope"),
        case("device: malformed scope", DEVICE, J, r#"{"client_id":"app","scope":"restricted:"}"#, 400, "invalid_scope"),
        case("device: scope too wide", DEVICE, J, r#"{"client_id":"app","scope":"restricted:manage"}"#, 400, "invalid_scope"),
        case("device: scope of wrong type", DEVICE, J, r#"{"client_id":"app","scope":["restricted"]}"#, 400, "invalid_request"),
        case("oauth: missing client_id", OAUTH, J, r#"{"username":"a","password":"b","scope":"restricted"}"#, 400, "invalid_request"),
        case(
            "oauth: not allowed",
            OAUTH,
            J,
            r#"{"client_id":"app","username":"a","password":"b","scope":"restricted"}"#,
            400,
            "unauthorized_client",
        ),
        case("unicode garbage", TOKEN, J, "{\"client_id\":\"\\u0000\\uffff\",\"refresh_token\":\"\u{1F600}\"}", 400, "invalid_grant"),
    ];
    cases.push(Case {
        name: "invalid utf-8",
        path: TOKEN,
        content_type: J,
        body: vec![b'{', 0xff, 0xfe, b'}'],
        status: StatusCode::BAD_REQUEST,
        error: "invalid_request",
    });
    cases.push(Case {
        name: "huge body",
        path: TOKEN,
        content_type: J,
        body: format!(r#"{{"client_id":"{}"}}"#, "a".repeat(200 * 1024)).into_bytes(),
        status: StatusCode::PAYLOAD_TOO_LARGE,
        error: "invalid_request",
    });
    cases.push(Case {
        name: "deep json",
        path: TOKEN,
        content_type: J,
        body: format!("{}{}", "[".repeat(10_000), "]".repeat(10_000)).into_bytes(),
        status: StatusCode::BAD_REQUEST,
        error: "invalid_request",
    });

    for c in cases {
        let mut req = s.http.post(s.at(c.path)).body(c.body.clone());
        if let Some(ct) = c.content_type {
            req = req.header("content-type", ct);
        }
        let r = req.send().await.unwrap();
        let status = r.status();
        let ct = r.headers().get("content-type").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
        let text = r.text().await.unwrap();
        assert_eq!(status, c.status, "{}: {text}", c.name);
        assert!(ct.starts_with("application/json"), "{}: content-type {ct:?}", c.name);
        let v: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("{}: not JSON: {text}", c.name));
        assert_eq!(v["error"], c.error, "{}: {text}", c.name);
        assert!(v["error_description"].is_string(), "{}", c.name);
        assert!(!text.contains("panicked") && !text.contains("sqlite") && !text.contains(".rs"), "{}: {text}", c.name);
    }

    // Bearer endpoints: garbage, wrong scheme, empty → 401, never 500.
    for auth in ["Bearer", "Bearer ", "Bearer x", "Basic YWxpY2U6cGFzcw==", &format!("Bearer {}==", "A".repeat(46))] {
        let r = s.http.get(s.at("/vedauth/authorize/verify")).header("authorization", auth).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{auth}");
    }
    // Unknown paths and wrong methods get JSON too.
    let r = s.http.get(s.at("/vedauth/nope")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let r = s.http.get(s.at(TOKEN)).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);

    // None of it changed anything: no events, and the good tokens still work.
    assert_eq!(s.event_kinds().await.len(), before, "bad input wrote events");
    assert_eq!(s.refresh("app", &rt).await.0, StatusCode::OK);
}

/// A scope that is not one of the catalogue's (`certificate:admin`): still
/// `invalid_scope`, and the description names the valid scopes (the
/// category's privileges first), never the text refused.
#[tokio::test]
async fn an_unknown_scope_is_refused_with_the_valid_scopes_named() {
    let s = TestServer::start().await;
    s.user("alice").await;
    s.integration("app", "certificate:manage", |i| i.password = Some(true)).await;
    let password =
        serde_json::json!({"client_id": "app", "username": "alice", "password": crate::support::PASSWORD, "scope": "certificate:admin"});
    for (path, body) in [(DEVICE, serde_json::json!({"client_id": "app", "scope": "certificate:admin"})), (OAUTH, password)] {
        let (status, v) = s.post_json(path, body).await;
        assert_eq!((status, v["error"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_scope")), "{path}: {v}");
        let text = v["error_description"].as_str().unwrap_or_default();
        assert!(
            text.starts_with("The scope is not valid: certificate has no privilege of that name (its privileges: approve, delete, discover, manage, revoke); "),
            "{path}: {text}"
        );
        assert!(
            text.contains("certificate:approve,delete,discover,manage,revoke; codesign:") && text.contains("security:delete,manage"),
            "{path}: {text}"
        );
        assert!(!text.contains("certificate:admin"), "{path}: the scope given is not echoed: {text}");
    }
    let (_, v) = s.post_json(DEVICE, serde_json::json!({"client_id": "app", "scope": "vault"})).await;
    let text = v["error_description"].as_str().unwrap_or_default();
    assert!(text.starts_with("The scope is not valid: no scope category of that name; valid scopes are "), "{text}");
}
