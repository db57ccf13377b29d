//! K1 (slow and idle connections must not starve others) and K2 (TLS
//! versions and cipher suites offered): ids beyond the security list's
//! A1-I4, added for the server's hardening.
#![allow(clippy::disallowed_methods)] // waits on real processes and sockets

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::support::{Fx, Server, report, skip};

/// Connections held by the attacker in each mode.
const IDLE: usize = 150;
const SLOW: usize = 150;
/// TLS sessions that complete the handshake and then say nothing.
const HANDSHAKEN: usize = 20;
/// The longest the attacker holds a connection.
const HOLD: Duration = Duration::from_secs(30);

/// Opens a connection that sends nothing; returns when the server closed it
/// (or `HOLD` passed).
async fn idle(port: u16) -> Option<Duration> {
    let start = Instant::now();
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.ok()?;
    let mut buf = [0u8; 256];
    match tokio::time::timeout(HOLD, async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    {
        Ok(()) => Some(start.elapsed()),
        Err(_) => None,
    }
}

/// Slow loris: a request line, then one header byte every second.
async fn slow(port: u16) -> Option<Duration> {
    let start = Instant::now();
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.ok()?;
    if s.write_all(b"POST /vedauth/authorize/token HTTP/1.1\r\nHost: 127.0.0.1\r\n").await.is_err() {
        return Some(start.elapsed());
    }
    let mut buf = [0u8; 256];
    while start.elapsed() < HOLD {
        if s.write_all(b"X").await.is_err() {
            return Some(start.elapsed());
        }
        if let Ok(r) = tokio::time::timeout(Duration::from_secs(1), s.read(&mut buf)).await {
            match r {
                Ok(0) | Err(_) => return Some(start.elapsed()),
                Ok(_) => {}
            }
        }
    }
    None
}

async fn attack(fx: &Fx, tls: bool) -> (usize, usize, usize, f64, usize, usize) {
    let port = fx.server.port;
    let mut tasks = Vec::new();
    for _ in 0..IDLE {
        tasks.push(tokio::spawn(idle(port)));
    }
    if !tls {
        for _ in 0..SLOW {
            tasks.push(tokio::spawn(slow(port)));
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    // A normal client meanwhile: fresh connections, a request every 250 ms.
    let (mut ok, mut total) = (0, 0);
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(12) {
        let http = fx.client();
        total += 1;
        if let Ok(r) = http.get(format!("{}/healthz", fx.base)).send().await {
            ok += usize::from(r.status() == 200);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let mut closed = Vec::new();
    let mut open = 0;
    for t in tasks {
        match t.await.unwrap() {
            Some(d) => closed.push(d.as_secs_f64()),
            None => open += 1,
        }
    }
    let max = closed.iter().cloned().fold(0.0, f64::max);
    (ok, total, closed.len(), max, open, if tls { IDLE } else { IDLE + SLOW })
}

impl Fx {
    fn client(&self) -> reqwest::Client {
        let mut b = reqwest::Client::builder().timeout(Duration::from_secs(5));
        if self.base.starts_with("https") {
            let pem = std::fs::read(self.server.dir.join("tls").join("cert.pem")).unwrap();
            b = b.tls_built_in_root_certs(false).add_root_certificate(reqwest::Certificate::from_pem(&pem).unwrap());
        }
        b.build().unwrap()
    }
}

/// The plain-HTTP server and the TLS one are attacked at the same time (two
/// processes, each with its own normal client), so the test takes one
/// read timeout's worth of waiting, not two.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k1_slow_and_idle_connections() {
    let fx = Fx::start(&[], &[]);
    let server = Server::start(&[], &[]);
    let mut tls = Fx::around(server);
    tls.base = format!("https://localhost:{}", tls.server.port);
    // Completed TLS handshakes that then send nothing: openssl s_client
    // with an open, silent standard input.
    let mut handshaken: Vec<std::process::Child> = (0..HANDSHAKEN)
        .filter_map(|_| {
            Command::new("openssl")
                .args(["s_client", "-quiet", "-connect", &format!("127.0.0.1:{}", tls.server.port)])
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .ok()
        })
        .collect();
    let ((ok, total, closed, max, open, n), (tok, ttotal, tclosed, tmax, topen, tn)) = tokio::join!(attack(&fx, false), attack(&tls, true));
    let plain = format!(
        "plain HTTP, {IDLE} idle + {SLOW} slow-loris connections held up to {}s: normal client {ok}/{total} ok; server closed {closed}/{n} (last after {max:.1} s), {open} still open",
        HOLD.as_secs()
    );
    let plain_ok = ok == total && open == 0;
    let started = Instant::now();
    let mut after_handshake_closed = 0;
    while started.elapsed() < HOLD && after_handshake_closed < handshaken.len() {
        after_handshake_closed = handshaken.iter_mut().map(|c| usize::from(c.try_wait().ok().flatten().is_some())).sum();
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let after_handshake_open = handshaken.len() - after_handshake_closed;
    for c in &mut handshaken {
        let _ = c.kill();
        let _ = c.wait();
    }
    let tls_line = format!(
        "TLS, {IDLE} connections that never send a ClientHello: normal client {tok}/{ttotal} ok; server closed {tclosed}/{tn} (last after {tmax:.1} s), {topen} still open; {} sessions silent after the handshake (openssl s_client): {after_handshake_open} still open after {}s",
        handshaken.len(),
        HOLD.as_secs()
    );
    let ok = report(
        "K1",
        "slow and idle connections",
        &format!("{plain}; {tls_line}"),
        plain_ok && tok == ttotal && topen == 0 && after_handshake_open == 0,
    );
    assert!(ok, "K1");
}

/// `openssl s_client` against the port with `args`: the negotiated
/// protocol and cipher, or `None` when the handshake failed.
fn s_client(port: u16, args: &[&str]) -> Option<(String, String)> {
    let out = Command::new("openssl")
        .args(["s_client", "-connect", &format!("127.0.0.1:{port}"), "-servername", "localhost"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = text.lines().find(|l| l.contains("Cipher is"))?;
    let cipher = line.rsplit(' ').next()?.trim().to_owned();
    if cipher == "(NONE)" || cipher == "0000" {
        return None;
    }
    let proto = line.split(',').nth(1).map(|p| p.trim().to_owned()).unwrap_or_default();
    Some((proto, cipher))
}

fn openssl_list(args: &[&str]) -> Vec<String> {
    let out = Command::new("openssl").args(args).output().unwrap();
    String::from_utf8_lossy(&out.stdout).split([':', '\n']).map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect()
}

#[test]
fn k2_tls_versions_and_ciphers() {
    if Command::new("openssl").arg("version").output().is_err() {
        skip("openssl is not installed: cannot enumerate TLS versions and ciphers");
        return;
    }
    let server = Server::start(&[], &[]);
    let port = server.port;
    let low = "DEFAULT:@SECLEVEL=0";
    let old: Vec<String> = [("TLSv1.0", "-tls1"), ("TLSv1.1", "-tls1_1")]
        .iter()
        .filter(|(_, f)| s_client(port, &[f, "-cipher", low]).is_some())
        .map(|(n, _)| (*n).to_owned())
        .collect();
    let tls12: Vec<String> = openssl_list(&["ciphers", "-tls1_2", "ALL:COMPLEMENTOFALL:@SECLEVEL=0"])
        .into_iter()
        .filter(|c| !c.starts_with("TLS_"))
        .filter(|c| s_client(port, &["-tls1_2", "-cipher", &format!("{c}:@SECLEVEL=0")]).is_some())
        .collect();
    let tls13: Vec<String> = [
        "TLS_AES_128_GCM_SHA256",
        "TLS_AES_256_GCM_SHA384",
        "TLS_CHACHA20_POLY1305_SHA256",
        "TLS_AES_128_CCM_SHA256",
        "TLS_AES_128_CCM_8_SHA256",
    ]
    .iter()
    .filter(|c| s_client(port, &["-tls1_3", "-ciphersuites", c]).is_some())
    .map(|c| (*c).to_owned())
    .collect();
    let weak: Vec<&String> = tls12.iter().filter(|c| !(c.starts_with("ECDHE-") && (c.contains("GCM") || c.contains("CHACHA20")))).collect();
    drop(server);
    let ok = report(
        "K2",
        "TLS versions and cipher suites",
        &format!(
            "TLS 1.0/1.1 accepted: {old:?}; TLS 1.2 suites accepted: {tls12:?}; TLS 1.3 suites accepted: {tls13:?}; non-ECDHE or non-AEAD suites: {}",
            weak.len()
        ),
        old.is_empty() && !tls12.is_empty() && !tls13.is_empty() && weak.is_empty(),
    );
    assert!(ok, "K2");
}
