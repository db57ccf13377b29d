//! C4: the approval page's headers and its anti-forgery checks. The forged
//! requests are built by hand on purpose; fields are read with the kit's
//! one reader.

pub use strongroom_testkit::page::hidden_field as hidden;

use crate::support::{Fx, PASSWORD, report};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c4_approval_page_headers_and_forgery() {
    let fx = Fx::start(&[], &[]);
    let d = fx.device("app").await;
    let link = d["verification_uri_complete"].as_str().unwrap().to_owned();
    let r = fx.http.get(&link).send().await.unwrap();
    let h = r.headers().clone();
    let get = |n: &str| h.get(n).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let (csp, xfo, cache, nosniff, referrer, cookie_attrs) = (
        get("content-security-policy"),
        get("x-frame-options"),
        get("cache-control"),
        get("x-content-type-options"),
        get("referrer-policy"),
        get("set-cookie"),
    );
    let headers_ok = csp.contains("frame-ancestors 'none'")
        && xfo == "DENY"
        && cache.contains("no-store")
        && nosniff == "nosniff"
        && (referrer == "same-origin" || referrer == "no-referrer")
        && cookie_attrs.contains("HttpOnly")
        && cookie_attrs.contains("SameSite=Strict");
    let cookie = cookie_attrs.split(';').next().unwrap().to_owned();
    let html = r.text().await.unwrap();
    let csrf = hidden(&html, "csrf").unwrap();
    let code = hidden(&html, "user_code").unwrap();
    let sign_in = |cookie: Option<String>, csrf: String, origin: Option<&'static str>| {
        let mut req = fx.http.post(format!("{}/vedauth/device", fx.base)).form(&[
            ("csrf", csrf.as_str()),
            ("user_code", code.as_str()),
            ("username", "alice"),
            ("password", PASSWORD),
        ]);
        if let Some(c) = cookie {
            req = req.header("cookie", c);
        }
        if let Some(o) = origin {
            req = req.header("origin", o);
        }
        async move { req.send().await.unwrap().text().await.unwrap() }
    };
    // Sign-in forgeries: each must not reach the consent step.
    let forged_sign_in = [
        sign_in(None, csrf.clone(), None).await,
        sign_in(Some(cookie.clone()), "A".repeat(43), None).await,
        sign_in(Some(cookie.clone()), csrf.clone(), Some("http://evil.example")).await,
        sign_in(Some(cookie.clone()), csrf.clone(), Some("null")).await,
    ];
    let sign_in_passed = forged_sign_in.iter().filter(|p| hidden(p, "ticket").is_some()).count();
    // A real sign-in gives a ticket; forged decisions with it must not count.
    let consent = sign_in(Some(cookie.clone()), csrf.clone(), None).await;
    let ticket = hidden(&consent, "ticket").expect("the genuine sign-in reaches the consent step");
    let decide = |cookie: Option<String>, csrf: String, origin: Option<&'static str>| {
        let mut req = fx.http.post(format!("{}/vedauth/device/decision", fx.base)).form(&[
            ("csrf", csrf.as_str()),
            ("ticket", ticket.as_str()),
            ("action", "approve"),
        ]);
        if let Some(c) = cookie {
            req = req.header("cookie", c);
        }
        if let Some(o) = origin {
            req = req.header("origin", o);
        }
        async move { req.send().await.unwrap().text().await.unwrap() }
    };
    let mut forged = vec![
        decide(None, csrf.clone(), None).await,
        decide(Some(cookie.clone()), "B".repeat(43), None).await,
        decide(Some(cookie.clone()), csrf.clone(), Some("https://evil.example")).await,
        // Another browser's cookie and field, with the victim's ticket.
        decide(Some(format!("sr_csrf={}", "C".repeat(43))), "C".repeat(43), None).await,
    ];
    let via_get = fx
        .http
        .get(format!("{}/vedauth/device/decision?csrf={csrf}&ticket={ticket}&action=approve", fx.base))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    let get_status = via_get.status().as_u16();
    forged.push(via_get.text().await.unwrap());
    let approvals = forged.iter().filter(|p| p.contains("Access approved")).count();
    let (_, polled) = fx.poll("app", d["device_code"].as_str().unwrap()).await;
    let still_pending = polled["error"] == "authorization_pending";
    // The genuine decision still works afterwards.
    let genuine = decide(Some(cookie.clone()), csrf.clone(), None).await.contains("Access approved");
    let ok = report(
        "C4",
        "approval page headers and anti-forgery",
        &format!(
            "headers: CSP {csp:?}, X-Frame-Options {xfo}, Cache-Control {cache}, nosniff {nosniff}, Referrer-Policy {referrer}, cookie HttpOnly+SameSite=Strict {}; forged sign-ins reaching consent {sign_in_passed}/4; forged decisions approved {approvals}/5 (GET: {get_status}); code still pending {still_pending}; genuine approval afterwards {genuine}",
            cookie_attrs.contains("HttpOnly") && cookie_attrs.contains("SameSite=Strict")
        ),
        headers_ok && sign_in_passed == 0 && approvals == 0 && still_pending && genuine,
    );
    assert!(ok, "C4");
}

/// C4b: the anti-forgery checks' details: the Origin's
/// scheme, a foreign Referer without an Origin, a planted cookie, and over
/// HTTPS the `__Host-` cookie and HSTS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c4b_anti_forgery_details_and_hsts() {
    let fx = Fx::start(&[], &[]);
    let d = fx.device("app").await;
    let code = d["user_code"].as_str().unwrap().to_owned();
    let session = || async {
        let r = fx.http.get(format!("{}/vedauth/device", fx.base)).send().await.unwrap();
        let cookie = r.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_owned();
        (cookie, hidden(&r.text().await.unwrap(), "csrf").unwrap())
    };
    let post = |cookie: String, csrf: String, header: Option<(&'static str, String)>| {
        let mut req = fx.http.post(format!("{}/vedauth/device", fx.base)).header("cookie", cookie).form(&[
            ("csrf", csrf.as_str()),
            ("user_code", code.as_str()),
            ("username", "alice"),
            ("password", PASSWORD),
        ]);
        if let Some((name, value)) = header {
            req = req.header(name, value);
        }
        async move { hidden(&req.send().await.unwrap().text().await.unwrap(), "ticket").is_some() }
    };
    let host = fx.base.trim_start_matches("http://").to_owned();
    let (cookie, csrf) = session().await;
    let wrong_scheme = post(cookie.clone(), csrf.clone(), Some(("origin", format!("https://{host}")))).await;
    let foreign_referer = post(cookie.clone(), csrf.clone(), Some(("referer", "https://evil.example/page".into()))).await;
    let own_referer = post(cookie.clone(), csrf.clone(), Some(("referer", format!("{}/vedauth/device?user_code={code}", fx.base)))).await;
    let own_origin = post(cookie.clone(), csrf.clone(), Some(("origin", fx.base.clone()))).await;
    // A cookie the server never issued, planted in the victim's browser.
    let planted = format!("{}.{}", "A".repeat(43), "B".repeat(22));
    let r = fx.http.get(format!("{}/vedauth/device", fx.base)).header("cookie", format!("sr_csrf={planted}")).send().await.unwrap();
    let reissued = r.headers()["set-cookie"].to_str().unwrap().to_owned();
    let adopted = reissued.contains(&planted) || hidden(&r.text().await.unwrap(), "csrf").is_some_and(|c| c == planted);
    let planted_passes = post(format!("sr_csrf={planted}"), planted.clone(), None).await;

    // Over HTTPS: the cookie is __Host- (Secure, Path=/), and HSTS is sent.
    let tls = crate::support::Server::start(&[], &[]);
    let pem = std::fs::read(tls.data_dir.path().join("tls").join("cert.pem")).unwrap();
    let client = reqwest::Client::builder()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(&pem).unwrap())
        .build()
        .unwrap();
    let r = client.get(format!("https://localhost:{}/vedauth/device", tls.port)).send().await.unwrap();
    let set_cookie = r.headers()["set-cookie"].to_str().unwrap().to_owned();
    let hsts = r.headers().get("strict-transport-security").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let host_cookie = set_cookie.starts_with("__Host-sr_csrf=") && set_cookie.contains("Secure") && set_cookie.contains("Path=/;");
    let plain_hsts = fx.http.get(format!("{}/healthz", fx.base)).send().await.unwrap().headers().contains_key("strict-transport-security");
    let ok = report(
        "C4b",
        "anti-forgery details and HSTS",
        &format!(
            "sign-in reaching consent with: Origin of another scheme {wrong_scheme}, no Origin and a foreign Referer {foreign_referer}, \
             its own Referer {own_referer}, its own Origin {own_origin}, a planted cookie and field {planted_passes}; the page adopts a planted cookie: {adopted}; \
             over HTTPS the cookie is {:?} (__Host-, Secure, Path=/: {host_cookie}), HSTS {hsts:?}; over plain HTTP no HSTS: {}",
            set_cookie.split(';').skip(1).collect::<Vec<_>>().join(";"),
            !plain_hsts
        ),
        !wrong_scheme
            && !foreign_referer
            && own_referer
            && own_origin
            && !planted_passes
            && !adopted
            && host_cookie
            && hsts.contains("max-age=")
            && !plain_hsts,
    );
    assert!(ok, "C4b");
}
