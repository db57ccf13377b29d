//! Certificates end to end: the real binary, a CA made with
//! `admin ca create`, a policy folder with `admin policy set`, then the
//! product's calls over HTTP as vcert and pyvenafi send them, every answer
//! checked with openssl (`verify -CAfile`, `pkcs8 -passin` for the PBES2 key,
//! `crl -CAfile … -verify`). Scopes and folder rights refuse with 403, a
//! policy violation issues nothing, and a certificate answered 200 survives
//! a SIGKILL of the server right after.

use std::io::{Read as _, Write as _};
use std::path::Path;
use std::process::Command;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use crate::process::{Api, Server, TokensExt as _};

const PASSWORD: &str = "a long passphrase";

pub(crate) fn openssl(dir: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new("openssl").current_dir(dir).args(args).output().expect("openssl is needed by these tests (apt install openssl)");
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

/// The offline root `root.pem`/`root.key` in `dir` signs CSR `csr` for 20 days with the
/// extensions in file `ext`, into `out`; whether openssl succeeded, and what it said.
pub(crate) fn root_signs(dir: &Path, csr: &str, ext: &str, out: &str) -> (bool, String) {
    let args = [
        "x509",
        "-req",
        "-in",
        csr,
        "-CA",
        "root.pem",
        "-CAkey",
        "root.key",
        "-CAcreateserial",
        "-days",
        "20",
        "-extfile",
        ext,
        "-out",
        out,
    ];
    openssl(dir, &args)
}

/// A CSR (PEM) and its key file for `subject` with DNS `sans`, RSA of `bits` or P-256.
pub(crate) fn csr(dir: &Path, name: &str, subject: &str, sans: &[&str], rsa_bits: Option<u32>) -> String {
    let newkey = rsa_bits.map_or_else(|| "ec".to_owned(), |b| format!("rsa:{b}"));
    let mut args = vec!["req", "-new", "-nodes", "-newkey", &newkey, "-keyout", "", "-subj", subject, "-out", ""];
    let key = format!("{name}.key");
    let out = format!("{name}.csr");
    args[6] = &key;
    args[10] = &out;
    let ec = ["-pkeyopt", "ec_paramgen_curve:P-256"];
    if rsa_bits.is_none() {
        args.extend(ec);
    }
    let san = format!("subjectAltName={}", sans.iter().map(|s| format!("DNS:{s}")).collect::<Vec<_>>().join(","));
    if !sans.is_empty() {
        args.extend(["-addext", &san]);
    }
    let (ok, text) = openssl(dir, &args);
    assert!(ok, "openssl req: {text}");
    std::fs::read_to_string(dir.join(out)).unwrap()
}

pub(crate) struct Call {
    pub(crate) http: reqwest::Client,
    pub(crate) base: String,
}

impl Call {
    pub(crate) async fn post(&self, token: &str, path: &str, body: Value) -> (u16, Value) {
        let r = self.http.post(format!("{}{path}", self.base)).bearer_auth(token).json(&body).send().await.unwrap();
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    pub(crate) async fn get(&self, token: &str, path: &str) -> (u16, Option<String>, Value) {
        let r = self.http.get(format!("{}{path}", self.base)).bearer_auth(token).send().await.unwrap();
        let status = r.status().as_u16();
        let count = r.headers().get("x-record-count").map(|v| v.to_str().unwrap().to_owned());
        (status, count, r.json().await.unwrap_or(Value::Null))
    }

    /// Retrieves into `file` (the decoded `CertificateData`).
    pub(crate) async fn retrieve(&self, token: &str, dir: &Path, file: &str, body: Value) -> Vec<u8> {
        let (status, v) = self.post(token, "/vedsdk/certificates/retrieve", body).await;
        assert_eq!(status, 200, "{v}");
        let data = STANDARD.decode(v["CertificateData"].as_str().unwrap()).unwrap();
        std::fs::write(dir.join(file), &data).unwrap();
        data
    }
}

/// The status line of a raw HTTP/1.1 POST (the reason phrase clients show).
fn status_line(base: &str, token: &str, path: &str, body: &str) -> String {
    let addr = base.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out.lines().next().unwrap_or_default().to_owned()
}

pub(crate) fn serial_of(dir: &Path, pem_file: &str) -> String {
    let (ok, text) = openssl(dir, &["x509", "-in", pem_file, "-noout", "-serial"]);
    assert!(ok, "{text}");
    text.trim().trim_start_matches("serial=").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificates_from_request_to_crl_with_openssl() {
    let mut server = Server::start(&["--insecure-http"], &[]);
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    // A CA, a policy folder, people and integrations.
    let dn = server.admin(&["ca", "create", "Issuing CA", "--subject", "CN=Issuing CA, O=Acme, C=FR"], "");
    assert_eq!(dn.trim(), "\\VED\\Policy\\CA Templates\\Issuing CA");
    let listed = server.admin(&["ca", "list", "--json"], "");
    assert!(listed.contains("\"algorithm\":\"p256\""), "{listed}");
    std::fs::write(dir.join("ca.pem"), server.admin(&["ca", "show", "Issuing CA", "--pem"], "")).unwrap();
    let (ok, text) = openssl(dir, &["x509", "-in", "ca.pem", "-noout", "-subject"]);
    assert!(ok && text.contains("CN = Issuing CA"), "{text}");
    server.admin(&["folders", "create", "\\VED\\Policy\\Web"], "");
    let shown =
        server.admin(&["policy", "set", "\\VED\\Policy\\Web", "--issuing-ca", "Issuing CA", "--organization", "Acme", "--locked"], "");
    assert!(shown.contains("Acme (locked)"), "{shown}");
    server.admin(&["policy", "set", "\\VED\\Policy\\Web", "--domains", "example.com", "--wildcards", "false"], "");
    // `--ca` is only ever the --server trust file. Over the API `admin policy` and `admin ca` are
    // refused at once, exit 2, no file read (`--ca Issuing CA` included).
    let base = server.http_base();
    for args in [
        &["policy", "set", "\\VED\\Policy\\Web", "--issuing-ca", "Issuing CA"][..],
        &["policy", "set", "\\VED\\Policy\\Web", "--ca", "Issuing CA"],
        &["ca", "list"],
    ] {
        let r = crate::process::run(&[&["admin", "--server", base.as_str()][..], args].concat(), &[]);
        assert_eq!(r.code, 2, "{args:?}: {r:?}");
        assert!(r.stderr.contains("is not available over the API") && !r.stderr.contains("Issuing CA:"), "{args:?}: {r:?}");
    }
    // On the store, `policy set --ca NAME` (its CA's old spelling) is refused, naming --issuing-ca,
    // and changes nothing; STRONGROOM_CA alone (the client verbs' trust file) is no such --ca.
    server.admin(&["ca", "create", "Other CA"], "");
    let data_dir = server.dir.display().to_string();
    let old = crate::process::run(&["admin", "--data-dir", &data_dir, "policy", "set", "\\VED\\Policy\\Web", "--ca", "Other CA"], &[]);
    assert_eq!(old.code, 2, "{old:?}");
    assert!(old.stderr.contains("--issuing-ca NAME") && old.stderr.contains("nothing was changed"), "{old:?}");
    let shown = server.admin(&["policy", "show", "\\VED\\Policy\\Web"], "");
    assert!(shown.contains("CA Templates\\Issuing CA") && !shown.contains("Other CA"), "{shown}");
    server.admin(&["folders", "create", "\\VED\\Policy\\Env"], "");
    let with_env = crate::process::run(
        &["admin", "--data-dir", &data_dir, "policy", "set", "\\VED\\Policy\\Env", "--issuing-ca", "Other CA"],
        &[("STRONGROOM_CA", "/nonexistent/ca.pem")],
    );
    assert_eq!(with_env.code, 0, "{with_env:?}");
    for user in ["alice", "bob", "carol"] {
        server.admin(&["users", "create", user], &format!("{PASSWORD}\n"));
    }
    server
        .admin(&["rights", "grant", "\\VED\\Policy\\Web", "alice", "--rights", "view,read,write,create,revoke,delete,privatekeyread"], "");
    server.admin(&["rights", "grant", "\\VED\\Policy\\Web", "bob", "--rights", "view,read"], "");
    server.admin(&["rights", "grant", "\\VED\\Policy\\Web", "carol", "--rights", "view,read,write,create"], "");
    server.admin(
        &[
            "integrations",
            "create",
            "vcert",
            "--scope",
            "certificate:manage,revoke,delete",
            "--allow-all-users",
            "--password-grant",
            "true",
        ],
        "",
    );
    let api = Api::new(server.http_base());
    let alice = api.password_grant("vcert", "alice", PASSWORD, "certificate:manage,revoke,delete").await.access().to_owned();
    let reader = api.password_grant("vcert", "alice", PASSWORD, "certificate").await.access().to_owned();
    let manager = api.password_grant("vcert", "alice", PASSWORD, "certificate:manage").await.access().to_owned();
    let bob = api.password_grant("vcert", "bob", PASSWORD, "certificate:manage").await.access().to_owned();
    let carol = api.password_grant("vcert", "carol", PASSWORD, "certificate:manage").await.access().to_owned();
    let c = Call { http: strongroom_testkit::api::client(), base: server.http_base() };

    // The zone.
    let (status, v) = c.post(&alice, "/vedsdk/certificates/checkpolicy", json!({"PolicyDN": "Web"})).await;
    assert_eq!(status, 200, "{v}");
    let p = &v["Policy"];
    assert_eq!(p["CertificateAuthority"]["Value"], "\\VED\\Policy\\CA Templates\\Issuing CA");
    assert_eq!(p["Subject"]["Organization"], json!({"Locked": true, "Value": "Acme"}));
    assert_eq!(p["Subject"]["OrganizationalUnit"], json!({"Locked": false, "Values": []}));
    assert_eq!(p["KeyPair"]["KeyAlgorithm"]["Value"], "RSA");
    assert_eq!(p["WhitelistedDomains"], json!(["example.com"]));
    assert_eq!(p["WildcardsAllowed"], false);
    let (status, v) = c.post(&alice, "/vedsdk/certificates/checkpolicy", json!({"PolicyDN": "\\VED\\Policy\\nope"})).await;
    assert_eq!((status, v["Error"].as_str().unwrap()), (400, "PolicyDN: \\VED\\Policy\\nope does not exist"));

    // A user CSR (RSA 2048), with its newlines stripped as VenafiPS sends it.
    let pem = csr(dir, "www", "/CN=www.example.com/O=Acme", &["www.example.com", "api.example.com"], Some(2048)).replace('\n', "");
    let (status, v) = c
        .post(
            &alice,
            "/vedsdk/certificates/request",
            json!({"PolicyDN": "\\VED\\Policy\\Web", "PKCS10": pem, "CertificateType": "AUTO", "DisableAutomaticRenewal": true,
                   "Reenable": true, "Origin": "VCert CLI", "CASpecificAttributes": [{"Name": "Origin", "Value": "VCert CLI"}]}),
        )
        .await;
    assert_eq!(status, 200, "{v}");
    let www = v["CertificateDN"].as_str().unwrap().to_owned();
    assert_eq!(www, "\\VED\\Policy\\Web\\www.example.com");
    let guid = v["Guid"].as_str().unwrap().to_owned();
    assert!(guid.starts_with('{') && guid.ends_with('}'), "{guid}");
    let (status, v) = c.post(&manager, "/vedsdk/metadata/get", json!({"DN": www})).await;
    assert_eq!((status, v), (200, json!({"Data": [], "Locked": false})));
    // Base64 with the chain (flags as strings, as Python sends them): CRLF, leaf first, verifies.
    let data = c
        .retrieve(
            &reader,
            dir,
            "www.pem",
            json!({"CertificateDN": www, "Format": "base64", "IncludeChain": "true", "RootFirstOrder": "false"}),
        )
        .await;
    let text = String::from_utf8(data).unwrap();
    assert_eq!(text.matches("-----BEGIN CERTIFICATE-----").count(), 2);
    assert!(text.contains("-----\r\n") && !text.replace("\r\n", "").contains('\n'), "CRLF line ends");
    let (ok, out) = openssl(dir, &["verify", "-CAfile", "ca.pem", "www.pem"]);
    assert!(ok && out.contains("www.pem: OK"), "{out}");
    let (_, subject) = openssl(dir, &["x509", "-in", "www.pem", "-noout", "-subject", "-ext", "subjectAltName,crlDistributionPoints"]);
    assert!(subject.contains("DNS:api.example.com") && subject.contains("/crl/issuing%20ca.crl"), "{subject}");
    // Root first: the CA comes first.
    let data = c
        .retrieve(
            &reader,
            dir,
            "rootfirst.pem",
            json!({"CertificateDN": www, "Format": "Base64", "IncludeChain": true, "RootFirstOrder": true}),
        )
        .await;
    let ca_pem = std::fs::read_to_string(dir.join("ca.pem")).unwrap();
    let first_body: String =
        String::from_utf8(data).unwrap().split("-----END").next().unwrap().chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    let ca_body: String = ca_pem.split("-----END").next().unwrap().chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    assert_eq!(first_body, ca_body, "RootFirstOrder puts the CA first");
    // DER: the certificate alone.
    c.retrieve(&reader, dir, "www.der", json!({"CertificateDN": www, "Format": "DER"})).await;
    let (ok, out) = openssl(dir, &["x509", "-inform", "DER", "-in", "www.der", "-noout", "-subject"]);
    assert!(ok && out.contains("www.example.com"), "{out}");
    // A CSR key has none here to hand out.
    let (status, v) =
        c.post(&alice, "/vedsdk/certificates/retrieve", json!({"CertificateDN": www, "IncludePrivateKey": true, "Password": "x"})).await;
    assert_eq!(status, 400, "{v}");
    // Missing: 400 with the product's reason phrase (Terraform matches it).
    let line =
        status_line(&server.http_base(), &reader, "/vedsdk/certificates/retrieve", r#"{"CertificateDN":"\\VED\\Policy\\Web\\gone"}"#);
    assert_eq!(line, "HTTP/1.1 400 Certificate does not exist.");

    // A central P-256 key, named by the PKIX parameter set OID as pyvenafi sends it; its key as PBES2 PKCS#8.
    let (status, v) = c
        .post(
            &alice,
            "/vedsdk/certificates/request",
            json!({"PolicyDN": "\\VED\\Policy\\Web", "Subject": "svc.example.com", "ObjectName": "svc",
                   "PkixParameterSet": "1.3.6.1.4.1.28783.10.2.1.256",
                   "SubjectAltNames": [{"TypeName": "DNS", "Name": "svc2.example.com"}, {"Type": 7, "Name": "10.0.0.7"}]}),
        )
        .await;
    assert_eq!(status, 200, "{v}");
    let svc = v["CertificateDN"].as_str().unwrap().to_owned();
    let data = c
        .retrieve(
            &alice,
            dir,
            "svc.pem",
            json!({"CertificateDN": svc, "Format": "Base64 (PKCS#8)", "IncludeChain": true, "IncludePrivateKey": true, "Password": "s3cret pw"}),
        )
        .await;
    let text = String::from_utf8(data).unwrap();
    assert!(text.trim_end().ends_with("-----END ENCRYPTED PRIVATE KEY-----"), "the key comes last");
    let (ok, out) = openssl(dir, &["pkcs8", "-in", "svc.pem", "-passin", "pass:s3cret pw", "-out", "svc.key"]);
    assert!(ok, "the PBES2 key opens with the password: {out}");
    let (ok, out) = openssl(dir, &["pkcs8", "-in", "svc.pem", "-passin", "pass:wrong", "-out", "bad.key"]);
    assert!(!ok, "and not without it: {out}");
    let (_, params) = openssl(dir, &["asn1parse", "-in", "svc.pem", "-i", "-inform", "PEM"]);
    let _ = params;
    let (ok, leaf_pub) = openssl(dir, &["x509", "-in", "svc.pem", "-noout", "-pubkey"]);
    assert!(ok);
    let (ok, key_pub) = openssl(dir, &["pkey", "-in", "svc.key", "-pubout"]);
    assert!(ok && key_pub.trim() == leaf_pub.trim(), "the key is the certificate's");
    let (ok, out) = openssl(dir, &["verify", "-CAfile", "ca.pem", "svc.pem"]);
    assert!(ok, "{out}");
    // PKCS #12 with the chain and the key, as VenafiPS asks for it: openssl opens it with the password.
    c.retrieve(
        &alice,
        dir,
        "svc.p12",
        json!({"CertificateDN": svc, "Format": "PKCS #12", "IncludeChain": true, "IncludePrivateKey": true, "Password": "p12 passphrase"}),
    )
    .await;
    let (ok, out) = openssl(dir, &["pkcs12", "-in", "svc.p12", "-passin", "pass:p12 passphrase", "-nodes", "-info"]);
    assert!(ok && out.contains("BEGIN PRIVATE KEY") && out.matches("BEGIN CERTIFICATE").count() == 2, "{out}");
    // PKCS #7 with the chain: openssl lists both certificates; a key is refused (PKCS #7 holds none); JKS is a 400.
    c.retrieve(&alice, dir, "svc.p7b", json!({"CertificateDN": svc, "Format": "PKCS #7", "IncludeChain": "true"})).await;
    let (ok, out) = openssl(dir, &["pkcs7", "-inform", "DER", "-in", "svc.p7b", "-print_certs", "-noout"]);
    assert!(ok && out.matches("subject=").count() == 2, "{out}");
    for (format, key) in [("PKCS #7", true), ("JKS", false)] {
        let (status, v) = c
            .post(
                &alice,
                "/vedsdk/certificates/retrieve",
                json!({"CertificateDN": svc, "Format": format, "IncludePrivateKey": key, "Password": "p7 pw"}),
            )
            .await;
        assert_eq!(status, 400, "{format}: {v}");
        assert!(v["Error"].as_str().is_some_and(|e| !e.is_empty()), "{format}: {v}");
    }
    // VenafiPS's WorkToDoTimeout: the certificate inline in the Request's answer.
    let (status, v) = c
        .post(
            &alice,
            "/vedsdk/certificates/request",
            json!({"PolicyDN": "\\VED\\Policy\\Web", "Subject": "inline.example.com", "KeyAlgorithm": "ECC", "WorkToDoTimeout": 60}),
        )
        .await;
    assert_eq!(status, 200, "{v}");
    let inline = String::from_utf8(STANDARD.decode(v["CertificateData"].as_str().unwrap()).unwrap()).unwrap();
    assert!(inline.starts_with("-----BEGIN CERTIFICATE-----\r\n"), "{inline}");
    // Private Key Read is needed for the key (bob has Read only); the certificate alone is fine.
    let (status, v) =
        c.post(&bob, "/vedsdk/certificates/retrieve", json!({"CertificateDN": svc, "IncludePrivateKey": true, "Password": "x"})).await;
    assert_eq!(status, 403, "{v}");
    let (status, _) = c.post(&bob, "/vedsdk/certificates/retrieve", json!({"CertificateDN": svc, "Format": "Base64"})).await;
    assert_eq!(status, 200);

    // Refusals: scopes (403, never 401), rights, and policy violations that issue nothing.
    let central = json!({"PolicyDN": "\\VED\\Policy\\Web", "Subject": "x.example.com", "KeyAlgorithm": "ECC", "EllipticCurve": "P256"});
    let (status, v) = c.post(&reader, "/vedsdk/certificates/request", central.clone()).await;
    assert_eq!((status, v["error"].as_str()), (403, Some("insufficient_scope")), "a certificate token cannot request");
    let (status, v) = c.post(&manager, "/vedsdk/certificates/revoke", json!({"CertificateDN": www})).await;
    assert_eq!((status, v["error"].as_str()), (403, Some("insufficient_scope")), "a certificate:manage token cannot revoke");
    let (status, v) = c.post(&bob, "/vedsdk/certificates/request", central.clone()).await;
    assert_eq!(status, 403, "no Create on the folder: {v}");
    let (status, v) = c.post(&carol, "/vedsdk/certificates/revoke", json!({"CertificateDN": www})).await;
    assert_eq!(status, 403, "carol's token lacks the scope: {v}");
    let before = c.get(&alice, "/vedsdk/certificates/?ParentDnRecursive=%5CVED%5CPolicy").await.2["TotalCount"].as_u64().unwrap();
    for (what, body) in [
        ("a domain outside the whitelist", json!({"PolicyDN": "\\VED\\Policy\\Web", "Subject": "evil.org", "KeyAlgorithm": "ECC"})),
        ("a wildcard", json!({"PolicyDN": "\\VED\\Policy\\Web", "Subject": "*.example.com", "KeyAlgorithm": "ECC"})),
        (
            "a locked organisation",
            json!({"PolicyDN": "\\VED\\Policy\\Web", "Subject": "o.example.com", "Organization": "Evil", "KeyAlgorithm": "ECC"}),
        ),
        ("a 1024-bit key", json!({"PolicyDN": "\\VED\\Policy\\Web", "PKCS10": csr(dir, "weak", "/CN=weak.example.com", &[], Some(1024))})),
        (
            "an external CA",
            json!({"PolicyDN": "\\VED\\Policy\\Web", "Subject": "m.example.com", "CADN": "\\VED\\Policy\\CA Templates\\Microsoft"}),
        ),
        ("a device push", json!({"PolicyDN": "\\VED\\Policy\\Web", "Subject": "d.example.com", "Devices": [{"PolicyDN": "x"}]})),
    ] {
        let (status, v) = c.post(&alice, "/vedsdk/certificates/request", body).await;
        assert_eq!(status, 400, "{what}: {v}");
        assert!(v["Error"].as_str().is_some_and(|e| !e.is_empty()), "{what}: {v}");
    }
    let after = c.get(&alice, "/vedsdk/certificates/?ParentDnRecursive=%5CVED%5CPolicy").await.2["TotalCount"].as_u64().unwrap();
    assert_eq!(before, after, "a refused request issues nothing");

    // Search by thumbprint (as vcert: upper case, colons removed), with X-Record-Count.
    let (ok, fp) = openssl(dir, &["x509", "-in", "www.pem", "-noout", "-fingerprint", "-sha1"]);
    assert!(ok);
    let thumb = fp.trim().rsplit('=').next().unwrap().replace(':', "");
    let (status, count, v) = c.get(&reader, &format!("/vedsdk/certificates/?thumbprint={thumb}")).await;
    assert_eq!((status, count.as_deref()), (200, Some("1")), "{v}");
    assert_eq!(v["Certificates"][0]["DN"], www.as_str());
    assert_eq!(v["Certificates"][0]["Guid"], guid.as_str());

    // Renew with a new CSR: same DN, a new serial, the old one in PreviousVersions.
    let old_serial = serial_of(dir, "www.pem");
    let pem = csr(dir, "www2", "/CN=www.example.com/O=Acme", &["www.example.com"], None);
    let (status, v) = c.post(&alice, "/vedsdk/certificates/renew", json!({"CertificateDN": www, "PKCS10": pem})).await;
    assert_eq!((status, &v["Success"], v["CertificateDN"].as_str()), (200, &json!(true), Some(www.as_str())), "{v}");
    c.retrieve(&reader, dir, "www2.pem", json!({"CertificateDN": www, "Format": "base64"})).await;
    let new_serial = serial_of(dir, "www2.pem");
    assert_ne!(old_serial, new_serial);
    let (status, _, v) =
        c.get(&reader, &format!("/vedsdk/certificates/{}/PreviousVersions", guid.replace('{', "%7B").replace('}', "%7D"))).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["PreviousVersions"].as_array().unwrap().len(), 1);
    assert_eq!(v["PreviousVersions"][0]["CertificateDetails"]["Serial"], old_serial.as_str());

    // Revoke: the serial is on the CRL at once, served without a token, verified against the CA.
    let (status, v) = c.post(&alice, "/vedsdk/certificates/revoke", json!({"CertificateDN": www, "Reason": 1, "Disable": true})).await;
    assert_eq!((status, &v["Success"]), (200, &json!(true)), "{v}");
    let crl = reqwest::get(format!("{}/crl/issuing%20ca.crl", server.http_base())).await.unwrap();
    assert_eq!(crl.status().as_u16(), 200);
    std::fs::write(dir.join("ca.crl"), crl.bytes().await.unwrap()).unwrap();
    let (ok, out) = openssl(dir, &["crl", "-inform", "DER", "-in", "ca.crl", "-CAfile", "ca.pem", "-noout", "-verify", "-text"]);
    assert!(ok && out.contains("verify OK"), "{out}");
    assert!(out.contains(&new_serial), "the revoked serial {new_serial} is on the CRL: {out}");
    assert!(!out.contains(&old_serial), "the archived one was not revoked");
    // Retire and delete by GUID, as clients spell it: bare, and braced with the slash URL-encoded (VenafiPS).
    let bare = guid.trim_matches(|c| c == '{' || c == '}').to_owned();
    let r = c
        .http
        .put(format!("{}/vedsdk/certificates/{bare}", c.base))
        .bearer_auth(&alice)
        .json(&json!({"AttributeData": [{"Name": "Disabled", "Value": ["1"]}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let (status, _, v) = c.get(&reader, &format!("/vedsdk/certificates%2f%7b{bare}%7d")).await;
    assert_eq!((status, &v["Disabled"]), (200, &json!(true)), "{v}");
    let r = c.http.delete(format!("{}/vedsdk/certificates/{bare}", c.base)).bearer_auth(&alice).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let (status, _) = c.post(&reader, "/vedsdk/certificates/retrieve", json!({"CertificateDN": www})).await;
    assert_eq!(status, 400);

    // A 200 survives SIGKILL right after it: the issuance was committed before the answer.
    let (status, v) = c
        .post(
            &alice,
            "/vedsdk/certificates/request",
            json!({"PolicyDN": "\\VED\\Policy\\Web", "Subject": "durable.example.com", "KeyAlgorithm": "RSA", "KeyBitSize": 2048}),
        )
        .await;
    assert_eq!(status, 200, "{v}");
    let durable = v["CertificateDN"].as_str().unwrap().to_owned();
    server.kill();
    server.restart();
    let c = Call { http: strongroom_testkit::api::client(), base: server.http_base() };
    let data = c.retrieve(&reader, dir, "durable.pem", json!({"CertificateDN": durable, "Format": "base64"})).await;
    assert!(String::from_utf8(data).unwrap().contains("BEGIN CERTIFICATE"));
    let (ok, out) = openssl(dir, &["verify", "-CAfile", "ca.pem", "durable.pem"]);
    assert!(ok, "{out}");
    let (_, subject) = openssl(dir, &["x509", "-in", "durable.pem", "-noout", "-subject", "-text"]);
    assert!(subject.contains("durable.example.com") && subject.contains("2048 bit"), "{subject}");

    // Every request, issuance, key export and revocation is in the chained log, which verifies.
    let events = server.admin(&["events", "list", "--json", "--limit", "1000"], "");
    for kind in [
        "certificate.requested",
        "certificate.issued",
        "certificate.key_exported",
        "certificate.revoked",
        "certificate.deleted",
        "certificate.ca_created",
        "certificate.policy_set",
    ] {
        assert!(events.contains(kind), "{kind} in the log");
    }
    let verified = server.admin(&["events", "verify"], "");
    assert!(verified.contains("event log intact"), "{verified}");
}

/// An intermediate CA with a software RSA 2048 key (`admin ca create --intermediate`), signed by
/// an offline openssl root: installed with its root, it issues certificates whose chain
/// `Retrieve` gives leaf, intermediate, root (or root first), that openssl verifies up to the
/// root, and its CRL, signed by the intermediate, is the one openssl's CRL check takes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_intermediate_signed_by_an_offline_root_issues_with_its_chain() {
    let server = Server::start(&["--insecure-http"], &[]);
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let csr_file = dir.join("sub.csr").display().to_string();
    let dn = server.admin(
        &["ca", "create", "Sub", "--algorithm", "rsa2048", "--intermediate", "--csr-out", &csr_file, "--subject", "CN=Acme Sub, O=Acme"],
        "",
    );
    assert_eq!(dn.trim(), "\\VED\\Policy\\CA Templates\\Sub");
    let (ok, out) = openssl(
        dir,
        &[
            "req",
            "-x509",
            "-new",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "root.key",
            "-out",
            "root.pem",
            "-days",
            "30",
            "-subj",
            "/CN=Acme Root",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ],
    );
    assert!(ok, "{out}");
    std::fs::write(dir.join("sub.ext"), "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n").unwrap();
    let (ok, out) = root_signs(dir, "sub.csr", "sub.ext", "sub.pem");
    assert!(ok, "{out}");
    // Without cRLSign it is refused; with it and the root (one file, as a bundle), installed.
    std::fs::write(dir.join("bad.ext"), "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign\n").unwrap();
    let (ok, out) = root_signs(dir, "sub.csr", "bad.ext", "bad.pem");
    assert!(ok, "{out}");
    let root = std::fs::read_to_string(dir.join("root.pem")).unwrap();
    let bad = crate::process::run(
        &[
            "admin",
            "--data-dir",
            &server.dir.display().to_string(),
            "ca",
            "install",
            "Sub",
            "--cert",
            &dir.join("bad.pem").display().to_string(),
        ],
        &[],
    );
    assert!(bad.code != 0 && bad.stderr.contains("cRLSign"), "{bad:?}");
    std::fs::write(dir.join("bundle.pem"), format!("{}{root}", std::fs::read_to_string(dir.join("sub.pem")).unwrap())).unwrap();
    let installed = server.admin(&["ca", "install", "Sub", "--cert", &dir.join("bundle.pem").display().to_string()], "");
    assert!(installed.contains("2 certificates up to the root"), "{installed}");

    server.admin(&["folders", "create", "\\VED\\Policy\\Inner"], "");
    server.admin(&["policy", "set", "\\VED\\Policy\\Inner", "--issuing-ca", "Sub"], "");
    server.admin(&["users", "create", "alice"], &format!("{PASSWORD}\n"));
    server.admin(&["rights", "grant", "\\VED\\Policy\\Inner", "alice", "--rights", "view,read,write,create,revoke"], "");
    let scope = "certificate:manage,revoke";
    server.admin(&["integrations", "create", "vcert", "--scope", scope, "--allow-all-users", "--password-grant", "true"], "");
    let token = Api::new(server.http_base()).password_grant("vcert", "alice", PASSWORD, scope).await.access().to_owned();
    let c = Call { http: strongroom_testkit::api::client(), base: server.http_base() };
    let (status, v) = c
        .post(
            &token,
            "/vedsdk/certificates/request",
            json!({"PolicyDN": "\\VED\\Policy\\Inner", "Subject": "in.example.com", "KeyAlgorithm": "ECC"}),
        )
        .await;
    assert_eq!(status, 200, "{v}");
    let leaf = v["CertificateDN"].as_str().unwrap().to_owned();
    let bodies = |pem: &[u8]| -> Vec<String> {
        String::from_utf8_lossy(pem)
            .split("-----BEGIN CERTIFICATE-----")
            .skip(1)
            .map(|b| b.split("-----END").next().unwrap().chars().filter(|c| !c.is_whitespace()).collect())
            .collect()
    };
    let chain = c.retrieve(&token, dir, "leaf.pem", json!({"CertificateDN": leaf, "Format": "Base64", "IncludeChain": true})).await;
    let (sub, root_body) = (bodies(&std::fs::read(dir.join("sub.pem")).unwrap()), bodies(root.as_bytes()));
    let got = bodies(&chain);
    assert_eq!((got.len(), &got[1], &got[2]), (3, &sub[0], &root_body[0]), "leaf, intermediate, root");
    let first = c
        .retrieve(
            &token,
            dir,
            "first.pem",
            json!({"CertificateDN": leaf, "Format": "Base64", "IncludeChain": true, "RootFirstOrder": true}),
        )
        .await;
    assert_eq!(bodies(&first), got.iter().rev().cloned().collect::<Vec<_>>(), "root, intermediate, leaf");
    c.retrieve(&token, dir, "leaf.p7b", json!({"CertificateDN": leaf, "Format": "PKCS #7", "IncludeChain": true})).await;
    let (ok, out) = openssl(dir, &["pkcs7", "-inform", "DER", "-in", "leaf.p7b", "-print_certs", "-noout"]);
    assert!(ok && out.matches("subject=").count() == 3, "{out}");
    let (ok, out) = openssl(dir, &["verify", "-CAfile", "root.pem", "-untrusted", "sub.pem", "leaf.pem"]);
    assert!(ok && out.contains("leaf.pem: OK"), "{out}");
    let (_, text) = openssl(dir, &["x509", "-in", "leaf.pem", "-noout", "-text"]);
    assert!(text.contains("Signature Algorithm: sha256WithRSAEncryption") && text.contains("Issuer: CN = Acme Sub, O = Acme"), "{text}");

    // Revoked: on the intermediate's CRL, which openssl's CRL check takes as the intermediate's.
    let (status, v) = c.post(&token, "/vedsdk/certificates/revoke", json!({"CertificateDN": leaf, "Reason": 4})).await;
    assert_eq!(status, 200, "{v}");
    let crl = reqwest::get(format!("{}/crl/sub.crl", server.http_base())).await.unwrap().bytes().await.unwrap();
    std::fs::write(dir.join("sub.crl"), crl).unwrap();
    let (ok, out) = openssl(dir, &["crl", "-inform", "DER", "-in", "sub.crl", "-CAfile", "sub.pem", "-verify", "-out", "sub-crl.pem"]);
    assert!(ok && out.contains("verify OK"), "{out}");
    let (ok, out) =
        openssl(dir, &["verify", "-crl_check", "-CAfile", "root.pem", "-untrusted", "sub.pem", "-CRLfile", "sub-crl.pem", "leaf.pem"]);
    assert!(!ok && out.contains("certificate revoked"), "{out}");
    let events = server.admin(&["events", "list", "--json", "--limit", "1000"], "");
    assert!(events.contains("certificate.ca_installed"), "the install is in the log");
}

/// The scopes pyvenafi's certificate features ask for (scripts/certificates).
const PV_SCOPE: &str = "certificate:manage,revoke,delete;configuration:manage";

/// A server with a CA, the policy folder `\VED\Policy\Web` naming it (its organisation locked to
/// Acme), alice with every right there and bob with View and Read, and their tokens (`PV_SCOPE`).
async fn pyvenafi_fixture(server: &mut Server, dir: &Path) -> (Call, String, String) {
    server.admin(&["ca", "create", "Issuing CA", "--subject", "CN=Issuing CA, O=Acme, C=FR"], "");
    std::fs::write(dir.join("ca.pem"), server.admin(&["ca", "show", "Issuing CA", "--pem"], "")).unwrap();
    server.admin(&["folders", "create", "\\VED\\Policy\\Web"], "");
    server.admin(&["policy", "set", "\\VED\\Policy\\Web", "--issuing-ca", "Issuing CA", "--organization", "Acme", "--locked"], "");
    for user in ["alice", "bob"] {
        server.admin(&["users", "create", user], &format!("{PASSWORD}\n"));
    }
    server
        .admin(&["rights", "grant", "\\VED\\Policy\\Web", "alice", "--rights", "view,read,write,create,revoke,delete,privatekeyread"], "");
    server.admin(&["rights", "grant", "\\VED\\Policy\\Web", "bob", "--rights", "view,read"], "");
    server.admin(&["integrations", "create", "pyvenafi", "--scope", PV_SCOPE, "--allow-all-users", "--password-grant", "true"], "");
    let api = Api::new(server.http_base());
    let alice = api.password_grant("pyvenafi", "alice", PASSWORD, PV_SCOPE).await.access().to_owned();
    let bob = api.password_grant("pyvenafi", "bob", PASSWORD, PV_SCOPE).await.access().to_owned();
    (Call { http: strongroom_testkit::api::client(), base: server.http_base() }, alice, bob)
}

fn attrs(list: &[(&str, &[&str])]) -> Value {
    Value::Array(list.iter().map(|(n, v)| json!({"Name": n, "Value": v})).collect())
}

/// `GET Certificates/{guid}` (braces percent-encoded, as `requests` sends them).
async fn object_of(c: &Call, token: &str, guid: &str) -> Value {
    let (status, _, v) = c.get(token, &format!("/vedsdk/certificates/{}", guid.replace('{', "%7B").replace('}', "%7D"))).await;
    assert_eq!(status, 200, "{v}");
    v
}

/// pyvenafi's `certificate.create` → `renew` → `wait_for_enrollment_to_complete` → `download`, as
/// it sends them: `Config/Create` of class `X509 Certificate` makes an object without a
/// certificate (once; refused with its `Result` for a missing right, an unknown attribute, a key
/// too weak), `GET Certificates/{guid}` shows it without a thumbprint, the first `Renew` enrolls
/// it from its attributes (a central key; or the CSR given when `Manual Csr` is 1), the policy
/// refuses at that enrollment what it refuses in a request, a second `Renew` archives the first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_create_makes_a_certificate_object_that_renew_enrolls() {
    let mut server = Server::start(&["--insecure-http"], &[]);
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let (c, alice, bob) = pyvenafi_fixture(&mut server, dir).await;
    let create = |dn: &str, list: Value| json!({"ObjectDN": dn, "Class": "X509 Certificate", "NameAttributeList": list});
    let dn = "\\VED\\Policy\\Web\\made.example.com";
    // What pyvenafi's create sends (values as lists or strings; Driver Name accepted).
    let list = attrs(&[
        ("Description", &["made by pyvenafi"]),
        ("Contact", &["local:{11111111-2222-4333-8444-555555555555}"]),
        ("Management Type", &["Enrollment"]),
        ("Manual Csr", &["0"]),
        ("X509 Subject", &["made.example.com"]),
        ("Organization", &["Acme"]),
        ("Organizational Unit", &["Platform"]),
        ("City", &["Lyon"]),
        ("Country", &["FR"]),
        ("Driver Name", &["appx509certificate"]),
        ("X509 SubjectAltName DNS", &["made.example.com", "alias.example.com"]),
        ("X509 SubjectAltName IPAddress", &["192.0.2.10"]),
        ("Key Algorithm", &["RSA"]),
        ("Key Bit Strength", &["3072"]),
        ("Certificate Authority", &["\\VED\\Policy\\CA Templates\\Issuing CA"]),
        ("Disable Automatic Renewal", &["1"]),
    ]);
    // Bob may see the folder but not create in it: Result 7, nothing made.
    let (status, v) = c.post(&bob, "/vedsdk/config/create", create(dn, list.clone())).await;
    assert_eq!((status, v["Result"].as_i64()), (200, Some(7)), "{v}");
    // Refused attributes: an unknown name (112), a key too weak, a CA this server lacks (2).
    for (what, bad, code) in [
        ("an unknown attribute", attrs(&[("Favourite Colour", &["blue"])]), 112),
        ("a 1024-bit key", attrs(&[("Key Algorithm", &["RSA"]), ("Key Bit Strength", &["1024"])]), 2),
        ("an external CA", attrs(&[("Certificate Authority", &["\\VED\\Policy\\CA Templates\\Microsoft"])]), 2),
    ] {
        let (status, v) = c.post(&alice, "/vedsdk/config/create", create(dn, bad)).await;
        assert_eq!((status, v["Result"].as_i64()), (200, Some(code)), "{what}: {v}");
        assert!(v["Error"].as_str().is_some_and(|e| !e.is_empty()), "{what}: {v}");
    }
    let (_, v) = c.post(&alice, "/vedsdk/config/isvalid", json!({"ObjectDN": dn})).await;
    assert_eq!(v["Result"], 400, "nothing was made by the refusals: {v}");
    // Made: Result 1 with the object, of the class asked.
    let (status, v) = c.post(&alice, "/vedsdk/config/create", create(dn, list.clone())).await;
    assert_eq!((status, v["Result"].as_i64()), (200, Some(1)), "{v}");
    assert_eq!((v["Object"]["DN"].as_str(), v["Object"]["TypeName"].as_str()), (Some(dn), Some("X509 Certificate")), "{v}");
    let guid = v["Object"]["GUID"].as_str().unwrap().to_owned();
    // Again: the product's "exists" (pyvenafi then fetches the object with Config/IsValid).
    let (_, v) = c.post(&alice, "/vedsdk/config/create", create(dn, list.clone())).await;
    assert_eq!(v["Result"], 401, "{v}");
    let (_, v) = c.post(&alice, "/vedsdk/config/isvalid", json!({"ObjectDN": dn})).await;
    assert_eq!((v["Result"].as_i64(), v["Object"]["GUID"].as_str()), (Some(1), Some(guid.as_str())), "{v}");
    // No certificate yet: GET answers the object without a thumbprint, idle; Retrieve says so.
    let v = object_of(&c, &alice, &guid).await;
    assert_eq!((v["DN"].as_str(), v["SchemaClass"].as_str()), (Some(dn), Some("X509 Certificate")), "{v}");
    assert!(v["CertificateDetails"].is_object() && v["CertificateDetails"].get("Thumbprint").is_none(), "{v}");
    assert_eq!(v["ProcessingDetails"], json!({}), "{v}");
    assert_eq!(v["Contact"], json!(["local:{11111111-2222-4333-8444-555555555555}"]), "{v}");
    let (status, v) = c.post(&alice, "/vedsdk/certificates/retrieve", json!({"CertificateDN": dn})).await;
    assert_eq!(status, 400, "{v}");
    assert!(v["Error"].as_str().unwrap().contains("no certificate yet"), "{v}");
    let (_, count, v) = c.get(&alice, "/vedsdk/certificates/?CN=made.example.com").await;
    assert_eq!(count.as_deref(), Some("1"), "listed, without validity: {v}");
    assert!(v["Certificates"][0]["X509"].get("ValidTo").is_none(), "{v}");
    // Bob (Read, no Write) cannot enroll it.
    let (status, v) = c.post(&bob, "/vedsdk/certificates/renew", json!({"CertificateDN": dn, "Reenable": false})).await;
    assert_eq!((status, &v["Success"]), (403, &json!(false)), "{v}");
    // The first Renew enrolls it from its attributes, with a key made here.
    let (status, v) = c.post(&alice, "/vedsdk/certificates/renew", json!({"CertificateDN": dn, "Reenable": false})).await;
    assert_eq!((status, &v["Success"]), (200, &json!(true)), "{v}");
    let v = object_of(&c, &alice, &guid).await;
    let thumb = v["CertificateDetails"]["Thumbprint"].as_str().unwrap().to_owned();
    assert_eq!(thumb.len(), 40, "{v}");
    assert_eq!(v["ProcessingDetails"], json!({}), "idle: Stage absent");
    c.retrieve(&alice, dir, "made.pem", json!({"CertificateDN": dn, "Format": "Base64", "IncludeChain": true})).await;
    let (ok, out) = openssl(dir, &["verify", "-CAfile", "ca.pem", "made.pem"]);
    assert!(ok, "{out}");
    let (_, text) =
        openssl(dir, &["x509", "-in", "made.pem", "-noout", "-subject", "-ext", "subjectAltName", "-text", "-nameopt", "RFC2253"]);
    for want in
        ["CN=made.example.com", "O=Acme", "OU=Platform", "L=Lyon", "C=FR", "DNS:alias.example.com", "IP Address:192.0.2.10", "3072 bit"]
    {
        assert!(text.contains(want), "{want} in {text}");
    }
    // The key made here is the certificate's, handed out under a password.
    let data = c
        .retrieve(
            &alice,
            dir,
            "made-key.pem",
            json!({"CertificateDN": dn, "Format": "Base64 (PKCS #8)", "IncludePrivateKey": true, "Password": "a passphrase"}),
        )
        .await;
    assert!(String::from_utf8(data).unwrap().contains("ENCRYPTED PRIVATE KEY"));
    let (ok, out) = openssl(dir, &["pkey", "-in", "made-key.pem", "-passin", "pass:a passphrase", "-pubout"]);
    let (_, cert_pub) = openssl(dir, &["x509", "-in", "made.pem", "-noout", "-pubkey"]);
    assert!(ok && out.trim() == cert_pub.trim(), "{out}");
    // Renewed: a new serial, the first in PreviousVersions.
    let first_serial = serial_of(dir, "made.pem");
    let (status, v) = c.post(&alice, "/vedsdk/certificates/renew", json!({"CertificateDN": dn})).await;
    assert_eq!(status, 200, "{v}");
    c.retrieve(&alice, dir, "made2.pem", json!({"CertificateDN": dn, "Format": "Base64"})).await;
    assert_ne!(serial_of(dir, "made2.pem"), first_serial);
    let (_, text) = openssl(dir, &["x509", "-in", "made2.pem", "-noout", "-subject", "-ext", "subjectAltName", "-nameopt", "RFC2253"]);
    assert!(text.contains("OU=Platform") && text.contains("DNS:alias.example.com"), "renewed from the same attributes: {text}");
    let (_, _, v) = c.get(&alice, &format!("/vedsdk/certificates/{}/PreviousVersions", guid.replace('{', "%7B").replace('}', "%7D"))).await;
    assert_eq!(v["PreviousVersions"][0]["CertificateDetails"]["Serial"], first_serial.as_str(), "{v}");

    // The policy judges the attributes at enrollment: a locked organisation refused, nothing issued.
    let evil = "\\VED\\Policy\\Web\\evil.example.com";
    let list = attrs(&[("X509 Subject", &["evil.example.com"]), ("Organization", &["Evil"])]);
    let (_, v) = c.post(&alice, "/vedsdk/config/create", create(evil, list)).await;
    assert_eq!(v["Result"], 1, "{v}");
    let evil_guid = v["Object"]["GUID"].as_str().unwrap().to_owned();
    let (status, v) = c.post(&alice, "/vedsdk/certificates/renew", json!({"CertificateDN": evil})).await;
    assert_eq!((status, &v["Success"]), (400, &json!(false)), "{v}");
    assert!(v["Error"].as_str().unwrap().contains("locked"), "{v}");
    assert!(object_of(&c, &alice, &evil_guid).await["CertificateDetails"].get("Thumbprint").is_none(), "nothing issued");

    // Manual Csr 1: the requester's CSR is needed, and its key is the certificate's.
    let manual = "\\VED\\Policy\\Web\\manual";
    let (_, v) = c.post(&alice, "/vedsdk/config/create", create(manual, attrs(&[("Manual Csr", &["1"])]))).await;
    assert_eq!(v["Result"], 1, "{v}");
    let (status, v) = c.post(&alice, "/vedsdk/certificates/renew", json!({"CertificateDN": manual})).await;
    assert_eq!(status, 400, "no PKCS10: {v}");
    let pem = csr(dir, "manual", "/CN=manual.example.com/O=Acme", &["manual.example.com"], None);
    let (status, v) = c.post(&alice, "/vedsdk/certificates/renew", json!({"CertificateDN": manual, "PKCS10": pem})).await;
    assert_eq!(status, 200, "{v}");
    c.retrieve(&alice, dir, "manual.pem", json!({"CertificateDN": manual, "Format": "Base64"})).await;
    let (_, cert_pub) = openssl(dir, &["x509", "-in", "manual.pem", "-noout", "-pubkey"]);
    let (_, key_pub) = openssl(dir, &["pkey", "-in", "manual.key", "-pubout"]);
    assert_eq!(cert_pub.trim(), key_pub.trim(), "the CSR's key");

    // In the chained log: the object made, its first enrollment.
    let events = server.admin(&["events", "list", "--json", "--limit", "1000"], "");
    assert!(events.contains("a certificate object without a certificate") && events.contains("first enrollment, central key"), "{events}");
    assert!(server.admin(&["events", "verify"], "").contains("event log intact"));
}

/// VenafiPS's Disable: `Config/Write {ObjectDN, AttributeData:[{Name:"Disabled", Value}]}` does what
/// `PUT Certificates/{guid}` does (Write on the object; anything else written is `Result` 5); and
/// `Certificates/Associate`, `Dissociate`, `Push` are a clear 400 (no devices here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_write_disables_and_device_calls_are_refused() {
    let mut server = Server::start(&["--insecure-http"], &[]);
    let work = tempfile::tempdir().unwrap();
    let (c, alice, bob) = pyvenafi_fixture(&mut server, work.path()).await;
    let (status, v) = c
        .post(
            &alice,
            "/vedsdk/certificates/request",
            json!({"PolicyDN": "\\VED\\Policy\\Web", "Subject": "ps.example.com", "KeyAlgorithm": "ECC"}),
        )
        .await;
    assert_eq!(status, 200, "{v}");
    let (dn, guid) = (v["CertificateDN"].as_str().unwrap().to_owned(), v["Guid"].as_str().unwrap().to_owned());
    let write = |value: Value| json!({"ObjectDN": dn, "AttributeData": [{"Name": "Disabled", "Value": value}]});
    // Bob holds Read, not Write: Result 7, still enabled.
    let (status, v) = c.post(&bob, "/vedsdk/config/write", write(json!(["1"]))).await;
    assert_eq!((status, v["Result"].as_i64()), (200, Some(7)), "{v}");
    assert_eq!(object_of(&c, &alice, &guid).await["Disabled"], false);
    // Alice: disabled (a list, as the docs say), then enabled (a scalar, as VenafiPS sends it).
    let (status, v) = c.post(&alice, "/vedsdk/config/write", write(json!(["1"]))).await;
    assert_eq!((status, v["Result"].as_i64()), (200, Some(1)), "{v}");
    assert_eq!(object_of(&c, &alice, &guid).await["Disabled"], true);
    let (_, count, _) = c.get(&alice, "/vedsdk/certificates/?Disabled=1&CN=ps.example.com").await;
    assert_eq!(count.as_deref(), Some("1"));
    // Disabled: Renew needs Reenable, which enables it again.
    let (status, v) = c.post(&alice, "/vedsdk/certificates/renew", json!({"CertificateDN": dn})).await;
    assert_eq!((status, &v["Success"]), (400, &json!(false)), "{v}");
    assert!(v["Error"].as_str().unwrap().contains("Reenable"), "{v}");
    let (status, v) = c.post(&alice, "/vedsdk/certificates/renew", json!({"CertificateDN": dn, "Reenable": "true"})).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(object_of(&c, &alice, &guid).await["Disabled"], false);
    let (_, v) = c.post(&alice, "/vedsdk/config/write", write(json!(["1"]))).await;
    assert_eq!(v["Result"], 1, "{v}");
    let (_, v) = c.post(&alice, "/vedsdk/config/write", write(json!("0"))).await;
    assert_eq!(v["Result"], 1, "{v}");
    assert_eq!(object_of(&c, &alice, &guid).await["Disabled"], false);
    // What is not written here: Result 5 and nothing changed; a DN that does not exist: 400.
    let (_, v) = c
        .post(
            &alice,
            "/vedsdk/config/write",
            json!({"ObjectDN": dn, "AttributeData": [{"Name": "Disabled", "Value": ["1"]}, {"Name": "Description", "Value": ["x"]}]}),
        )
        .await;
    assert_eq!(v["Result"], 5, "{v}");
    assert_eq!(object_of(&c, &alice, &guid).await["Disabled"], false, "nothing written");
    let (_, v) = c
        .post(
            &alice,
            "/vedsdk/config/write",
            json!({"ObjectDN": "\\VED\\Policy\\Web", "AttributeData": [{"Name": "Disabled", "Value": ["1"]}]}),
        )
        .await;
    assert_eq!(v["Result"], 5, "a folder: {v}");
    let (_, v) = c
        .post(
            &alice,
            "/vedsdk/config/write",
            json!({"ObjectDN": "\\VED\\Policy\\Web\\nope", "AttributeData": [{"Name": "Disabled", "Value": ["1"]}]}),
        )
        .await;
    assert_eq!(v["Result"], 400, "{v}");
    let events = server.admin(&["events", "list", "--json", "--limit", "1000"], "");
    assert_eq!(events.matches("certificate.disabled").count(), 3, "each change is an event: {events}");

    // Devices and application pushes are out of scope: 400 with Error, never a 404.
    for call in ["associate", "dissociate", "push"] {
        let (status, v) = c
            .post(
                &alice,
                &format!("/vedsdk/certificates/{call}"),
                json!({"CertificateDN": dn, "ApplicationDN": ["\\VED\\Policy\\Web\\app"], "PushToNew": true}),
            )
            .await;
        assert_eq!(status, 400, "{call}: {v}");
        assert!(v["Error"].as_str().is_some_and(|e| e.contains("devices")), "{call}: {v}");
    }
}

/// The store calls a certificate call takes (`strongroom_store_calls_total` before and after, the
/// fewest of three tries: the janitor's rounds also call the store).
async fn store_calls(c: &Call, mut call: impl AsyncFnMut(usize) -> (u16, Value)) -> u64 {
    let calls = async || {
        let text = c.http.get(format!("{}/metrics", c.base)).send().await.unwrap().text().await.unwrap();
        text.lines().find_map(|l| l.strip_prefix("strongroom_store_calls_total ")?.trim().parse::<u64>().ok()).unwrap()
    };
    let mut fewest = u64::MAX;
    for i in 0..3 {
        let before = calls().await;
        let (status, v) = call(i).await;
        assert_eq!(status, 200, "{v}");
        fewest = fewest.min(calls().await - before);
    }
    fewest
}

/// A `Certificates/Request` is one context read, a decision and one write (with the data key and
/// the entries' ids): its store calls, and those of `Retrieve` and `Renew`, stay few.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_takes_few_store_calls() {
    let mut server = Server::start(&["--insecure-http"], &[]);
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let (c, alice, _) = pyvenafi_fixture(&mut server, dir).await;
    let csrs: Vec<String> = (0..3).map(|i| csr(dir, &format!("calls{i}"), &format!("/CN=calls{i}.example.com"), &[], None)).collect();
    let request = store_calls(&c, async |i| {
        c.post(&alice, "/vedsdk/certificates/request", json!({"PolicyDN": "\\VED\\Policy\\Web", "PKCS10": csrs[i]})).await
    })
    .await;
    let central = store_calls(&c, async |i| {
        let body = json!({"PolicyDN": "\\VED\\Policy\\Web", "Subject": format!("central{i}.example.com"), "KeyAlgorithm": "ECC"});
        c.post(&alice, "/vedsdk/certificates/request", body).await
    })
    .await;
    let retrieve = store_calls(&c, async |i| {
        c.post(&alice, "/vedsdk/certificates/retrieve", json!({"CertificateDN": format!("\\VED\\Policy\\Web\\calls{i}.example.com")})).await
    })
    .await;
    let renew = store_calls(&c, async |i| {
        c.post(&alice, "/vedsdk/certificates/renew", json!({"CertificateDN": format!("\\VED\\Policy\\Web\\central{i}.example.com")})).await
    })
    .await;
    eprintln!("store calls: Request with a CSR {request}, with a central key {central}, Retrieve {retrieve}, Renew {renew}");
    // The caller's context, the request's context, the entries' ids, the write; a Retrieve's two
    // reads; a Renew reads the object's entries besides (its CSR or certificate on file).
    assert_eq!((request, central, retrieve, renew), (4, 4, 2, 5), "a certificate call took more store calls");
}

/// A CSR's subject fields are judged by the policy's locked values, and one the CSR lacks is judged
/// by what the body says instead (the organization here is locked to Acme).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_csr_without_a_locked_field_is_judged_by_the_body() {
    let mut server = Server::start(&["--insecure-http"], &[]);
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let (c, alice, _) = pyvenafi_fixture(&mut server, dir).await;
    let pem = csr(dir, "no-o", "/CN=no-o.example.com", &[], None);
    let body = |org: &str| json!({"PolicyDN": "\\VED\\Policy\\Web", "PKCS10": pem, "Organization": org});
    let (status, v) = c.post(&alice, "/vedsdk/certificates/request", body("Evil Corp")).await;
    assert_eq!(status, 400, "{v}");
    assert!(v["Error"].as_str().unwrap().contains("Organization is locked to \"Acme\""), "{v}");
    let (status, v) = c.post(&alice, "/vedsdk/certificates/request", body("Acme")).await;
    assert_eq!(status, 200, "{v}");
    let own = csr(dir, "own-o", "/CN=own-o.example.com/O=Evil Corp", &[], None);
    let (status, v) = c
        .post(&alice, "/vedsdk/certificates/request", json!({"PolicyDN": "\\VED\\Policy\\Web", "PKCS10": own, "Organization": "Acme"}))
        .await;
    assert_eq!(status, 400, "the CSR's own organization is what is judged: {v}");
}
