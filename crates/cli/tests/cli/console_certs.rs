//! The console's certificate pages on the real binary, as a
//! browser without JavaScript uses them: a root CA created through the form
//! is the one `admin ca list` lists (its certificate the one `ca show --pem`
//! prints, its event naming the signed-in person), a policy set through the
//! form is what `Certificates/CheckPolicy` answers, a post without the
//! anti-forgery token is refused and changes nothing, and a user who is no
//! Master Admin is refused every page and post.

use std::collections::BTreeMap;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::certificates::Call;
use crate::process::{Api, Server, TokensExt as _};

const PASSWORD: &str = "a long passphrase";

/// One browser on the console: its cookies and anti-forgery token.
struct Browser {
    http: reqwest::Client,
    base: String,
    cookies: BTreeMap<String, String>,
    csrf: String,
}

impl Browser {
    async fn signed_in(base: &str, user: &str) -> Browser {
        let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
        let mut b = Browser { http, base: base.to_owned(), cookies: BTreeMap::new(), csrf: String::new() };
        let (st, html, _) = b.get("/admin").await;
        assert_eq!(st, StatusCode::OK, "{html}");
        let at = html.find("name=\"csrf\" value=\"").unwrap() + "name=\"csrf\" value=\"".len();
        b.csrf = html[at..].split('"').next().unwrap().to_owned();
        let (st, html) = b.post("/admin", &[("username", user), ("password", PASSWORD)]).await;
        assert_eq!(st, StatusCode::SEE_OTHER, "{html}");
        b
    }

    fn absorb(&mut self, r: &reqwest::Response) {
        strongroom_testkit::page::absorb_cookies(&mut self.cookies, r.headers());
    }

    fn cookie(&self) -> String {
        strongroom_testkit::page::cookie_header(&self.cookies)
    }

    async fn get(&mut self, path: &str) -> (StatusCode, String, reqwest::header::HeaderMap) {
        let r = self.http.get(format!("{}{path}", self.base)).header("cookie", self.cookie()).send().await.unwrap();
        self.absorb(&r);
        let (st, h) = (r.status(), r.headers().clone());
        (st, r.text().await.unwrap(), h)
    }

    /// Posts `form` as the page does; with `csrf` false, without the anti-forgery field.
    async fn post_with(&mut self, path: &str, form: &[(&str, &str)], csrf: bool) -> (StatusCode, String) {
        let mut form = form.to_vec();
        let token = self.csrf.clone();
        if csrf {
            form.push(("csrf", &token));
        }
        let r = self
            .http
            .post(format!("{}{path}", self.base))
            .header("cookie", self.cookie())
            .header("origin", &self.base)
            .form(&form)
            .send()
            .await
            .unwrap();
        self.absorb(&r);
        (r.status(), r.text().await.unwrap())
    }

    async fn post(&mut self, path: &str, form: &[(&str, &str)]) -> (StatusCode, String) {
        self.post_with(path, form, true).await
    }
}

fn ca_list(server: &Server) -> Vec<Value> {
    serde_json::from_str::<Value>(&server.admin(&["ca", "list", "--json"], "")).unwrap().as_array().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cas_and_policies_through_the_console() {
    let server = Server::start(&["--insecure-http"], &[]);
    let base = server.http_base();
    server.admin(&["users", "create", "root", "--master-admin"], &format!("{PASSWORD}\n"));
    server.admin(&["users", "create", "alice"], &format!("{PASSWORD}\n"));
    server.admin(&["folders", "create", "\\VED\\Policy\\Web"], "");
    server.admin(&["rights", "grant", "\\VED\\Policy\\Web", "alice", "--rights", "view,read,write,create"], "");
    server
        .admin(&["integrations", "create", "vcert", "--scope", "certificate:manage", "--allow-all-users", "--password-grant", "true"], "");

    // The pages, linked from the menu.
    let mut root = Browser::signed_in(&base, "root").await;
    let (st, html, _) = root.get("/admin").await;
    assert_eq!(st, StatusCode::OK);
    assert!(html.contains("href=\"/admin/cas\"") && html.contains("href=\"/admin/policies\""), "{html}");
    let (st, html, h) = root.get("/admin/cas").await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert!(h["content-security-policy"].to_str().unwrap().starts_with("default-src 'none'"));
    assert!(html.contains("aria-current=\"page\"") && html.contains("0 CAs") && html.contains("id=\"create_ca\""), "{html}");

    // A root CA through the form: the CLI lists it, with the form's values; its event names root.
    let form = [("name", "Console CA"), ("algorithm", "p384"), ("subject", "CN=Console CA, O=Acme"), ("validity_days", "30"), ("key", "")];
    let (st, html) = root.post("/admin/cas/create", &form).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert!(html.contains("CA Console CA created: \\VED\\Policy\\CA Templates\\Console CA"), "{html}");
    let listed = ca_list(&server);
    assert_eq!(listed.len(), 1, "{listed:?}");
    let ca = &listed[0];
    assert_eq!((ca["name"].as_str(), ca["kind"].as_str(), ca["algorithm"].as_str()), (Some("Console CA"), Some("root"), Some("p384")));
    assert_eq!((ca["subject"].as_str(), ca["validity_days"].as_i64()), (Some("CN=Console CA, O=Acme"), Some(30)));
    assert!(ca["key"].as_str().unwrap().starts_with("sealed by Software:"), "{ca}");
    let events = server.admin(&["events", "list", "--kind", "certificate.ca_created", "--json"], "");
    assert!(events.contains("\"user\":\"root\"") && events.contains("ca=Console CA algorithm=p384"), "{events}");
    // The list and the CA's page: its certificate (as the CLI prints it), chain and CRL URL.
    let (_, html, _) = root.get("/admin/cas").await;
    assert!(html.contains("1 CA<") && html.contains(">Console CA</a>") && html.contains("software, sealed by Software:"), "{html}");
    let (st, html, _) = root.get("/admin/cas/show?name=Console%20CA").await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert!(html.contains("id=\"kind\">root<") && html.contains("/crl/console%20ca.crl"), "{html}");
    let pem = server.admin(&["ca", "show", "Console CA", "--pem"], "");
    let (st, file, h) = root.get("/admin/cas/pem?name=Console%20CA").await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(h["content-type"], "application/x-pem-file");
    assert_eq!(h["content-disposition"], "attachment; filename=\"Console_CA.pem\"");
    assert_eq!(file.trim(), pem.trim());
    assert!(html.contains(pem.trim().lines().nth(1).unwrap()), "the page shows the PEM");
    assert_eq!(root.get("/admin/cas/show?name=nope").await.0, StatusCode::NOT_FOUND);
    // The act's own checks: the same name again, a bad algorithm, a bad validity; nothing made.
    for (bad, status, says) in [
        (vec![("name", "console ca")], StatusCode::CONFLICT, "exists"),
        (vec![("name", "Other"), ("algorithm", "dsa")], StatusCode::BAD_REQUEST, "p256, p384"),
        (vec![("name", "Other"), ("validity_days", "0")], StatusCode::BAD_REQUEST, "1 to 3650"),
        (vec![("name", "a\\b")], StatusCode::BAD_REQUEST, "CA names are"),
    ] {
        let (st, html) = root.post("/admin/cas/create", &bad).await;
        assert_eq!(st, status, "{bad:?}: {html}");
        assert!(html.contains(says), "{bad:?}: {html}");
    }
    assert_eq!(ca_list(&server).len(), 1);
    // An intermediate made with the CLI, waiting for its certificate: pending, no PEM, no CRL yet.
    let work = tempfile::tempdir().unwrap();
    let csr = work.path().join("sub.csr").display().to_string();
    server.admin(&["ca", "create", "Sub CA", "--intermediate", "--csr-out", &csr], "");
    let (_, html, _) = root.get("/admin/cas").await;
    assert!(html.contains(">Sub CA</a></th><td>pending</td>") && html.contains("not installed"), "{html}");
    let (st, html, _) = root.get("/admin/cas/show?name=Sub%20CA").await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert!(html.contains("id=\"kind\">pending<") && html.contains("waits for its certificate") && !html.contains("/crl/"), "{html}");
    assert_eq!(root.get("/admin/cas/pem?name=Sub%20CA").await.0, StatusCode::NOT_FOUND);

    // A policy through the form: shown as `admin policy show` says, and what CheckPolicy answers.
    let (st, html, _) = root.get("/admin/policies?folder=%5CVED%5CPolicy%5CWeb").await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert!(html.contains("id=\"set_policy\"") && html.contains("<option value=\"Console CA\">"), "{html}");
    let web = "\\VED\\Policy\\Web";
    let (st, html) =
        root.post("/admin/policies/set", &[("folder", web), ("ca", "Console CA"), ("organization", "Acme"), ("locked", "1")]).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    let (st, html) = root
        .post("/admin/policies/set", &[("folder", web), ("domains", "example.com, example.org"), ("wildcards", "false"), ("city", "Lyon")])
        .await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert!(html.contains("Acme <strong>(locked)</strong>") && html.contains("Lyon <span class=\"muted\">(default)</span>"), "{html}");
    let events = server.admin(&["events", "list", "--kind", "certificate.policy_set", "--json"], "");
    assert_eq!(events.matches("\"user\":\"root\"").count(), 2, "{events}");
    let shown = server.admin(&["policy", "show", web], "");
    assert!(shown.contains("Acme (locked)") && shown.contains("Lyon (default)") && shown.contains("example.com, example.org"), "{shown}");
    let (st, html) = root.post("/admin/policies/set", &[("folder", web), ("curve", "P999")]).await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{html}");
    assert_eq!(root.post("/admin/policies/set", &[("folder", "\\VED\\Policy\\Nope"), ("city", "x")]).await.0, StatusCode::NOT_FOUND);
    assert_eq!(root.post("/admin/policies/set", &[("folder", "\\VED\\Other"), ("city", "x")]).await.0, StatusCode::BAD_REQUEST);
    let alice = Api::new(base.clone()).password_grant("vcert", "alice", PASSWORD, "certificate:manage").await.access().to_owned();
    let call = Call { http: strongroom_testkit::api::client(), base: base.clone() };
    let (status, v) = call.post(&alice, "/vedsdk/certificates/checkpolicy", json!({"PolicyDN": web})).await;
    assert_eq!(status, 200, "{v}");
    let p = &v["Policy"];
    assert_eq!(p["CertificateAuthority"], json!({"Locked": true, "Value": "\\VED\\Policy\\CA Templates\\Console CA"}));
    assert_eq!(p["Subject"]["Organization"], json!({"Locked": true, "Value": "Acme"}));
    assert_eq!(p["Subject"]["City"], json!({"Locked": false, "Value": "Lyon"}));
    assert_eq!(p["WhitelistedDomains"], json!(["example.com", "example.org"]));
    assert_eq!(p["WildcardsAllowed"], false);

    // Without the anti-forgery token: refused, nothing changed.
    let before = server.admin(&["policy", "show", web], "");
    let (st, html) = root.post_with("/admin/cas/create", &[("name", "Forged")], false).await;
    assert_eq!(st, StatusCode::FORBIDDEN, "{html}");
    let (st, _) = root.post_with("/admin/policies/set", &[("folder", web), ("city", "Forged")], false).await;
    assert_eq!(st, StatusCode::FORBIDDEN);
    assert_eq!(ca_list(&server).len(), 2);
    assert_eq!(server.admin(&["policy", "show", web], ""), before);

    // Someone who is no Master Admin (with rights on the folder): no link, every page and post refused.
    let mut a = Browser::signed_in(&base, "alice").await;
    let (_, html, _) = a.get("/admin").await;
    assert!(!html.contains("/admin/cas") && !html.contains("/admin/policies"), "{html}");
    for p in [
        "/admin/cas",
        "/admin/cas/show?name=Console%20CA",
        "/admin/cas/pem?name=Console%20CA",
        "/admin/policies?folder=%5CVED%5CPolicy%5CWeb",
    ] {
        assert_eq!(a.get(p).await.0, StatusCode::FORBIDDEN, "{p}");
    }
    assert_eq!(a.post("/admin/cas/create", &[("name", "Alice CA")]).await.0, StatusCode::FORBIDDEN);
    assert_eq!(a.post("/admin/policies/set", &[("folder", web), ("city", "Alice")]).await.0, StatusCode::FORBIDDEN);
    assert_eq!(ca_list(&server).len(), 2);
    assert_eq!(server.admin(&["policy", "show", web], ""), before);
    server.stop();
}

/// A root CA whose key is made in a SoftHSM token, created through the
/// console's form: the form offers the configured PKCS#11 key, the CLI then
/// shows the key in that token, and the console's list says token and label.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_root_ca_with_a_token_key_through_the_console() {
    use crate::hsm::{Hsm, TOKEN, softhsm_module};
    let Some(module) = softhsm_module() else {
        strongroom_testkit::skip("SoftHSM2 (softhsm2-util and libsofthsm2.so) is not installed: the console's token CA test cannot run");
        return;
    };
    let hsm = Hsm::init(module);
    let config = hsm.config("config.toml", &[("hsm", TOKEN, hsm.pin_file())]);
    let data = hsm.dir.path().join("data");
    let conf = hsm.conf();
    let env = [("SOFTHSM2_CONF", conf.as_str())];
    let admin =
        |args: &[&str], stdin: &str| crate::process::admin(&data, &[&["--config", config.as_str()][..], args].concat(), &env, stdin);
    admin(&["init"], "");
    admin(&["keys", "create", "PKCS11:hsm"], "");
    admin(&["users", "create", "root", "--master-admin"], &format!("{PASSWORD}\n"));
    let server = Server::start_on(data.clone(), &["--insecure-http", "--config", &config], &env);
    let mut root = Browser::signed_in(&server.http_base(), "root").await;
    let (st, html, _) = root.get("/admin/cas").await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert!(html.contains("<option value=\"PKCS11:hsm\">"), "{html}");
    let (st, html) = root.post("/admin/cas/create", &[("name", "Token CA"), ("algorithm", "p256"), ("key", "PKCS11:hsm")]).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert!(html.contains("token PKCS11:hsm, label strongroom CA Token CA"), "{html}");
    let shown = server.admin(&["--config", &config, "ca", "show", "Token CA"], "");
    assert!(shown.contains("key:         in the token of PKCS11:hsm") && shown.contains("kind:        root"), "{shown}");
    // A key that is not a configured token's: the act refuses it, nothing made.
    let (st, html) = root.post("/admin/cas/create", &[("name", "Nowhere CA"), ("key", "PKCS11:nope")]).await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{html}");
    assert!(!server.admin(&["--config", &config, "ca", "list"], "").contains("Nowhere CA"));
    server.stop();
}

/// The console's pending certificates (Manual Approval): the list, the confirmation page, an
/// approval that issues (Retrieve then 200), a rejection with its reason (Retrieve then the
/// failed shape), posts without the anti-forgery token refused with nothing changed, a stale
/// confirmation page refused, and no page for a user who is no Master Admin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_certificates_are_approved_and_rejected_through_the_console() {
    let server = Server::start(&["--insecure-http"], &[]);
    let base = server.http_base();
    server.admin(&["ca", "create", "Issuing CA"], "");
    let web = "\\VED\\Policy\\Web";
    server.admin(&["folders", "create", web], "");
    server.admin(&["policy", "set", web, "--issuing-ca", "Issuing CA", "--manual-approval", "true"], "");
    server.admin(&["users", "create", "root", "--master-admin"], &format!("{PASSWORD}\n"));
    server.admin(&["users", "create", "alice"], &format!("{PASSWORD}\n"));
    server.admin(&["rights", "grant", web, "alice", "--rights", "view,read,write,create"], "");
    server
        .admin(&["integrations", "create", "vcert", "--scope", "certificate:manage", "--allow-all-users", "--password-grant", "true"], "");
    let alice = Api::new(base.clone()).password_grant("vcert", "alice", PASSWORD, "certificate:manage").await.access().to_owned();
    let call = Call { http: strongroom_testkit::api::client(), base: base.clone() };
    let mut dns = Vec::new();
    for name in ["one.example.com", "two.example.com"] {
        let (status, v) = call
            .post(
                &alice,
                "/vedsdk/certificates/request",
                json!({"PolicyDN": web, "Subject": name, "KeyAlgorithm": "ECC", "EllipticCurve": "P256"}),
            )
            .await;
        assert_eq!(status, 200, "{v}");
        dns.push(v["CertificateDN"].as_str().unwrap().to_owned());
    }
    let retrieve = |dn: String| {
        let (call, alice) = (&call, &alice);
        async move { call.post(alice, "/vedsdk/certificates/retrieve", json!({"CertificateDN": dn})).await }
    };
    assert_eq!(retrieve(dns[0].clone()).await.0, 202);

    let mut root = Browser::signed_in(&base, "root").await;
    let (st, html, _) = root.get("/admin/certificates/pending").await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert!(html.contains("one.example.com") && html.contains("two.example.com") && html.contains("2 requests"), "{html}");
    let q = |dn: &str, v: &str| {
        reqwest::Url::parse_with_params("http://x/", &[("dn", dn), ("version", v)]).unwrap().query().unwrap().to_owned()
    };
    let (st, html, _) = root.get(&format!("/admin/certificates/approve?{}", q(&dns[0], "0"))).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert!(html.contains("Approve and issue") && html.contains("name=\"version\" value=\"0\""), "{html}");
    // Without the anti-forgery token: refused, nothing issued.
    let (st, _) = root.post_with("/admin/certificates/approve", &[("dn", &dns[0]), ("version", "0")], false).await;
    assert_eq!(st, StatusCode::FORBIDDEN);
    assert_eq!(retrieve(dns[0].clone()).await.0, 202, "still waiting");
    // A page of another version (the request changed since): refused.
    let (st, html) = root.post("/admin/certificates/approve", &[("dn", &dns[0]), ("version", "7")]).await;
    assert!(html.contains("approved, rejected or replaced meanwhile"), "{st}: {html}");
    assert_eq!(retrieve(dns[0].clone()).await.0, 202, "still waiting");
    let (st, html) = root.post("/admin/certificates/approve", &[("dn", &dns[0]), ("version", "0")]).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert!(html.contains("is issued"), "{html}");
    let (status, v) = retrieve(dns[0].clone()).await;
    assert_eq!(status, 200, "{v}");
    // The rejection asks for a reason; the requester then sees it.
    let (st, html, _) = root.get(&format!("/admin/certificates/reject?{}", q(&dns[1], "0"))).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert!(html.contains("name=\"reason\""), "{html}");
    let (st, html) = root.post("/admin/certificates/reject", &[("dn", &dns[1]), ("version", "0"), ("reason", "not this one")]).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    let (status, v) = retrieve(dns[1].clone()).await;
    assert_eq!(status, 500, "{v}");
    assert!(v["Status"].as_str().unwrap().contains("not this one"), "{v}");
    let events = server.admin(&["events", "list", "--json", "--kind", "certificate.approved"], "");
    assert!(events.contains("\"user\":\"root\""), "the approval names the signed-in person: {events}");
    // No Master Admin: no page, no post.
    let mut a = Browser::signed_in(&base, "alice").await;
    assert_eq!(a.get("/admin/certificates/pending").await.0, StatusCode::FORBIDDEN);
    assert_eq!(a.post("/admin/certificates/approve", &[("dn", &dns[1]), ("version", "1")]).await.0, StatusCode::FORBIDDEN);
    server.stop();
}
