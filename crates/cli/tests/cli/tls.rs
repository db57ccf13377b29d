//! `strongroom serve` with no options serves HTTPS with a self-signed
//! certificate it creates, prints its fingerprint, and reuses it.

use crate::process::Server;

#[tokio::test]
async fn default_serve_is_https_with_a_pinned_self_signed_certificate() {
    let server = Server::start(&[], &[]);
    let cert_path = server.data_dir.path().join("tls").join("cert.pem");
    let pem = std::fs::read(&cert_path).unwrap();
    assert!(server.output.lock().unwrap().contains("sha256="), "the fingerprint is printed");

    let cert = reqwest::Certificate::from_pem(&pem).unwrap();
    let trusting = reqwest::Client::builder().tls_built_in_root_certs(false).add_root_certificate(cert).build().unwrap();
    let r = trusting.get(format!("https://localhost:{}/healthz", server.port)).send().await.unwrap();
    assert_eq!(r.status(), 200);

    // A client that does not trust the certificate is refused.
    let strict = reqwest::Client::builder().tls_built_in_root_certs(false).build().unwrap();
    assert!(strict.get(format!("https://localhost:{}/healthz", server.port)).send().await.is_err());
    // Plain HTTP on the TLS port gets nothing useful.
    let plain = reqwest::Client::new();
    let r = plain.get(format!("http://127.0.0.1:{}/healthz", server.port)).send().await;
    assert!(r.is_err() || r.unwrap().status() != 200);

    // The key file is private.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(server.data_dir.path().join("tls").join("key.pem")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let mode = std::fs::metadata(server.data_dir.path().join("master.key")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let out = server.stop();
    assert!(out.contains("stopped"), "graceful shutdown is logged");
}
