//! N2-N5: the certificate edge against hostile input, against the real binary. Names that are
//! not names (a NUL inside a DNS name, empty labels, a slash, spaces, lengths past RFC 5280's
//! bounds) are refused before the policy judges them, in CSRs, `Subject`, `SubjectAltNames` and
//! `Config/Create` alike, with nothing issued or made (N2, N3); a server-made private key leaves
//! only under a password a user could choose (N4); `Revoke` takes only the product's reasons,
//! and the CRL carries exactly the one stored (N5). N6, key generation under a flood, is in
//! `limits` (it runs alone).

use serde_json::{Value, json};

use crate::support::{Fx, PASSWORD, report};

const FOLDER: &str = "\\VED\\Policy\\Names";
const SCOPE: &str = "certificate:manage,revoke;configuration:manage";

/// A server with a CA, a folder allowing `example.com` only, and alice's token on it.
async fn fixture() -> (Fx, String) {
    let fx = Fx::start(&[], &[]);
    fx.server.admin(&["ca", "create", "Names CA"], "");
    fx.server.admin(&["folders", "create", FOLDER], "");
    fx.server.admin(&["policy", "set", FOLDER, "--issuing-ca", "Names CA", "--domains", "example.com"], "");
    fx.server.admin(&["rights", "grant", FOLDER, "alice", "--rights", "view,read,write,create,revoke,privatekeyread"], "");
    fx.server.admin(&["integrations", "create", "certs", "--scope", SCOPE, "--allow-all-users", "--password-grant", "true"], "");
    let body = json!({"client_id": "certs", "username": "alice", "password": PASSWORD, "scope": SCOPE});
    let (st, t) = fx.post_json("/vedauth/authorize/oauth", &body).await;
    assert_eq!(st, 200, "{t}");
    let token = t["access_token"].as_str().unwrap().to_owned();
    (fx, token)
}

/// `POST /vedsdk/{op}` with alice's token: the status, the body as text and as JSON.
async fn call(fx: &Fx, token: &str, op: &str, body: &Value) -> (u16, String, Value) {
    let r = fx.http.post(format!("{}/vedsdk/{op}", fx.base)).bearer_auth(token).json(body).send().await.unwrap();
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    let v = serde_json::from_str(&text).unwrap_or(Value::Null);
    (status, text, v)
}

/// A PKCS#10 request (PEM) for `cn` with DNS names `dns`, made as a hostile client would: rcgen
/// writes any IA5 and UTF-8 text, a NUL included.
fn csr(cn: &str, dns: &[&str]) -> String {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut p = rcgen::CertificateParams::default();
    p.distinguished_name = rcgen::DistinguishedName::new();
    p.distinguished_name.push(rcgen::DnType::CommonName, cn);
    p.subject_alt_names = dns.iter().map(|d| rcgen::SanType::DnsName(rcgen::Ia5String::try_from(*d).unwrap())).collect();
    p.serialize_request(&key).unwrap().pem().unwrap()
}

fn central(cn: &str, sans: &[&str]) -> Value {
    let sans: Vec<Value> = sans.iter().map(|n| json!({"TypeName": "DNS", "Name": n})).collect();
    json!({"PolicyDN": FOLDER, "Subject": cn, "SubjectAltNames": sans, "KeyAlgorithm": "ECC", "EllipticCurve": "P256"})
}

fn with_csr(pem: &str) -> Value {
    json!({"PolicyDN": FOLDER, "ObjectName": "from-csr", "PKCS10": pem})
}

fn create(name: &str, attribute: &str, value: &str) -> Value {
    json!({
        "ObjectDN": format!("{FOLDER}\\{name}"),
        "Class": "X509 Certificate",
        "NameAttributeList": [{"Name": attribute, "Value": [value]}],
    })
}

/// One hostile request's answer, judged: refused with the documented error, the name shown
/// (escaped, cut short) in it, the body small.
struct Refusal {
    what: String,
    ok: bool,
    seen: String,
}

async fn refused(fx: &Fx, token: &str, what: &str, op: &str, body: Value, shown: &str) -> Refusal {
    let (st, text, v) = call(fx, token, op, &body).await;
    let error = v["Error"].as_str().unwrap_or_default().to_owned();
    let ok = if op.starts_with("config/") {
        // The product's Config results: 200 with Result 2 (InvalidArgument).
        st == 200 && v["Result"] == 2 && error.contains(shown)
    } else {
        st == 400 && error.contains(shown)
    } && text.len() < 1024;
    Refusal { what: what.to_owned(), ok, seen: format!("{st} {}", text.chars().take(160).collect::<String>()) }
}

/// `[what: status body]` of the refusals that did not hold, for the report and the assertion.
fn failures(list: &[Refusal]) -> Vec<String> {
    list.iter().filter(|r| !r.ok).map(|r| format!("{}: {}", r.what, r.seen)).collect()
}

/// Whether the folder holds no object: nothing made, nothing issued.
async fn nothing_made(fx: &Fx, token: &str) -> bool {
    let r =
        fx.http.get(format!("{}/vedsdk/certificates/", fx.base)).query(&[("ParentDn", FOLDER)]).bearer_auth(token).send().await.unwrap();
    r.headers().get("x-record-count").and_then(|v| v.to_str().ok()) == Some("0")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn n2_a_nul_inside_a_dns_name_is_refused_everywhere() {
    let (fx, token) = fixture().await;
    let evil = "www.evil.com\0.example.com";
    // As the refusal shows it: escaped, so the log and the body hold no NUL.
    let shown = r#""www.evil.com\0.example.com""#;
    let mut list = Vec::new();
    for (what, op, body) in [
        ("CSR CN", "certificates/request", with_csr(&csr(evil, &[]))),
        ("CSR DNS SAN", "certificates/request", with_csr(&csr("ok.example.com", &[evil]))),
        ("Subject", "certificates/request", central(evil, &[])),
        ("SubjectAltNames DNS", "certificates/request", central("ok.example.com", &[evil])),
        ("Config/Create X509 Subject", "config/create", create("nul-cn", "X509 Subject", evil)),
        ("Config/Create DNS", "config/create", create("nul-dns", "X509 SubjectAltName DNS", evil)),
    ] {
        list.push(refused(&fx, &token, what, op, body, shown).await);
    }
    let empty = nothing_made(&fx, &token).await;
    let issued_before = fx.events("certificate.issued");
    // The same requests without the NUL are issued: the refusals are the name's.
    let (st, _, v) = call(&fx, &token, "certificates/request", &central("www.example.com", &[])).await;
    let control = st == 200 && fx.events("certificate.issued") == 1;
    let bad = failures(&list);
    let log = fx.server.stop();
    let log_clean = !log.contains('\0');
    let ok = report(
        "N2",
        "a NUL inside a DNS name",
        &format!(
            "`www.evil.com\\0.example.com` under a policy of example.com as CSR CN, CSR SAN, Subject, SubjectAltNames and \
             Config/Create's X509 Subject and DNS: {}/{} refused with the name escaped (400, Config Result 2), {issued_before} \
             issued, folder empty: {empty}; no NUL in the server's log: {log_clean}; the same without the NUL issued: {control}{}",
            list.len() - bad.len(),
            list.len(),
            if bad.is_empty() { String::new() } else { format!("; not refused: {bad:?}") },
        ),
        bad.is_empty() && empty && issued_before == 0 && control && log_clean,
    );
    assert!(ok, "N2: {v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn n3_names_that_are_not_host_names_are_refused_and_bounded() {
    let (fx, token) = fixture().await;
    // 59 labels of 63 and a last one: 3,840 characters.
    let long_dns = format!("{}{}.example.com", format!("{}.", "a".repeat(63)).repeat(59), "b".repeat(52));
    assert_eq!(long_dns.len(), 3840);
    let huge_cn = "c".repeat(100_000);
    let mut list = Vec::new();
    for (what, body, shown) in [
        ("Subject .example.com", central(".example.com", &[]), r#"".example.com" is not a host name"#),
        ("Subject a..example.com", central("a..example.com", &[]), r#""a..example.com" is not a host name"#),
        ("Subject evil.com/.example.com", central("evil.com/.example.com", &[]), r#""evil.com/.example.com" is not a host name"#),
        ("SAN with a trailing space", central("ok.example.com", &["www.example.com "]), r#""www.example.com " is not a host name"#),
        ("SAN of 3,840 characters", central("ok.example.com", &[&long_dns]), "(3840 characters) is not a host name: longer than 253"),
        ("CN of 100,000 characters", central(&huge_cn, &[]), "(100000 characters) is longer than 64"),
        ("CSR SAN .example.com", with_csr(&csr("ok.example.com", &[".example.com"])), r#"".example.com" is not a host name"#),
        ("CSR CN a..example.com", with_csr(&csr("a..example.com", &[])), r#""a..example.com" is not a host name"#),
        ("CSR CN of 100,000 characters", with_csr(&csr(&huge_cn, &[])), "(100000 characters) is longer than 64"),
    ] {
        list.push(refused(&fx, &token, what, "certificates/request", body, shown).await);
    }
    list.push(
        refused(
            &fx,
            &token,
            "Config/Create DNS a..example.com",
            "config/create",
            create("dots", "X509 SubjectAltName DNS", "a..example.com"),
            "a..example.com",
        )
        .await,
    );
    let empty = nothing_made(&fx, &token).await;
    // At the bounds: a 253-character host name and a 64-character CN are issued.
    let max_dns = format!("{}.{}.{}.{}.example.com", "a".repeat(63), "b".repeat(63), "c".repeat(63), "d".repeat(49));
    let max_cn = format!("{}.example.com", "e".repeat(52));
    assert_eq!((max_dns.len(), max_cn.len()), (253, 64));
    let (st_dns, _, v1) = call(&fx, &token, "certificates/request", &central("bound.example.com", &[&max_dns])).await;
    let (st_cn, _, v2) = call(&fx, &token, "certificates/request", &central(&max_cn, &[])).await;
    let issued = fx.events("certificate.issued");
    let bad = failures(&list);
    let ok = report(
        "N3",
        "names that are not host names",
        &format!(
            ".example.com, a..example.com, evil.com/.example.com, a SAN with a trailing space, a 3,840-character DNS name, a \
             100,000-character CN (API, CSR and Config/Create): {}/{} refused with the product's 400 (Config Result 2) naming \
             the name, each body under 1 KiB, folder empty: {empty}; at the bounds a 253-character DNS name {st_dns} and a \
             64-character CN {st_cn}, {issued} issued{}",
            list.len() - bad.len(),
            list.len(),
            if bad.is_empty() { String::new() } else { format!("; not refused: {bad:?}") },
        ),
        bad.is_empty() && empty && st_dns == 200 && st_cn == 200 && issued == 2,
    );
    assert!(ok, "N3: {v1} {v2}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn n4_a_server_made_key_leaves_only_under_a_strong_password() {
    let (fx, token) = fixture().await;
    let (st, _, v) = call(&fx, &token, "certificates/request", &central("key.example.com", &[])).await;
    assert_eq!(st, 200, "{v}");
    let dn = v["CertificateDN"].as_str().unwrap().to_owned();
    let export = |format: &str, password: &str| json!({"CertificateDN": dn, "Format": format, "IncludePrivateKey": true, "IncludeChain": true, "Password": password});
    let weak = ["a", "pw 1", "1234567", "password", "Password1", "letmein", "qqqqqqqqqqqq"];
    let mut refusals = Vec::new();
    for format in ["Base64 (PKCS #8)", "PKCS #12"] {
        for pw in weak {
            let (st, text, v) = call(&fx, &token, "certificates/retrieve", &export(format, pw)).await;
            let error = v["Error"].as_str().unwrap_or_default();
            let held = st == 400 && error.contains("is refused") && v.get("CertificateData").is_none();
            // The password itself is never repeated ("a" and "password" are words of the text).
            let echoed = !["a", "password"].contains(&pw) && text.contains(pw);
            refusals.push((format!("{format} {pw:?}"), held && !echoed));
        }
    }
    let exported_on_refusals = fx.events("certificate.key_exported");
    let mut allowed = 0;
    for format in ["Base64 (PKCS #8)", "PKCS #12"] {
        let (st, _, v) = call(&fx, &token, "certificates/retrieve", &export(format, "a long passphrase")).await;
        allowed += usize::from(st == 200 && v["CertificateData"].as_str().is_some_and(|d| !d.is_empty()));
    }
    let exported = fx.events("certificate.key_exported");
    let bad: Vec<&String> = refusals.iter().filter(|(_, ok)| !ok).map(|(w, _)| w).collect();
    let ok = report(
        "N4",
        "key passwords",
        &format!(
            "a central P-256 key asked for under {} weak passwords (shorter than 8, breach-list, one character repeated) as \
             PBES2 PKCS#8 and PKCS #12: {}/{} refused 400, {exported_on_refusals} certificate.key_exported events; under a \
             16-character passphrase: {allowed}/2 exported, {exported} events{}",
            weak.len(),
            refusals.len() - bad.len(),
            refusals.len(),
            if bad.is_empty() { String::new() } else { format!("; not refused: {bad:?}") },
        ),
        bad.is_empty() && exported_on_refusals == 0 && allowed == 2 && exported == 2,
    );
    assert!(ok, "N4");
}

/// The serial (upper-case hex) of the certificate of CN `cn`.
async fn serial(fx: &Fx, token: &str, cn: &str) -> String {
    let r = fx.http.get(format!("{}/vedsdk/certificates/", fx.base)).query(&[("CN", cn)]).bearer_auth(token).send().await.unwrap();
    let v: Value = r.json().await.unwrap();
    v["Certificates"][0]["X509"]["Serial"].as_str().unwrap_or_else(|| panic!("no serial for {cn}: {v}")).to_ascii_uppercase()
}

/// The CRL's entries, as openssl prints them: serial (upper-case hex) → reason (`None` without one).
fn crl_entries(der: &[u8]) -> std::collections::BTreeMap<String, Option<String>> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ca.crl"), der).unwrap();
    let out = std::process::Command::new("openssl")
        .current_dir(dir.path())
        .args(["crl", "-inform", "DER", "-in", "ca.crl", "-noout", "-text"])
        .output()
        .expect("openssl is needed by the security suite (apt install openssl)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut entries = std::collections::BTreeMap::new();
    let mut current: Option<String> = None;
    let mut lines = text.lines().map(str::trim);
    while let Some(line) = lines.next() {
        if let Some(s) = line.strip_prefix("Serial Number: ") {
            let s = s.trim_start_matches('0').to_ascii_uppercase();
            entries.insert(s.clone(), None);
            current = Some(s);
        } else if line.starts_with("X509v3 CRL Reason Code")
            && let (Some(s), Some(reason)) = (&current, lines.next())
        {
            entries.insert(s.clone(), Some(reason.to_owned()));
        }
    }
    entries
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn n5_revoke_takes_only_the_products_reasons_and_the_crl_shows_the_one_stored() {
    let (fx, token) = fixture().await;
    let revoke = |cn: &str, reason: Value| json!({"CertificateDN": format!("{FOLDER}\\{cn}"), "Reason": reason, "Disable": false});
    let (st, _, v) = call(&fx, &token, "certificates/request", &central("kept.example.com", &[])).await;
    assert_eq!(st, 200, "{v}");
    // Reasons RFC 5280 does not define, or the product does not document: refused, nothing revoked.
    let undefined = [json!(99), json!(-1), json!(6), json!(7), json!(8), json!(10), json!(9_000_000_000_i64), json!("99")];
    let mut refused = 0;
    for reason in &undefined {
        let (st, _, v) = call(&fx, &token, "certificates/revoke", &revoke("kept.example.com", reason.clone())).await;
        refused +=
            usize::from(st == 400 && v["Success"] == false && v["Error"].as_str().is_some_and(|e| e.contains("not a revocation reason")));
    }
    let revoked_by_refusals = fx.events("certificate.revoked");
    // Each reason the product documents, on a certificate of its own.
    let names = ["unspecified", "Key Compromise", "CA Compromise", "Affiliation Changed", "Superseded", "Cessation Of Operation"];
    let mut serials = Vec::new();
    for code in 0..6 {
        let cn = format!("r{code}.example.com");
        let (st, _, v) = call(&fx, &token, "certificates/request", &central(&cn, &[])).await;
        assert_eq!(st, 200, "{v}");
        let (st, _, v) = call(&fx, &token, "certificates/revoke", &revoke(&cn, json!(code))).await;
        assert_eq!((st, &v["Success"]), (200, &json!(true)), "reason {code}: {v}");
        serials.push(serial(&fx, &token, &cn).await);
    }
    let kept = serial(&fx, &token, "kept.example.com").await;
    let crl = fx.http.get(format!("{}/crl/names%20ca.crl", fx.base)).send().await.unwrap().bytes().await.unwrap();
    let entries = crl_entries(&crl);
    // Reason 0 (unspecified) is left out of the entry, as RFC 5280 §5.3.1 asks; 1-5 are named.
    let exact = serials.iter().enumerate().filter(|(code, s)| {
        let want = if *code == 0 { None } else { Some(names[*code].to_owned()) };
        entries.get(s.trim_start_matches('0')) == Some(&want)
    });
    let exact = exact.count();
    let kept_off = !entries.contains_key(kept.trim_start_matches('0'));
    let ok = report(
        "N5",
        "revocation reasons",
        &format!(
            "Reason 99, -1, 6, 7, 8, 10, 9,000,000,000 and \"99\": {refused}/{} refused 400 (Success false), \
             {revoked_by_refusals} revocations, that certificate not on the CRL: {kept_off}; reasons 0-5 on six certificates: \
             {exact}/6 CRL entries show exactly the reason stored (0 without a reason code); {} entries in all",
            undefined.len(),
            entries.len(),
        ),
        refused == undefined.len() && revoked_by_refusals == 0 && kept_off && exact == 6 && entries.len() == 6,
    );
    assert!(ok, "N5: {entries:?} {serials:?}");
}
