//! Manual approval of certificates end to end: the real binary, a
//! folder policy's and a CA template's `Manual Approval` (`admin policy set
//! --manual-approval`, `admin ca create --manual-approval`), then the
//! product's calls over HTTP: a Request answers 200 and issues nothing,
//! Retrieve answers 202 `{"Stage":500,"Status":"Pending workflow resolution…"}`
//! (after `WorkToDoTimeout` when given; a Request with it still 200), `GET
//! Certificates/{guid}` shows `ProcessingDetails`; `admin certificates
//! approve` issues (verified with `openssl verify -CAfile`), `reject` makes
//! Retrieve answer the failed shape (500), Retry sets it waiting again, Reset
//! drops it; a caller without Write gets 403; every step is a chained event.

use serde_json::json;

use crate::certificates::{Call, csr, openssl};
use crate::process::{Api, Server, TokensExt as _};

const PASSWORD: &str = "a long passphrase";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manual_approval_parks_then_approval_issues_and_rejection_fails() {
    let server = Server::start(&["--insecure-http"], &[]);
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    server.admin(&["ca", "create", "Issuing CA"], "");
    let gated = server.admin(&["ca", "create", "Gated CA", "--manual-approval"], "");
    assert!(gated.contains("Gated CA"), "{gated}");
    assert!(server.admin(&["ca", "show", "Gated CA"], "").contains("approval:    manual"));
    std::fs::write(dir.join("ca.pem"), server.admin(&["ca", "show", "Issuing CA", "--pem"], "")).unwrap();
    std::fs::write(dir.join("gated.pem"), server.admin(&["ca", "show", "Gated CA", "--pem"], "")).unwrap();
    // A folder whose policy asks for approval (inherited below it), and one whose CA does.
    server.admin(&["folders", "create", "\\VED\\Policy\\Web"], "");
    server.admin(&["folders", "create", "\\VED\\Policy\\Web\\Gated"], "");
    server.admin(&["policy", "set", "\\VED\\Policy\\Web", "--issuing-ca", "Issuing CA"], "");
    let shown = server.admin(&["policy", "set", "\\VED\\Policy\\Web\\Gated", "--manual-approval", "true"], "");
    assert!(shown.contains("manual approval:     true (default)"), "{shown}");
    server.admin(&["folders", "create", "\\VED\\Policy\\ByCa"], "");
    server.admin(&["policy", "set", "\\VED\\Policy\\ByCa", "--issuing-ca", "Gated CA"], "");
    for user in ["alice", "bob", "carol"] {
        server.admin(&["users", "create", user], &format!("{PASSWORD}\n"));
    }
    for f in ["\\VED\\Policy\\Web", "\\VED\\Policy\\ByCa"] {
        server.admin(&["rights", "grant", f, "alice", "--rights", "view,read,write,create,privatekeyread"], "");
        server.admin(&["rights", "grant", f, "bob", "--rights", "view,read"], "");
    }
    // The approver over the API: Manage Permissions on the gated folder.
    server.admin(&["rights", "grant", "\\VED\\Policy\\Web\\Gated", "carol", "--rights", "view,read,managepermissions"], "");
    server.admin(
        &["integrations", "create", "vcert", "--scope", "certificate:manage,revoke", "--allow-all-users", "--password-grant", "true"],
        "",
    );
    let api = Api::new(server.http_base());
    let alice = api.password_grant("vcert", "alice", PASSWORD, "certificate:manage").await.access().to_owned();
    let bob = api.password_grant("vcert", "bob", PASSWORD, "certificate:manage").await.access().to_owned();
    let carol = api.password_grant("vcert", "carol", PASSWORD, "certificate:manage").await.access().to_owned();
    let c = Call { http: strongroom_testkit::api::client(), base: server.http_base() };

    // A request under the gated folder: 200 (never 202), nothing issued.
    let pem = csr(dir, "www", "/CN=www.example.com", &["www.example.com"], Some(2048));
    let (status, v) = c.post(&alice, "/vedsdk/certificates/request", json!({"PolicyDN": "\\VED\\Policy\\Web\\Gated", "PKCS10": pem})).await;
    assert_eq!(status, 200, "{v}");
    let www = v["CertificateDN"].as_str().unwrap().to_owned();
    let guid = v["Guid"].as_str().unwrap().to_owned();
    assert_eq!(www, "\\VED\\Policy\\Web\\Gated\\www.example.com");
    // Retrieve: 202 with the product's body and status line.
    let (status, v) = c.post(&alice, "/vedsdk/certificates/retrieve", json!({"CertificateDN": www})).await;
    assert_eq!(status, 202, "{v}");
    assert_eq!(v["Stage"], 500, "{v}");
    assert!(v["Status"].as_str().unwrap().to_lowercase().contains("pending workflow resolution"), "{v}");
    assert!(v.get("CertificateData").is_none(), "{v}");
    // GET Certificates/{guid}: the processing details pyvenafi reads.
    let (status, _, v) = c.get(&alice, &format!("/vedsdk/certificates/{guid}")).await;
    assert_eq!(status, 200, "{v}");
    let pd = &v["ProcessingDetails"];
    assert_eq!((pd["Stage"].as_i64(), pd["InError"].as_bool()), (Some(500), Some(false)), "{v}");
    assert!(v["CertificateDetails"].get("Thumbprint").is_none(), "no certificate yet: {v}");
    // With WorkToDoTimeout, Retrieve waits, then still 202; a Request with it still answers 200.
    let started = std::time::Instant::now();
    let (status, v) = c.post(&alice, "/vedsdk/certificates/retrieve", json!({"CertificateDN": www, "WorkToDoTimeout": "1"})).await;
    assert_eq!(status, 202, "{v}");
    assert!(started.elapsed() >= std::time::Duration::from_millis(700), "waited {:?}", started.elapsed());
    let pem2 = csr(dir, "api", "/CN=api.example.com", &["api.example.com"], None);
    let (status, v) = c
        .post(
            &alice,
            "/vedsdk/certificates/request",
            json!({"PolicyDN": "\\VED\\Policy\\Web\\Gated", "PKCS10": pem2, "WorkToDoTimeout": 1}),
        )
        .await;
    assert_eq!(status, 200, "never 202 on Request: {v}");
    assert!(v.get("CertificateData").is_none(), "{v}");
    let api_dn = v["CertificateDN"].as_str().unwrap().to_owned();
    // Not in the open folder: issued at once there.
    let open = csr(dir, "open", "/CN=open.example.com", &["open.example.com"], None);
    let (status, v) = c.post(&alice, "/vedsdk/certificates/request", json!({"PolicyDN": "\\VED\\Policy\\Web", "PKCS10": open})).await;
    assert_eq!(status, 200, "{v}");
    let (status, v) = c.post(&alice, "/vedsdk/certificates/retrieve", json!({"CertificateDN": v["CertificateDN"]})).await;
    assert_eq!(status, 200, "the parent folder does not ask for approval: {v}");

    // The approver's list, then the approval: Retrieve 200 with a certificate of the CA.
    let listed = server.admin(&["certificates", "pending"], "");
    assert!(listed.contains(&www) && listed.contains(&api_dn) && listed.contains("waiting"), "{listed}");
    let out = server.admin(&["certificates", "approve", &www], "");
    assert!(out.contains("approved"), "{out}");
    let data = c.retrieve(&alice, dir, "www.pem", json!({"CertificateDN": www, "Format": "Base64"})).await;
    assert!(String::from_utf8(data).unwrap().contains("BEGIN CERTIFICATE"));
    let (ok, text) = openssl(dir, &["verify", "-CAfile", "ca.pem", "www.pem"]);
    assert!(ok && text.contains("www.pem: OK"), "{text}");
    let (status, _, v) = c.get(&alice, &format!("/vedsdk/certificates/{guid}")).await;
    assert_eq!((status, v["ProcessingDetails"].clone()), (200, json!({})), "{v}");
    assert!(v["CertificateDetails"]["Thumbprint"].as_str().is_some_and(|t| !t.is_empty()), "{v}");
    // A second approval finds nothing waiting.
    let again = crate::process::run(&["admin", "--data-dir", &server.dir.display().to_string(), "certificates", "approve", &www], &[]);
    assert!(again.code != 0 && again.stderr.contains("waits for approval"), "{again:?}");

    // Over the API (the product's workflow tickets, as pyvenafi's Ticket feature calls them): the
    // ticket of the other waiting request; no Manage Permissions is 403, the approver issues.
    let (status, v) = c.post(&bob, "/vedsdk/workflow/ticket/enumerate", json!({"ObjectDN": api_dn})).await;
    assert_eq!(status, 200, "{v}");
    let ticket = v["GUIDs"][0].as_str().unwrap().to_owned();
    let (status, v) = c.post(&bob, "/vedsdk/workflow/ticket/status", json!({"GUID": ticket})).await;
    assert_eq!((status, v["Status"].as_str()), (200, Some("Pending")), "{v}");
    let (status, v) = c.post(&bob, "/vedsdk/workflow/ticket/updatestatus", json!({"GUID": ticket, "Status": "Approved"})).await;
    assert_eq!(status, 403, "no right to approve: {v}");
    let (status, v) = c.post(&alice, "/vedsdk/workflow/ticket/updatestatus", json!({"GUID": ticket, "Status": "Approved"})).await;
    assert_eq!(status, 403, "Create and Write do not approve: {v}");
    let (status, v) = c.post(&alice, "/vedsdk/certificates/retrieve", json!({"CertificateDN": api_dn})).await;
    assert_eq!(status, 202, "still waiting after the refusals: {v}");
    let (status, v) = c.post(&carol, "/vedsdk/workflow/ticket/updatestatus", json!({"GUID": ticket, "Status": "Approved"})).await;
    assert_eq!((status, v), (200, json!({"Result": 1})));
    c.retrieve(&alice, dir, "api.pem", json!({"CertificateDN": api_dn, "Format": "Base64"})).await;
    let (ok, text) = openssl(dir, &["verify", "-CAfile", "ca.pem", "api.pem"]);
    assert!(ok, "{text}");
    let (status, v) = c.post(&carol, "/vedsdk/workflow/ticket/updatestatus", json!({"GUID": ticket, "Status": "Approved"})).await;
    assert_eq!(status, 400, "the ticket is gone: {v}");
    let (_, v) = c.post(&carol, "/vedsdk/workflow/ticket/enumerate", json!({})).await;
    assert_eq!(v["GUIDs"], json!([]), "{v}");

    // A CA template's Manual Approval: a central-key request waits; reject, retry, reset.
    let (status, v) = c
        .post(
            &alice,
            "/vedsdk/certificates/request",
            json!({"PolicyDN": "\\VED\\Policy\\ByCa", "Subject": "svc.example.com", "KeyAlgorithm": "ECC", "EllipticCurve": "P256"}),
        )
        .await;
    assert_eq!(status, 200, "{v}");
    let svc = v["CertificateDN"].as_str().unwrap().to_owned();
    let svc_guid = v["Guid"].as_str().unwrap().to_owned();
    let (status, v) = c.post(&alice, "/vedsdk/certificates/retrieve", json!({"CertificateDN": svc})).await;
    assert_eq!(status, 202, "{v}");
    let out = server.admin(&["certificates", "reject", &svc, "--reason", "not an approved service"], "");
    assert!(out.contains("rejected"), "{out}");
    let (status, v) = c.post(&alice, "/vedsdk/certificates/retrieve", json!({"CertificateDN": svc})).await;
    assert_eq!(status, 500, "the product's failed shape: {v}");
    assert_eq!(v["Stage"], 500, "{v}");
    assert!(v["Status"].as_str().unwrap().contains("not an approved service"), "{v}");
    let (_, _, v) = c.get(&alice, &format!("/vedsdk/certificates/{svc_guid}")).await;
    assert_eq!(v["ProcessingDetails"]["InError"], true, "{v}");
    // Without Write: 403 (never 401); with it, Retry sets it waiting again, Reset drops it.
    for call in ["/vedsdk/certificates/retry", "/vedsdk/certificates/reset"] {
        let (status, v) = c.post(&bob, call, json!({"CertificateDN": svc})).await;
        assert_eq!(status, 403, "{call}: {v}");
    }
    let (status, v) = c.post(&alice, "/vedsdk/certificates/retry", json!({"CertificateDN": svc})).await;
    assert_eq!(status, 200, "{v}");
    let (status, v) = c.post(&alice, "/vedsdk/certificates/retrieve", json!({"CertificateDN": svc})).await;
    assert_eq!(status, 202, "waiting again after Retry: {v}");
    let (status, v) = c.post(&alice, "/vedsdk/certificates/reset", json!({"CertificateDN": svc})).await;
    assert_eq!((status, v), (200, json!({"ProcessingResetCompleted": true})));
    let (status, v) = c.post(&alice, "/vedsdk/certificates/retrieve", json!({"CertificateDN": svc})).await;
    assert_eq!(status, 400, "nothing waits and nothing was issued: {v}");
    let (status, _) = c.post(&alice, "/vedsdk/certificates/reset", json!({"CertificateDN": svc})).await;
    assert_eq!(status, 400, "no reset is required any more");
    // The CA's approval turned off: its requests are issued at once again (an approval of the
    // earlier waiting one is not needed).
    server.admin(&["ca", "set", "Gated CA", "--manual-approval", "false"], "");
    let (status, v) = c
        .post(
            &alice,
            "/vedsdk/certificates/request",
            json!({"PolicyDN": "\\VED\\Policy\\ByCa", "Subject": "svc.example.com", "KeyAlgorithm": "ECC", "EllipticCurve": "P256"}),
        )
        .await;
    assert_eq!(status, 200, "{v}");
    c.retrieve(&alice, dir, "svc.pem", json!({"CertificateDN": svc, "Format": "Base64"})).await;
    let (ok, text) = openssl(dir, &["verify", "-CAfile", "gated.pem", "svc.pem"]);
    assert!(ok, "{text}");

    // Every request, approval, rejection and reset is a chained event.
    let events = server.admin(&["events", "list", "--json", "--limit", "200"], "");
    for kind in
        ["certificate.requested", "certificate.approved", "certificate.rejected", "certificate.processing_reset", "certificate.ca_updated"]
    {
        assert!(events.contains(kind), "{kind} in the log");
    }
    assert_eq!(events.matches("\"certificate.approved\"").count(), 2, "two approvals");
    let verified = server.admin(&["events", "verify"], "");
    assert!(verified.contains("intact"), "{verified}");
    // Over the API, `admin certificates` is refused at once (like `ca` and `policy`).
    let r = crate::process::run(&["admin", "--server", &server.http_base(), "certificates", "pending"], &[]);
    assert_eq!(r.code, 2, "{r:?}");
    server.stop();
}
