//! TLS to PostgreSQL: a server owned by the test with `ssl = on`, a
//! certificate for `localhost` from a CA the test makes, and a `pg_hba.conf`
//! that admits TCP connections only over TLS. Each `sslmode` is tried the
//! way the store connects (`tls_in_use`), and the binary is run against it.

use std::process::{Command, Stdio};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
use strongroom_store::postgres::testing::tls_in_use;

use crate::pg_instance::{PgInstance, server_binaries};
use crate::process::BIN;

/// A CA's certificate and key.
struct Ca {
    cert: rcgen::Certificate,
    key: KeyPair,
}

fn ca(name: &str) -> Ca {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    Ca { cert: params.self_signed(&key).unwrap(), key }
}

/// Runs `strongroom admin init` (the tables and a master key), then `admin
/// users list`, against `url` on a fresh data directory; stops at the first
/// that fails.
fn admin_with(url: &str) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut all = String::new();
    for args in [&["init"][..], &["users", "list"]] {
        let out = Command::new(BIN)
            .args(["admin", "--data-dir"])
            .arg(dir.path())
            .args(args)
            .env("STRONGROOM_DATABASE_URL", url)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        all.push_str(&format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)));
        if !out.status.success() {
            return (false, all);
        }
    }
    (true, all)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sslmodes_against_a_server_that_requires_tls() {
    let Some(bin) = server_binaries("sslmodes_against_a_server_that_requires_tls") else { return };
    let good = ca("Strongroom test CA");
    let other = ca("Some other CA");
    let server_key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    params.distinguished_name.push(DnType::CommonName, "localhost");
    let server_cert = params.signed_by(&server_key, &good.cert, &good.key).unwrap();

    // TCP (hostssl rules): the one cluster of the tests that needs a port.
    let mut pg = PgInstance::init_tcp(
        &bin,
        &["ssl = on", "ssl_cert_file = 'server.crt'", "ssl_key_file = 'server.key'"],
        &["hostssl all all 127.0.0.1/32 trust", "hostnossl all all 127.0.0.1/32 reject"],
    );
    pg.add_private_file("server.crt", &server_cert.pem());
    pg.add_private_file("server.key", &server_key.serialize_pem());
    pg.start("");
    let files = tempfile::tempdir().unwrap();
    let good_ca = files.path().join("ca.pem");
    let other_ca = files.path().join("other.pem");
    std::fs::write(&good_ca, good.cert.pem()).unwrap();
    std::fs::write(&other_ca, other.cert.pem()).unwrap();
    let (good_ca, other_ca) = (good_ca.display().to_string(), other_ca.display().to_string());
    let port = pg.port;
    // `hostaddr` keeps the connection on 127.0.0.1 while `localhost` is the
    // name the certificate is checked against.
    let by_name = |q: &str| format!("postgres://postgres:not-a-real-password@localhost:{port}/postgres?hostaddr=127.0.0.1&{q}");
    let by_ip = |q: &str| format!("postgres://postgres@127.0.0.1:{port}/postgres?{q}");

    // verify-full with the right CA: encrypted.
    let version = tls_in_use(&by_name(&format!("sslmode=verify-full&sslrootcert={good_ca}"))).await.unwrap();
    assert!(version.as_deref().is_some_and(|v| v.starts_with("TLS")), "pg_stat_ssl says {version:?}");

    // The wrong CA fails, and says why.
    let err = tls_in_use(&by_name(&format!("sslmode=verify-full&sslrootcert={other_ca}"))).await.unwrap_err().to_string();
    assert!(err.contains("UnknownIssuer"), "wrong CA: {err}");
    // verify-ca with the wrong CA too.
    let err = tls_in_use(&by_name(&format!("sslmode=verify-ca&sslrootcert={other_ca}"))).await.unwrap_err().to_string();
    assert!(err.contains("UnknownIssuer"), "wrong CA under verify-ca: {err}");
    // No sslrootcert: the web PKI roots do not know the test's CA.
    let err = tls_in_use(&by_name("sslmode=verify-full")).await.unwrap_err().to_string();
    assert!(err.contains("UnknownIssuer"), "default roots: {err}");

    // The right CA but another name: verify-full refuses, verify-ca and require connect.
    let err = tls_in_use(&by_ip(&format!("sslmode=verify-full&sslrootcert={good_ca}"))).await.unwrap_err().to_string();
    assert!(err.contains("not valid for name"), "wrong host name: {err}");
    assert!(tls_in_use(&by_ip(&format!("sslmode=verify-ca&sslrootcert={good_ca}"))).await.unwrap().is_some());
    assert!(tls_in_use(&by_ip("sslmode=require")).await.unwrap().is_some());
    // require with a root file verifies the chain, as libpq does.
    let err = tls_in_use(&by_ip(&format!("sslmode=require&sslrootcert={other_ca}"))).await.unwrap_err().to_string();
    assert!(err.contains("UnknownIssuer"), "require with a root file: {err}");
    // prefer (the default) uses TLS when the server offers it.
    assert!(tls_in_use(&by_ip("")).await.unwrap().is_some());

    // disable: the server admits no plaintext connection.
    let err = tls_in_use(&by_ip("sslmode=disable")).await.unwrap_err().to_string();
    assert!(err.contains("no encryption") || err.contains("pg_hba.conf"), "plaintext: {err}");

    // The binary: migrations and an admin command over verify-full.
    let (ok, out) = admin_with(&by_name(&format!("sslmode=verify-full&sslrootcert={good_ca}")));
    assert!(ok, "admin over verify-full: {out}");
    assert!(pg.psql("SELECT count(*) FROM schema_migrations") != "0");
    // A wrong CA stops it with a clear message that holds no password.
    let (ok, out) = admin_with(&by_name(&format!("sslmode=verify-full&sslrootcert={other_ca}")));
    assert!(!ok, "admin with the wrong CA succeeded: {out}");
    assert!(out.contains("UnknownIssuer"), "{out}");
    assert!(!out.contains("not-a-real-password"), "the password leaked: {out}");
    pg.stop("fast");
}
