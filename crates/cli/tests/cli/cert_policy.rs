//! Folder certificate policy through the product's calls, the real
//! binary: `Config/WritePolicy`, `Config/ReadPolicy` and
//! `Config/ClearPolicyAttribute` as vcert's `setpolicy`/`getpolicy` send
//! them, a locked value against a default in `Certificates/CheckPolicy`, a
//! request judged by what was written, bad names and values 400 with
//! `Error`, a missing right or scope 403, every change a chained event.

use serde_json::{Value, json};

use crate::certificates::{Call, csr};
use crate::process::{Api, Server, TokensExt as _};

const PASSWORD: &str = "a long passphrase";
const ZONE: &str = "\\VED\\Policy\\Zone";

fn attr(name: &str, values: &[&str], locked: bool) -> Value {
    json!({"ObjectDN": ZONE, "Class": "X509 Certificate", "AttributeName": name, "Values": values, "Locked": locked})
}

fn read(name: &str) -> Value {
    json!({"ObjectDN": ZONE, "Class": "X509 Certificate", "AttributeName": name, "Values": ["1"]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn folder_policy_written_read_back_and_cleared_like_vcert_setpolicy() {
    let server = Server::start(&["--insecure-http"], &[]);
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    server.admin(&["ca", "create", "Policy CA", "--subject", "CN=Policy CA"], "");
    server.admin(&["folders", "create", ZONE], "");
    for user in ["alice", "bob", "carol", "dave"] {
        server.admin(&["users", "create", user], &format!("{PASSWORD}\n"));
    }
    server.admin(&["rights", "grant", ZONE, "alice", "--rights", "view,read,write,create"], "");
    server.admin(&["rights", "grant", ZONE, "bob", "--rights", "view,read"], "");
    server.admin(&["rights", "grant", ZONE, "carol", "--rights", "view"], "");
    let scope = "certificate:manage;configuration:manage";
    server.admin(&["integrations", "create", "vcert", "--scope", scope, "--allow-all-users", "--password-grant", "true"], "");
    let api = Api::new(server.http_base());
    let alice = api.password_grant("vcert", "alice", PASSWORD, scope).await.access().to_owned();
    let alice_certs = api.password_grant("vcert", "alice", PASSWORD, "certificate:manage").await.access().to_owned();
    let bob = api.password_grant("vcert", "bob", PASSWORD, scope).await.access().to_owned();
    let carol = api.password_grant("vcert", "carol", PASSWORD, scope).await.access().to_owned();
    let dave = api.password_grant("vcert", "dave", PASSWORD, scope).await.access().to_owned();
    let c = Call { http: strongroom_testkit::api::client(), base: server.http_base() };
    let events_before = server.admin(&["events", "list", "--json", "--limit", "1000"], "").matches("certificate.policy_set").count();

    // What vcert's setpolicy writes (server version 25: the key as a PKIX parameter set).
    let writes = [
        attr("Certificate Authority", &["Policy CA"], true),
        attr("Organization", &["Acme"], true),
        attr("City", &["Paris"], false),
        attr("Organizational Unit", &["Ops", "Web"], true),
        attr("Domain Suffix Whitelist", &["example.org"], true),
        attr("Prohibit Wildcard", &["1"], false),
        attr("PKIX Parameter Set Policy", &["1.3.6.1.4.1.28783.10.1.1.3072"], true),
        attr("PKIX Parameter Set Policy Default", &["1.3.6.1.4.1.28783.10.1.1.3072"], true),
        attr("Manual Csr", &["0"], true),
        attr("Management Type", &["Provisioning"], false),
        attr("Prohibited SAN Types", &["IP", "URI"], false),
        attr("Allow Private Key Reuse", &["0"], true),
        attr("Want Renewal", &["0"], true),
        attr("Contact", &["alice"], true),
        attr("Approver", &["local:bob"], true),
    ];
    for body in &writes {
        let (status, v) = c.post(&alice, "/vedsdk/Config/WritePolicy", body.clone()).await;
        assert_eq!((status, &v), (200, &json!({"Result": 1})), "{body}");
    }

    // Read back, each as written (vcert's getpolicy reads Contact, then Identity/Validate).
    let (status, v) = c.post(&bob, "/vedsdk/Config/ReadPolicy", read("Organization")).await;
    assert_eq!((status, v), (200, json!({"Locked": true, "Result": 1, "Values": ["Acme"]})));
    let (_, v) = c.post(&bob, "/vedsdk/Config/ReadPolicy", read("City")).await;
    assert_eq!(v, json!({"Locked": false, "Result": 1, "Values": ["Paris"]}));
    let (_, v) = c.post(&bob, "/vedsdk/Config/ReadPolicy", read("Key Bit Strength")).await;
    assert_eq!(v, json!({"Locked": true, "Result": 1, "Values": ["3072"]}));
    let (_, v) = c.post(&bob, "/vedsdk/Config/ReadPolicy", read("Prohibited SAN Types")).await;
    assert_eq!(v["Values"], json!(["IP", "URI"]));
    let (_, v) = c.post(&bob, "/vedsdk/Config/ReadPolicy", read("Certificate Authority")).await;
    assert_eq!(v["Values"], json!(["\\VED\\Policy\\CA Templates\\Policy CA"]));
    for (name, who) in [("Contact", "alice"), ("Approver", "bob")] {
        let (_, v) = c.post(&bob, "/vedsdk/Config/ReadPolicy", read(name)).await;
        let universal = v["Values"][0].as_str().unwrap_or_default().to_owned();
        assert!(universal.starts_with("local:{"), "{name} is stored as a prefixed universal: {v}");
        let (status, id) = c.post(&bob, "/vedsdk/Identity/Validate", json!({"ID": {"PrefixedUniversal": universal}})).await;
        assert_eq!((status, id["ID"]["Name"].as_str()), (200, Some(who)), "{id}");
    }
    let (_, v) = c.post(&bob, "/vedsdk/Config/ReadPolicy", read("State")).await;
    assert_eq!(v, json!({"Locked": false, "Result": 1, "Values": []}), "nothing set: no values");

    // CheckPolicy: the locked values as policy, the others as defaults.
    let (status, v) = c.post(&alice, "/vedsdk/certificates/checkpolicy", json!({"PolicyDN": "Zone"})).await;
    assert_eq!(status, 200, "{v}");
    let p = &v["Policy"];
    assert_eq!(p["CertificateAuthority"], json!({"Locked": true, "Value": "\\VED\\Policy\\CA Templates\\Policy CA"}));
    assert_eq!(p["Subject"]["Organization"], json!({"Locked": true, "Value": "Acme"}));
    assert_eq!(p["Subject"]["City"], json!({"Locked": false, "Value": "Paris"}));
    assert_eq!(p["Subject"]["OrganizationalUnit"], json!({"Locked": true, "Values": ["Ops", "Web"]}));
    assert_eq!(p["KeyPair"]["KeyAlgorithm"], json!({"Locked": true, "Value": "RSA"}));
    assert_eq!(p["KeyPair"]["KeySize"], json!({"Locked": true, "Value": 3072}));
    assert_eq!(p["CsrGeneration"], json!({"Locked": true, "Value": "ServiceGenerated"}));
    assert_eq!(p["ManagementType"], json!({"Locked": false, "Value": "Provisioning"}));
    assert_eq!((p["SubjAltNameIpAllowed"].clone(), p["SubjAltNameUriAllowed"].clone()), (json!(false), json!(false)));
    assert_eq!((p["SubjAltNameDnsAllowed"].clone(), p["SubjAltNameEmailAllowed"].clone()), (json!(true), json!(true)));
    assert_eq!((p["WhitelistedDomains"].clone(), p["WildcardsAllowed"].clone()), (json!(["example.org"]), json!(false)));
    assert_eq!(p["PrivateKeyReuseAllowed"], false);

    // A request is judged by it: a user CSR under Manual Csr 0, a name outside the whitelist.
    let request = |pem: &str, cn: &str| json!({"PolicyDN": ZONE, "PKCS10": pem, "ObjectName": cn});
    let ec = csr(dir, "a", "/CN=a.example.org/O=Acme", &["a.example.org"], None);
    let (status, v) = c.post(&alice, "/vedsdk/certificates/request", request(&ec, "a.example.org")).await;
    assert_eq!(status, 400, "{v}");
    assert!(v["Error"].as_str().unwrap_or_default().contains("Manual Csr"), "{v}");
    // Cleared: the CSR rule and the key; then a P-256 CSR in the whitelist is issued, one outside refused.
    for name in ["Manual Csr", "PKIX Parameter Set Policy", "City"] {
        let body = json!({"ObjectDN": ZONE, "Class": "X509 Certificate", "AttributeName": name});
        let (status, v) = c.post(&alice, "/vedsdk/Config/ClearPolicyAttribute", body).await;
        assert_eq!((status, v), (200, json!({"Result": 1})), "{name}");
    }
    let (_, v) = c.post(&alice, "/vedsdk/Config/ReadPolicy", read("City")).await;
    assert_eq!(v["Values"], json!([]), "cleared");
    let (_, v) = c.post(&alice, "/vedsdk/certificates/checkpolicy", json!({"PolicyDN": ZONE})).await;
    assert_eq!(v["Policy"]["Subject"]["City"], json!({"Locked": false, "Value": ""}));
    assert_eq!(v["Policy"]["CsrGeneration"], json!({"Locked": false, "Value": "UserProvided"}));
    assert_eq!(v["Policy"]["KeyPair"]["KeyAlgorithm"]["Locked"], false);
    let (status, v) = c.post(&alice, "/vedsdk/certificates/request", request(&ec, "a.example.org")).await;
    assert_eq!(status, 200, "{v}");
    let out = csr(dir, "b", "/CN=b.example.com/O=Acme", &["b.example.com"], None);
    let (status, v) = c.post(&alice, "/vedsdk/certificates/request", request(&out, "b.example.com")).await;
    assert_eq!(status, 400, "{v}");
    assert!(v["Error"].as_str().unwrap_or_default().contains("not in the domains allowed by policy"), "{v}");

    // Bad names and values: 400 with Error, nothing written.
    for (body, says) in [
        (attr("Favourite Colour", &["blue"], true), "not supported"),
        (attr("Key Bit Strength", &["1024"], true), "key size"),
        (attr("Elliptic Curve", &["P999"], true), "P256"),
        (attr("Manual Csr", &["maybe"], true), "0 or 1"),
        (attr("Prohibited SAN Types", &["Fax"], true), "SAN type"),
        (attr("Management Type", &["Sometimes"], true), "management type"),
        (attr("Certificate Authority", &["No Such CA"], true), "No Such CA"),
        (attr("Contact", &["nobody"], true), "not an identity"),
        (attr("Organization", &["A", "B"], true), "one value"),
        (json!({"ObjectDN": ZONE, "Class": "Policy", "AttributeName": "City", "Values": ["x"]}), "X509 Certificate"),
        (
            json!({"ObjectDN": "\\VED\\Policy\\Nope", "Class": "X509 Certificate", "AttributeName": "City", "Values": ["x"]}),
            "does not exist",
        ),
    ] {
        let (status, v) = c.post(&alice, "/vedsdk/Config/WritePolicy", body.clone()).await;
        assert_eq!(status, 400, "{body}: {v}");
        assert!(v["Error"].as_str().unwrap_or_default().contains(says), "{body}: {v}");
    }
    let (_, v) = c.post(&alice, "/vedsdk/Config/ReadPolicy", read("Key Bit Strength")).await;
    assert_eq!(v["Values"], json!([]), "a refused write wrote nothing");

    // Rights and scopes: 403, never 401; no right at all is a folder that does not exist.
    let (status, v) = c.post(&bob, "/vedsdk/Config/WritePolicy", attr("State", &["IDF"], true)).await;
    assert_eq!(status, 403, "Read without Write: {v}");
    let (status, _) = c.post(&bob, "/vedsdk/Config/ClearPolicyAttribute", read("Organization")).await;
    assert_eq!(status, 403, "clearing needs Write too");
    let (status, _) = c.post(&carol, "/vedsdk/Config/ReadPolicy", read("Organization")).await;
    assert_eq!(status, 403, "View without Read");
    let (status, v) = c.post(&dave, "/vedsdk/Config/ReadPolicy", read("Organization")).await;
    assert_eq!(status, 400, "{v}");
    let (status, _) = c.post(&alice_certs, "/vedsdk/Config/WritePolicy", attr("State", &["IDF"], true)).await;
    assert_eq!(status, 403, "a token without configuration:manage");
    let (_, v) = c.post(&alice, "/vedsdk/Config/ReadPolicy", read("Organization")).await;
    assert_eq!(v["Values"], json!(["Acme"]), "the refused calls changed nothing");

    // Racing writes of different attributes on the one folder: none is lost (each write is
    // conditional on the policy it read, and reads again when another landed first).
    let racing = [
        ("State", "IDF"),
        ("Country", "FR"),
        ("City", "Lyon"),
        ("Manual Csr", "1"),
        ("Key Bit Strength", "4096"),
        ("Elliptic Curve", "P384"),
        ("Management Type", "Enrollment"),
        ("Allow Private Key Reuse", "1"),
    ];
    let mut tasks = Vec::new();
    for (name, value) in racing {
        let (c, token) = (Call { http: c.http.clone(), base: c.base.clone() }, alice.clone());
        tasks.push(tokio::spawn(async move { c.post(&token, "/vedsdk/Config/WritePolicy", attr(name, &[value], true)).await }));
    }
    for t in tasks {
        let (status, v) = t.await.unwrap();
        assert_eq!(status, 200, "{v}");
    }
    for (name, value) in racing {
        let (_, v) = c.post(&bob, "/vedsdk/Config/ReadPolicy", read(name)).await;
        assert_eq!(v["Values"], json!([value]), "{name} kept under concurrency");
    }

    // Every change is one chained event (the writes, 3 clears, the racing writes); the chain holds.
    let events = server.admin(&["events", "list", "--json", "--limit", "1000"], "");
    assert_eq!(events.matches("certificate.policy_set").count() - events_before, writes.len() + 3 + racing.len(), "{events}");
    assert!(server.admin(&["events", "verify"], "").contains("event log intact"));
}
