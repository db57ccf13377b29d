//! SIGHUP reloads the TLS certificate and key: a good new pair serves new
//! connections and the log says so; a bad one (not PEM, or a key that does
//! not fit the certificate) leaves the pair in use serving, and the log
//! says why.
#![allow(clippy::disallowed_methods)]

use std::process::Command;
use std::time::{Duration, Instant};

use crate::process::Server;

/// A self-signed certificate for localhost: (certificate PEM, key PEM, certificate DER).
fn pair() -> (String, String, Vec<u8>) {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
    (made.cert.pem(), made.key_pair.serialize_pem(), made.cert.der().to_vec())
}

/// The certificate a new connection is shown.
async fn presented(port: u16) -> Vec<u8> {
    let http = reqwest::Client::builder().danger_accept_invalid_certs(true).tls_info(true).pool_max_idle_per_host(0).build().unwrap();
    let r = http.get(format!("https://127.0.0.1:{port}/health/live")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    r.extensions().get::<reqwest::tls::TlsInfo>().and_then(|t| t.peer_certificate()).unwrap().to_vec()
}

fn hangup(server: &Server) {
    assert!(Command::new("kill").args(["-HUP", &server.pid().to_string()]).status().unwrap().success());
}

/// Waits until `text` appears in the server's output `n` times.
fn logged(server: &Server, text: &str, n: usize) -> String {
    let started = Instant::now();
    loop {
        let out = server.output.lock().unwrap().clone();
        if out.matches(text).count() >= n {
            return out;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "{text:?} not logged {n} times:\n{out}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reloads_a_good_pair_and_keeps_serving_on_a_bad_one() {
    let files = tempfile::tempdir().unwrap();
    let (cert, key) = (files.path().join("cert.pem"), files.path().join("key.pem"));
    let (first_pem, first_key, first_der) = pair();
    std::fs::write(&cert, &first_pem).unwrap();
    std::fs::write(&key, &first_key).unwrap();
    let env = [("STRONGROOM_TLS_CERT", cert.to_str().unwrap()), ("STRONGROOM_TLS_KEY", key.to_str().unwrap())];
    let server = Server::start(&[], &env);
    assert_eq!(presented(server.port).await, first_der);

    // A good new pair: new connections get it.
    let (second_pem, second_key, second_der) = pair();
    std::fs::write(&cert, &second_pem).unwrap();
    std::fs::write(&key, &second_key).unwrap();
    hangup(&server);
    let out = logged(&server, "SIGHUP: TLS certificate reloaded", 1);
    assert_eq!(presented(server.port).await, second_der, "{out}");

    // Not PEM at all: the second pair stays, and the log says why.
    std::fs::write(&cert, "this is not a certificate\n").unwrap();
    hangup(&server);
    let out = logged(&server, "the TLS certificate was not reloaded; the one in use stays", 1);
    assert!(out.contains("holds no certificate"), "{out}");
    assert_eq!(presented(server.port).await, second_der);

    // A key that does not fit the certificate.
    let (third_pem, _, _) = pair();
    std::fs::write(&cert, &third_pem).unwrap();
    std::fs::write(&key, &first_key).unwrap();
    hangup(&server);
    let out = logged(&server, "the TLS certificate was not reloaded; the one in use stays", 2);
    assert_eq!(presented(server.port).await, second_der, "{out}");
    // The process is still the same one, and stops cleanly.
    let out = server.stop();
    assert!(!out.contains("panicked"), "{out}");
}
