//! Certificates in-process, where the manual clock or the
//! vault's side matters: the vault view of certificate objects (VenafiPS's
//! `Find-VdcVaultId` and `Export-VdcVaultObject`: `SecretStore/LookupByOwner`
//! on the certificate's DN, then `SecretStore/Retrieve` reading `VaultType`),
//! and revocation upkeep (a revoked certificate leaves the CRL a CRL's
//! validity after it expired; the janitor deletes its row 30 days after),
//! and the CRL kept between requests.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use reqwest::StatusCode;
use serde_json::{Value, json};

use strongroom_app::admin::certs::PolicyChange;
use strongroom_core::cert::vault_type;
use strongroom_core::secret::Secret;
use strongroom_core::time::UnixTime;
use strongroom_core::vault::Rights;

use crate::support::{PASSWORD, TestServer};

const FOLDER: &str = "\\VED\\Policy\\Certs";
const SCOPE: &str = "certificate:manage,revoke;restricted:manage";

/// A server with CA `Test CA` (P-256), `FOLDER` whose default policy names it (certificates
/// valid `days`), a Master Admin `root` and `alice` with View, Read and Create on `FOLDER`
/// (no Private Key Read); their tokens.
async fn server(days: u32) -> (TestServer, String, String) {
    let s = TestServer::start().await;
    s.integration("app", SCOPE, |_| {}).await;
    s.admin.create_ca("Test CA", "p256", None, None, None, false).await.unwrap();
    s.admin.create_folder(FOLDER).await.unwrap();
    let change = PolicyChange { ca: Some("Test CA".into()), validity_days: Some(days), ..Default::default() };
    s.admin.set_cert_policy(FOLDER, change).await.unwrap();
    let root = s.admin.create_user("root", &Secret::new(PASSWORD), true).await.unwrap();
    let alice = s.user("alice").await;
    s.admin.set_rights(FOLDER, "alice", Rights::VIEW.union(Rights::READ).union(Rights::CREATE)).await.unwrap();
    let token = |v: Value| v["access_token"].as_str().unwrap().to_owned();
    let root_t = token(s.tokens_for(&root, "app", SCOPE).await);
    let alice_t = token(s.tokens_for(&alice, "app", SCOPE).await);
    (s, root_t, alice_t)
}

async fn cert_call(s: &TestServer, token: &str, op: &str, body: Value) -> (StatusCode, Value) {
    let r = s.http.post(s.at(&format!("/vedsdk/certificates/{op}"))).bearer_auth(token).json(&body).send().await.unwrap();
    let status = r.status();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// The DN of a new certificate with a central P-256 key, requested by `token`.
async fn central(s: &TestServer, token: &str, cn: &str) -> String {
    let body = json!({"PolicyDN": FOLDER, "Subject": cn, "KeyAlgorithm": "ECC", "EllipticCurve": "P256"});
    let (st, v) = cert_call(s, token, "request", body).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    v["CertificateDN"].as_str().unwrap().to_owned()
}

/// `SecretStore/LookupByOwner` on `dn`, then `Retrieve` of each entry: (VaultID, VaultType, data), by VaultID.
async fn vault_view(s: &TestServer, token: &str, dn: &str) -> Vec<(i64, i64, Vec<u8>)> {
    let (st, v) = s.sdk("LookupByOwner", token, json!({"Namespace": "config", "Owner": dn})).await;
    assert_eq!((st, v["Result"].as_i64()), (StatusCode::OK, Some(0)), "{v}");
    let mut out = Vec::new();
    for id in v["VaultIDs"].as_array().unwrap() {
        let id = id.as_i64().unwrap();
        let (st, r) = s.sdk("Retrieve", token, json!({"VaultID": id})).await;
        assert_eq!((st, r["Result"].as_i64()), (StatusCode::OK, Some(0)), "{r}");
        out.push((id, r["VaultType"].as_i64().unwrap(), STANDARD.decode(r["Base64Data"].as_str().unwrap()).unwrap()));
    }
    out.sort_by_key(|(id, _, _)| *id);
    out
}

async fn key_exports(s: &TestServer) -> usize {
    let f = strongroom_store::EventFilter { kind: Some("certificate.key_exported".into()), limit: 10_000, ..Default::default() };
    s.store.events(f).await.unwrap().len()
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_vault_view_of_certificate_objects() {
    let (s, root, alice) = server(90).await;
    // A central key: the certificate (2) and the key (256), owned by the certificate's DN.
    let svc = central(&s, &root, "svc.example.com").await;
    let exports = key_exports(&s).await;
    let view = vault_view(&s, &root, &svc).await;
    let types: Vec<i64> = view.iter().map(|(_, t, _)| *t).collect();
    assert_eq!(types, [i64::from(vault_type::CERTIFICATE), i64::from(vault_type::PKCS8)], "the certificate, then its key");
    let (st, v) = cert_call(&s, &root, "retrieve", json!({"CertificateDN": svc, "Format": "DER"})).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(view[0].2, STANDARD.decode(v["CertificateData"].as_str().unwrap()).unwrap(), "the entry is the certificate (DER)");
    let key = rcgen::KeyPair::try_from(view[1].2.as_slice()).expect("the entry is a PKCS#8 key");
    assert!(contains(&view[0].2, key.public_key_raw()), "the key is the certificate's");
    assert_eq!(key_exports(&s).await, exports + 1, "handing out the key entry is a key export, in the log");

    // A user CSR: the certificate (2) and the CSR (512).
    let csr_key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["web.example.com".to_owned()]).unwrap();
    params.distinguished_name.push(rcgen::DnType::CommonName, "web.example.com");
    let csr = params.serialize_request(&csr_key).unwrap();
    let (st, v) = cert_call(&s, &alice, "request", json!({"PolicyDN": FOLDER, "PKCS10": csr.pem().unwrap()})).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    let web = v["CertificateDN"].as_str().unwrap().to_owned();
    let view = vault_view(&s, &root, &web).await;
    assert_eq!(view.iter().map(|(_, t, _)| *t).collect::<Vec<_>>(), [2, 512]);
    assert_eq!(view[1].2, csr.der().as_ref(), "the CSR entry is the CSR (DER)");
    assert!(contains(&view[0].2, csr_key.public_key_raw()));

    // A renewal archives the three types with the product's overlay bit (2^30) and writes new ones.
    let (st, v) = cert_call(&s, &root, "renew", json!({"CertificateDN": svc})).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    let exports = key_exports(&s).await;
    let view = vault_view(&s, &root, &svc).await;
    let types: Vec<i64> = view.iter().map(|(_, t, _)| *t).collect();
    assert_eq!(types, [1_073_741_826, 1_073_742_080, 2, 256]);
    assert_eq!(key_exports(&s).await, exports + 2, "the archived key's export is an event too");

    // Rights: alice (Read, no Private Key Read, no Master Admin) gets neither the key through
    // Certificates/Retrieve (403) nor any entry through the vault (Master Admin only, as the product).
    let key_id = view[3].0;
    let exports = key_exports(&s).await;
    let (st, v) =
        cert_call(&s, &alice, "retrieve", json!({"CertificateDN": svc, "IncludePrivateKey": true, "Password": "a password"})).await;
    assert_eq!(st, StatusCode::FORBIDDEN, "{v}");
    let (st, v) = s.sdk("Retrieve", &alice, json!({"VaultID": key_id})).await;
    assert_eq!(st, StatusCode::OK);
    assert_ne!(v["Result"].as_i64(), Some(0), "{v}");
    assert!(v.get("Base64Data").is_none_or(Value::is_null), "{v}");
    let (_, v) = s.sdk("LookupByOwner", &alice, json!({"Namespace": "config", "Owner": svc})).await;
    assert_ne!(v["Result"].as_i64(), Some(0), "{v}");
    // Private Key Read opens Certificates/Retrieve's key, not the vault's raw entries.
    s.admin.set_rights(FOLDER, "alice", Rights::VIEW.union(Rights::READ).union(Rights::PRIVATE_KEY_READ)).await.unwrap();
    let (_, v) = s.sdk("Retrieve", &alice, json!({"VaultID": key_id})).await;
    assert_ne!(v["Result"].as_i64(), Some(0), "{v}");
    assert_eq!(key_exports(&s).await, exports, "refused exports write nothing");
    let (st, v) =
        cert_call(&s, &alice, "retrieve", json!({"CertificateDN": svc, "IncludePrivateKey": true, "Password": "a password"})).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(key_exports(&s).await, exports + 1);
    s.stop().await;
}

async fn crl(s: &TestServer) -> Vec<u8> {
    let r = s.http.get(s.at("/crl/test%20ca.crl")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    r.bytes().await.unwrap().to_vec()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revocations_leave_the_crl_after_expiry_and_the_janitor_prunes_them() {
    let (s, root, _) = server(1).await;
    let dn = central(&s, &root, "short.example.com").await;
    let other = central(&s, &root, "other.example.com").await;
    for d in [&dn, &other] {
        let (st, v) = cert_call(&s, &root, "revoke", json!({"CertificateDN": d, "Reason": 1})).await;
        assert_eq!((st, &v["Success"]), (StatusCode::OK, &json!(true)), "{v}");
    }
    let key = |d: &str| strongroom_core::vault::FolderPath::parse(d).unwrap().key().to_owned();
    let r = s.store.certificate(key(&dn)).await.unwrap().unwrap();
    let last_end = r.valid_to.max(s.store.certificate(key(&other)).await.unwrap().unwrap().valid_to);
    let serial = unhex(r.serial.trim_start_matches("00"));
    let rows = || async { s.store.revocations("test ca".into(), i64::MIN).await.unwrap().len() };
    assert!(contains(&crl(&s).await, &serial), "revoked: on the CRL at once");
    // An hour after the certificate's end it is still listed: RFC 5280 §3.3 wants it on one
    // regularly scheduled CRL issued after its end (the CRL is valid a day).
    s.clock.set(UnixTime::from_secs(r.valid_to + 3600));
    assert!(contains(&crl(&s).await, &serial), "listed on a CRL issued after its end");
    // A CRL's validity after its end, it leaves the CRL; its row stays (PreviousVersions' Revoked).
    s.clock.set(UnixTime::from_secs(r.valid_to + strongroom_app::pki::CRL_VALIDITY_SECS + 1));
    assert!(!contains(&crl(&s).await, &serial), "off the CRL a day after its end");
    strongroom_server::serve::upkeep(&s.state, 0, None).await;
    assert_eq!(rows().await, 2, "kept within the 30 days");
    // 30 days after its end the janitor's ten-minute round deletes it (not the minute's).
    let keep = strongroom_app::service::certificates::REVOCATION_KEEP_DAYS * 86_400;
    s.clock.set(UnixTime::from_secs(last_end + keep + 1));
    strongroom_server::serve::upkeep(&s.state, 1, None).await;
    assert_eq!(rows().await, 2, "the minute's round leaves them");
    strongroom_server::serve::upkeep(&s.state, 10, None).await;
    assert_eq!(rows().await, 0, "pruned");
    let list = crl(&s).await;
    assert!(!contains(&list, &serial), "and the CRL still signs, empty");
    s.stop().await;
}

/// `n` requests for the CRL at once.
async fn crls_at_once(s: &TestServer, n: usize) -> Vec<Vec<u8>> {
    let mut all = tokio::task::JoinSet::new();
    for _ in 0..n {
        let (http, url) = (s.http.clone(), s.at("/crl/test%20ca.crl"));
        all.spawn(async move {
            let r = http.get(url).send().await.unwrap();
            assert_eq!(r.status(), StatusCode::OK);
            r.bytes().await.unwrap().to_vec()
        });
    }
    all.join_all().await
}

/// `/crl/{name}` answers anyone, so its CA's key must not sign once a request: 24 requests
/// at once get one CRL, byte for byte (ECDSA signatures are randomized, so two signings
/// would differ: `pki`'s CRL test checks that), and later ones the same; a revocation makes
/// a new one at once (again one for the requests at once), and so does the hour of
/// `CRL_RESIGN_SECS`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_crl_is_signed_once_for_requests_at_once_and_again_when_it_would_change() {
    let (s, root, _) = server(90).await;
    let dn = central(&s, &root, "kept.example.com").await;
    let same = |all: &[Vec<u8>]| all.windows(2).all(|w| w[0] == w[1]);
    let first = crls_at_once(&s, 24).await;
    assert!(same(&first), "24 requests at once, one signature");
    assert_eq!(crl(&s).await, first[0], "kept for the next request");

    let (st, v) = cert_call(&s, &root, "revoke", json!({"CertificateDN": dn, "Reason": 1})).await;
    assert_eq!((st, &v["Success"]), (StatusCode::OK, &json!(true)), "{v}");
    let key = strongroom_core::vault::FolderPath::parse(&dn).unwrap().key().to_owned();
    let serial = unhex(s.store.certificate(key).await.unwrap().unwrap().serial.trim_start_matches("00"));
    assert!(!contains(&first[0], &serial));
    let revoked = crls_at_once(&s, 24).await;
    assert!(same(&revoked), "one new signature for the requests at once");
    assert_ne!(revoked[0], first[0]);
    assert!(contains(&revoked[0], &serial), "the revocation is on the CRL at once");

    let resign = strongroom_app::service::certificates::CRL_RESIGN_SECS;
    s.clock.set(UnixTime::from_secs(strongroom_core::time::Clock::now(&s.clock).secs() + resign - 1));
    assert_eq!(crl(&s).await, revoked[0], "kept within the hour");
    s.clock.set(UnixTime::from_secs(strongroom_core::time::Clock::now(&s.clock).secs() + 1));
    let later = crl(&s).await;
    assert_ne!(later, revoked[0], "signed again after the hour");
    assert!(contains(&later, &serial));
    s.stop().await;
}
