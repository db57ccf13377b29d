//! N1: a certificate's private key leaves the server only to a
//! caller who may have it, and every time it does the chained log says so.
//! The refusals by scope (a `certificate` token cannot request, a
//! `certificate:manage` token cannot revoke) and Private Key Read on
//! `Certificates/Retrieve` are asserted step by step in
//! `crates/cli/tests/cli/certificates.rs`; the vault view's in
//! `crates/server/tests/it/certificates.rs`. Here: every way a key leaves
//! (PBES2 PKCS#8, PKCS #12, the vault's raw entry) is counted against the
//! `certificate.key_exported` events, refused exports against none.

use serde_json::{Value, json};

use crate::support::{Fx, PASSWORD, report};

const FOLDER: &str = "\\VED\\Policy\\Keys";
const SCOPE: &str = "certificate:manage;restricted:manage";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn n1_certificate_key_exports_are_refused_or_logged() {
    let fx = Fx::start(&[], &[]);
    fx.server.admin(&["ca", "create", "Key CA"], "");
    fx.server.admin(&["folders", "create", FOLDER], "");
    fx.server.admin(&["policy", "set", FOLDER, "--issuing-ca", "Key CA"], "");
    fx.server.admin(&["users", "create", "root", "--master-admin"], &format!("{PASSWORD}\n"));
    fx.user("bob", PASSWORD);
    fx.server.admin(&["rights", "grant", FOLDER, "alice", "--rights", "view,read,create,privatekeyread"], "");
    fx.server.admin(&["rights", "grant", FOLDER, "bob", "--rights", "view,read,create"], "");
    fx.server.admin(&["integrations", "create", "certs", "--scope", SCOPE, "--allow-all-users", "--password-grant", "true"], "");
    let mut tokens = Vec::new();
    for user in ["alice", "bob", "root"] {
        let body = json!({"client_id": "certs", "username": user, "password": PASSWORD, "scope": SCOPE});
        let (st, t) = fx.post_json("/vedauth/authorize/oauth", &body).await;
        assert_eq!(st, 200, "{t}");
        tokens.push(t["access_token"].as_str().unwrap().to_owned());
    }
    let [alice, bob, root] = [&tokens[0], &tokens[1], &tokens[2]];
    let call = |token: &str, op: &str, body: Value| {
        let req = fx.http.post(format!("{}/vedsdk/{op}", fx.base)).bearer_auth(token).json(&body);
        async move {
            let r = req.send().await.unwrap();
            let status = r.status().as_u16();
            (status, r.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    let body = json!({"PolicyDN": FOLDER, "Subject": "k.example.com", "KeyAlgorithm": "ECC", "EllipticCurve": "P256"});
    let (st, v) = call(alice, "certificates/request", body).await;
    assert_eq!(st, 200, "{v}");
    let dn = v["CertificateDN"].as_str().unwrap().to_owned();
    let export = |format: &str| json!({"CertificateDN": dn, "Format": format, "IncludePrivateKey": true, "Password": "an export password"});

    // Exports that may happen: alice (Private Key Read) as PKCS#8 and PKCS #12; the Master
    // Admin through the vault view (the key entry; the certificate entry is no export).
    let mut allowed = Vec::new();
    for format in ["Base64 (PKCS #8)", "PKCS #12"] {
        allowed.push((format!("alice {format}"), call(alice, "certificates/retrieve", export(format)).await.0 == 200));
    }
    let (st, v) = call(alice, "certificates/retrieve", json!({"CertificateDN": dn, "Format": "Base64"})).await;
    assert_eq!(st, 200, "the certificate alone: {v}");
    let (_, v) = call(root, "SecretStore/LookupByOwner", json!({"Namespace": "config", "Owner": dn})).await;
    let ids: Vec<Value> = v["VaultIDs"].as_array().cloned().unwrap_or_default();
    let mut key_id = None;
    for id in &ids {
        let (_, r) = call(root, "SecretStore/Retrieve", json!({"VaultID": id})).await;
        if r["VaultType"] == 256 {
            allowed.push(("Master Admin SecretStore/Retrieve".into(), r["Result"] == 0));
            key_id = Some(id.clone());
        }
    }
    let key_id = key_id.unwrap_or_else(|| panic!("no key entry among {ids:?}"));
    // Exports that may not: bob has Read without Private Key Read; through the vault only a
    // Master Admin retrieves (the product's rule), so alice's Private Key Read does not open it.
    let mut refused = Vec::new();
    for format in ["Base64 (PKCS #8)", "PKCS #12"] {
        refused.push((format!("bob {format}"), call(bob, "certificates/retrieve", export(format)).await.0 == 403));
    }
    for (who, token) in [("bob", bob), ("alice", alice)] {
        let (st, r) = call(token, "SecretStore/Retrieve", json!({"VaultID": key_id})).await;
        refused.push((format!("{who} SecretStore/Retrieve"), st == 200 && r["Result"] != 0 && r["Base64Data"].is_null()));
    }
    let events = fx.events("certificate.key_exported");
    let intact = fx.events_verify();
    let (a_ok, r_ok) = (allowed.iter().filter(|(_, ok)| *ok).count(), refused.iter().filter(|(_, ok)| *ok).count());
    let n1 = report(
        "N1",
        "certificate key exports",
        &format!(
            "{a_ok}/{} exports allowed ({}), {r_ok}/{} refused ({}); {events} certificate.key_exported events (one per allowed \
             export, none for a refusal), event log intact: {intact}",
            allowed.len(),
            allowed.iter().map(|(w, _)| w.as_str()).collect::<Vec<_>>().join(", "),
            refused.len(),
            refused.iter().map(|(w, _)| w.as_str()).collect::<Vec<_>>().join(", "),
        ),
        a_ok == allowed.len() && r_ok == refused.len() && events == allowed.len() && intact,
    );
    assert!(n1, "N1");
}
