//! Certificates: the leaf keys and names beyond P-256/P-384 and one value per
//! attribute, end to end with the real binary and openssl: a P-521 CSR (signed with SHA-512)
//! and a central P-521 key issued by a P-256 CA (`openssl verify`, the key the certificate's),
//! UPN subject alternative names from a request, a CSR and `Config/Create` (`openssl x509
//! -text`, `X509.SANS.UPN` in search), refused with 400 and nothing issued where the policy
//! prohibits them (a host-name CN not copied into a prohibited DNS name), several OUs (a
//! request's, a CSR's, a policy's) all in the subject, and a renewal keeping curve, OUs and UPN.

use serde_json::json;

use crate::certificates::{Call, openssl};
use crate::process::{Api, Server, TokensExt as _};

const PASSWORD: &str = "a long passphrase";
const SCOPE: &str = "certificate:manage;configuration:manage";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_on_p521_upn_names_and_several_ous_are_issued() {
    let server = Server::start(&["--insecure-http"], &[]);
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    server.admin(&["ca", "create", "Issuing CA", "--subject", "CN=Issuing CA, O=Acme"], "");
    std::fs::write(dir.join("ca.pem"), server.admin(&["ca", "show", "Issuing CA", "--pem"], "")).unwrap();
    server.admin(&["folders", "create", "\\VED\\Policy\\Keys"], "");
    server.admin(&["folders", "create", "\\VED\\Policy\\Keys\\NoUpn"], "");
    server.admin(&["policy", "set", "\\VED\\Policy\\Keys", "--issuing-ca", "Issuing CA", "--organizational-unit", "Web,Ops"], "");
    let shown = server.admin(&["policy", "set", "\\VED\\Policy\\Keys\\NoUpn", "--prohibited-san-types", "upn"], "");
    assert!(shown.contains("prohibited SANs:     UPN"), "{shown}");
    let refused = crate::process::run(
        &[
            "admin",
            "--data-dir",
            &server.dir.display().to_string(),
            "policy",
            "set",
            "\\VED\\Policy\\Keys",
            "--prohibited-san-types",
            "X400",
        ],
        &[],
    );
    assert!(refused.code != 0 && refused.stderr.contains("DNS, IP, Email, URI or UPN"), "{refused:?}");
    server.admin(&["users", "create", "alice"], &format!("{PASSWORD}\n"));
    server.admin(&["rights", "grant", "\\VED\\Policy\\Keys", "alice", "--rights", "view,read,write,create,privatekeyread"], "");
    server.admin(&["integrations", "create", "vcert", "--scope", SCOPE, "--allow-all-users", "--password-grant", "true"], "");
    let api = Api::new(server.http_base());
    let alice = api.password_grant("vcert", "alice", PASSWORD, SCOPE).await.access().to_owned();
    let c = Call { http: strongroom_testkit::api::client(), base: server.http_base() };

    // The zone says UPNs are allowed, and not below where the policy prohibits them.
    let (_, v) = c.post(&alice, "/vedsdk/certificates/checkpolicy", json!({"PolicyDN": "Keys"})).await;
    assert_eq!(v["Policy"]["SubjAltNameUpnAllowed"], true, "{v}");
    assert_eq!(v["Policy"]["Subject"]["OrganizationalUnit"], json!({"Locked": false, "Values": ["Web", "Ops"]}), "{v}");
    let (_, v) = c.post(&alice, "/vedsdk/certificates/checkpolicy", json!({"PolicyDN": "Keys\\NoUpn"})).await;
    assert_eq!((&v["Policy"]["SubjAltNameUpnAllowed"], &v["Policy"]["SubjAltNameDnsAllowed"]), (&json!(false), &json!(true)), "{v}");

    // A P-521 CSR signed with SHA-512, with a UPN and two OUs of its own.
    let (ok, out) = openssl(
        dir,
        &[
            "req",
            "-new",
            "-nodes",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-521",
            "-sha512",
            "-keyout",
            "csr521.key",
            "-subj",
            "/CN=csr521.example.com/OU=Blue/OU=Green",
            "-addext",
            "subjectAltName=DNS:csr521.example.com,otherName:1.3.6.1.4.1.311.20.2.3;UTF8:bob@corp.example",
            "-out",
            "csr521.csr",
        ],
    );
    assert!(ok, "{out}");
    let (_, text) = openssl(dir, &["req", "-in", "csr521.csr", "-noout", "-text"]);
    assert!(text.contains("ecdsa-with-SHA512") && text.contains("P-521"), "{text}");
    let pem = std::fs::read_to_string(dir.join("csr521.csr")).unwrap();
    let (status, v) = c.post(&alice, "/vedsdk/certificates/request", json!({"PolicyDN": "\\VED\\Policy\\Keys", "PKCS10": pem})).await;
    assert_eq!(status, 200, "{v}");
    let dn = v["CertificateDN"].as_str().unwrap().to_owned();
    c.retrieve(&alice, dir, "csr521.pem", json!({"CertificateDN": dn, "Format": "Base64"})).await;
    let (ok, out) = openssl(dir, &["verify", "-CAfile", "ca.pem", "csr521.pem"]);
    assert!(ok, "{out}");
    let (_, leaf_pub) = openssl(dir, &["x509", "-in", "csr521.pem", "-noout", "-pubkey"]);
    let (_, key_pub) = openssl(dir, &["pkey", "-in", "csr521.key", "-pubout"]);
    assert_eq!(leaf_pub.trim(), key_pub.trim(), "the CSR's key is the certificate's");
    let (_, text) = openssl(dir, &["x509", "-in", "csr521.pem", "-noout", "-text"]);
    for want in ["NIST CURVE: P-521", "OU = Blue, OU = Green", "othername: UPN::bob@corp.example", "DNS:csr521.example.com"] {
        assert!(text.contains(want), "{want} in {text}");
    }
    // A CSR whose signature does not verify (one byte of it changed) is refused.
    let (_, der_ok) = openssl(dir, &["req", "-in", "csr521.csr", "-outform", "DER", "-out", "csr521.der"]);
    let _ = der_ok;
    let mut der = std::fs::read(dir.join("csr521.der")).unwrap();
    let n = der.len();
    der[n - 10] ^= 0x01;
    let bad = {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(&der)
    };
    let (status, v) = c
        .post(&alice, "/vedsdk/certificates/request", json!({"PolicyDN": "\\VED\\Policy\\Keys", "PKCS10": bad, "ObjectName": "forged"}))
        .await;
    assert_eq!(status, 400, "{v}");

    // A central P-521 key, a UPN by its Type 0, the policy's two OUs; the key as PBES2 PKCS#8 and PKCS #12.
    let (status, v) = c
        .post(
            &alice,
            "/vedsdk/certificates/request",
            json!({"PolicyDN": "\\VED\\Policy\\Keys", "Subject": "c521.example.com", "KeyAlgorithm": "ECC", "EllipticCurve": "P521",
                   "SubjectAltNames": [{"Type": 0, "Name": "carol@corp.example"}, {"TypeName": "DNS", "Name": "c521.example.com"}]}),
        )
        .await;
    assert_eq!(status, 200, "{v}");
    let central = v["CertificateDN"].as_str().unwrap().to_owned();
    c.retrieve(
        &alice,
        dir,
        "c521.pem",
        json!({"CertificateDN": central, "Format": "Base64 (PKCS #8)", "IncludeChain": true, "IncludePrivateKey": true, "Password": "p521 passphrase"}),
    )
    .await;
    let (ok, out) = openssl(dir, &["pkcs8", "-in", "c521.pem", "-passin", "pass:p521 passphrase", "-out", "c521.key"]);
    assert!(ok, "{out}");
    let (_, leaf_pub) = openssl(dir, &["x509", "-in", "c521.pem", "-noout", "-pubkey"]);
    let (_, key_pub) = openssl(dir, &["pkey", "-in", "c521.key", "-pubout"]);
    assert_eq!(leaf_pub.trim(), key_pub.trim(), "the key made here is the certificate's");
    let (ok, key_text) = openssl(dir, &["pkey", "-in", "c521.key", "-noout", "-text"]);
    assert!(ok && key_text.contains("NIST CURVE: P-521"), "{key_text}");
    let (ok, out) = openssl(dir, &["verify", "-CAfile", "ca.pem", "c521.pem"]);
    assert!(ok, "{out}");
    let (_, text) = openssl(dir, &["x509", "-in", "c521.pem", "-noout", "-text"]);
    for want in ["NIST CURVE: P-521", "OU = Web, OU = Ops", "othername: UPN::carol@corp.example"] {
        assert!(text.contains(want), "{want} in {text}");
    }
    c.retrieve(
        &alice,
        dir,
        "c521.p12",
        json!({"CertificateDN": central, "Format": "PKCS #12", "IncludeChain": true, "IncludePrivateKey": true, "Password": "p12 passphrase"}),
    )
    .await;
    let (ok, out) = openssl(dir, &["pkcs12", "-in", "c521.p12", "-passin", "pass:p12 passphrase", "-nodes", "-out", "p12.pem"]);
    assert!(ok, "{out}");
    let (_, p12_pub) = openssl(dir, &["pkey", "-in", "p12.pem", "-pubout"]);
    assert_eq!(p12_pub.trim(), leaf_pub.trim());
    // Search shows the UPN.
    let (status, count, v) = c.get(&alice, "/vedsdk/certificates/?CN=c521.example.com").await;
    assert_eq!((status, count.as_deref()), (200, Some("1")), "{v}");
    assert_eq!(v["Certificates"][0]["X509"]["SANS"]["UPN"], json!(["carol@corp.example"]), "{v}");
    // A renewal keeps the key's curve (a new P-521 key), the units and the UPN.
    let (status, v) = c.post(&alice, "/vedsdk/certificates/renew", json!({"CertificateDN": central})).await;
    assert_eq!((status, &v["Success"]), (200, &json!(true)), "{v}");
    c.retrieve(&alice, dir, "c521r.pem", json!({"CertificateDN": central, "Format": "Base64"})).await;
    let (_, text) = openssl(dir, &["x509", "-in", "c521r.pem", "-noout", "-text"]);
    for want in ["NIST CURVE: P-521", "OU = Web, OU = Ops", "othername: UPN::carol@corp.example"] {
        assert!(text.contains(want), "{want} in {text}");
    }
    let (_, renewed_pub) = openssl(dir, &["x509", "-in", "c521r.pem", "-noout", "-pubkey"]);
    assert_ne!(renewed_pub.trim(), leaf_pub.trim(), "a new key");

    // A request's own OUs (several), with a P-384 key made here.
    let (status, v) = c
        .post(
            &alice,
            "/vedsdk/certificates/request",
            json!({"PolicyDN": "\\VED\\Policy\\Keys", "Subject": "ou.example.com", "OrganizationalUnit": ["One", "Two", "Three"],
                   "KeyAlgorithm": "ECC", "EllipticCurve": "P384"}),
        )
        .await;
    assert_eq!(status, 200, "{v}");
    let ou = v["CertificateDN"].as_str().unwrap().to_owned();
    c.retrieve(&alice, dir, "ou.pem", json!({"CertificateDN": ou, "Format": "Base64"})).await;
    let (ok, out) = openssl(dir, &["verify", "-CAfile", "ca.pem", "ou.pem"]);
    assert!(ok, "{out}");
    let (_, text) = openssl(dir, &["x509", "-in", "ou.pem", "-noout", "-subject"]);
    assert_eq!(text.trim(), "subject=CN = ou.example.com, OU = One, OU = Two, OU = Three");

    // Where the policy prohibits UPNs: 400 with Error, nothing issued (from a request and from a CSR).
    let before = c.get(&alice, "/vedsdk/certificates/?ParentDnRecursive=%5CVED%5CPolicy").await.2["TotalCount"].as_u64().unwrap();
    for body in [
        json!({"PolicyDN": "\\VED\\Policy\\Keys\\NoUpn", "Subject": "n.example.com", "KeyAlgorithm": "ECC",
               "SubjectAltNames": [{"TypeName": "UPN", "Name": "dave@corp.example"}]}),
        json!({"PolicyDN": "\\VED\\Policy\\Keys\\NoUpn", "PKCS10": pem}),
    ] {
        let (status, v) = c.post(&alice, "/vedsdk/certificates/request", body).await;
        assert_eq!(status, 400, "{v}");
        assert_eq!(v["Error"], "Subject alternative names of type UPN are prohibited by policy.", "{v}");
    }
    let after = c.get(&alice, "/vedsdk/certificates/?ParentDnRecursive=%5CVED%5CPolicy").await.2["TotalCount"].as_u64().unwrap();
    assert_eq!(before, after, "a refused request issues nothing");
    // Where DNS names are prohibited, a host-name CN is not copied into a DNS name, and a DNS name asked is refused.
    server.admin(&["folders", "create", "\\VED\\Policy\\Keys\\NoDns"], "");
    server.admin(&["policy", "set", "\\VED\\Policy\\Keys\\NoDns", "--prohibited-san-types", "DNS,UPN"], "");
    let (status, v) = c
        .post(&alice, "/vedsdk/certificates/request", json!({"PolicyDN": "\\VED\\Policy\\Keys\\NoDns", "Subject": "nodns.example.com"}))
        .await;
    assert_eq!(status, 200, "{v}");
    let nodns = v["CertificateDN"].as_str().unwrap().to_owned();
    c.retrieve(&alice, dir, "nodns.pem", json!({"CertificateDN": nodns, "Format": "Base64"})).await;
    let (_, text) = openssl(dir, &["x509", "-in", "nodns.pem", "-noout", "-text"]);
    assert!(text.contains("CN = nodns.example.com") && !text.contains("DNS:"), "{text}");
    let (status, v) = c
        .post(
            &alice,
            "/vedsdk/certificates/request",
            json!({"PolicyDN": "\\VED\\Policy\\Keys\\NoDns", "Subject": "d2.example.com",
                   "SubjectAltNames": [{"Type": 2, "Name": "d2.example.com"}]}),
        )
        .await;
    assert_eq!((status, v["Error"].as_str()), (400, Some("Subject alternative names of type DNS are prohibited by policy.")), "{v}");

    // Config/Create with a UPN attribute, enrolled by the first Renew.
    let made = "\\VED\\Policy\\Keys\\made.example.com";
    let (status, v) = c
        .post(
            &alice,
            "/vedsdk/config/create",
            json!({"ObjectDN": made, "Class": "X509 Certificate", "NameAttributeList": [
                {"Name": "X509 Subject", "Value": ["made.example.com"]},
                {"Name": "X509 SubjectAltName OtherName UPN", "Value": ["erin@corp.example"]},
                {"Name": "Key Algorithm", "Value": ["ECC"]}, {"Name": "Elliptic Curve", "Value": ["P521"]}]}),
        )
        .await;
    assert_eq!((status, v["Result"].as_i64()), (200, Some(1)), "{v}");
    let (status, v) = c.post(&alice, "/vedsdk/certificates/renew", json!({"CertificateDN": made})).await;
    assert_eq!((status, &v["Success"]), (200, &json!(true)), "{v}");
    c.retrieve(&alice, dir, "made.pem", json!({"CertificateDN": made, "Format": "Base64"})).await;
    let (ok, out) = openssl(dir, &["verify", "-CAfile", "ca.pem", "made.pem"]);
    assert!(ok, "{out}");
    let (_, text) = openssl(dir, &["x509", "-in", "made.pem", "-noout", "-text"]);
    assert!(text.contains("othername: UPN::erin@corp.example") && text.contains("NIST CURVE: P-521"), "{text}");

    // A policy locked to P521 is answered as such, and a request that asks no key gets one.
    server.admin(&["folders", "create", "\\VED\\Policy\\Keys\\Big"], "");
    server.admin(&["policy", "set", "\\VED\\Policy\\Keys\\Big", "--key-algorithm", "ECC", "--curve", "P521", "--locked"], "");
    let (_, v) = c.post(&alice, "/vedsdk/certificates/checkpolicy", json!({"PolicyDN": "Keys\\Big"})).await;
    assert_eq!(v["Policy"]["KeyPair"]["EllipticCurve"], json!({"Locked": true, "Value": "P521"}), "{v}");
    let (status, v) =
        c.post(&alice, "/vedsdk/certificates/request", json!({"PolicyDN": "\\VED\\Policy\\Keys\\Big", "Subject": "big.example.com"})).await;
    assert_eq!(status, 200, "{v}");
    let big = v["CertificateDN"].as_str().unwrap().to_owned();
    c.retrieve(&alice, dir, "big.pem", json!({"CertificateDN": big, "Format": "Base64"})).await;
    let (_, text) = openssl(dir, &["x509", "-in", "big.pem", "-noout", "-text"]);
    assert!(text.contains("NIST CURVE: P-521"), "{text}");
    let (status, v) = c
        .post(
            &alice,
            "/vedsdk/certificates/request",
            json!({"PolicyDN": "\\VED\\Policy\\Keys\\Big", "Subject": "small.example.com", "KeyAlgorithm": "ECC", "EllipticCurve": "P256"}),
        )
        .await;
    assert_eq!(status, 400, "the locked curve refuses P256: {v}");
    let log = server.stop();
    assert!(!log.contains("p521 passphrase") && !log.contains("PRIVATE KEY"), "no key or password in the log");
}
