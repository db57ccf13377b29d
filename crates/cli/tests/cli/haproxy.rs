//! The book's HAProxy recipe survives a replica crash: HAProxy runs the
//! configuration block of book/src/operations/replicas.md (its addresses, certificate and log
//! target replaced; a capture of the request id added, to join its log to
//! the client's view) in front of three replicas on PostgreSQL; under load,
//! one replica is SIGKILLed. No request may fail but those that replica was
//! answering at that moment, which HAProxy's own log names: they are counted
//! and reported. `/metrics` is refused on the public side.
//!
//! Needs HAProxy (`scripts/test` installs Debian's `haproxy`) and
//! PostgreSQL; skips loudly without them, and fails instead under
//! `STRONGROOM_REQUIRE_ALL_TESTS=1`. Real processes take real time:
//! sleeping is allowed here.
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::replicas::{Cluster, LENIENT, PASSWORD, SCOPE, USER, pg_url};
use strongroom_testkit::skip;

/// Clients sending requests at once.
const CLIENTS: usize = 6;
/// How long the load runs, and when into it the replica is killed.
const LOAD: Duration = Duration::from_secs(8);
const KILL_AT: Duration = Duration::from_millis(2500);

fn haproxy() -> Option<String> {
    let ok = Command::new("haproxy").arg("-v").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
    ok.then(|| "haproxy".to_owned())
}

/// The configuration block book/src/operations/replicas.md marks as the one this test runs,
/// without the list item's indentation.
fn readme_config() -> String {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../book/src/operations/replicas.md")).unwrap();
    let marker = readme.find("<!-- haproxy.cfg: crates/cli/tests/cli/haproxy.rs").expect("the book's HAProxy block has lost its marker");
    let rest = &readme[marker..];
    let open = rest.find("```\n").expect("no code block after the marker") + 4;
    let close = rest[open..].find("```").expect("the code block does not end") + open;
    rest[open..close].lines().map(|l| l.strip_prefix("   ").unwrap_or(l)).collect::<Vec<_>>().join("\n") + "\n"
}

/// `text` with `from` replaced by `to`, which must be there.
fn replaced(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "the book's HAProxy block no longer holds {from:?}:\n{text}");
    text.replace(from, to)
}

/// One request as the client saw it.
#[derive(Debug, Clone)]
struct Sent {
    id: String,
    started: Instant,
    ended: Instant,
    /// The status, or the transport error.
    outcome: Result<u16, String>,
}

/// One line of HAProxy's log: server, status and termination state, by request id.
#[derive(Debug, Clone)]
struct Logged {
    server: String,
    /// -1 when HAProxy sent no answer (it closed the connection).
    status: i32,
    termination: String,
    line: String,
}

fn parse_log(text: &str) -> BTreeMap<String, Logged> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(at) = words.iter().position(|w| w.starts_with("strongroom/")) else { continue };
        let Some(id) = words.iter().find_map(|w| w.strip_prefix('{').and_then(|w| w.strip_suffix('}'))) else { continue };
        let (Some(status), Some(term)) = (words.get(at + 2).and_then(|s| s.parse().ok()), words.get(at + 6)) else { continue };
        let server = words[at].trim_start_matches("strongroom/").to_owned();
        out.insert(id.to_owned(), Logged { server, status, termination: (*term).to_owned(), line: line.to_owned() });
    }
    out
}

struct Balancer {
    child: Child,
    log: Arc<Mutex<String>>,
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_readme_haproxy_recipe_loses_only_what_the_killed_replica_was_answering() {
    let Some(bin) = haproxy() else {
        skip("HAProxy is not installed (Debian package haproxy): the book's load-balancer recipe cannot be tested");
        return;
    };
    if pg_url("haproxy").is_none() {
        return;
    }
    let mut cluster = Cluster::start(3).await;
    cluster.fixtures();

    // HAProxy's certificate and the book's configuration, pointed at the replicas.
    let work = tempfile::tempdir().unwrap();
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let pem = work.path().join("haproxy.pem");
    std::fs::write(&pem, format!("{}{}", made.cert.pem(), made.key_pair.serialize_pem())).unwrap();
    let http = reqwest::Client::builder()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_der(made.cert.der()).unwrap())
        .timeout(Duration::from_secs(40))
        .build()
        .unwrap();
    // A port found free may be taken before HAProxy binds it: then another one.
    let mut up = None;
    for _ in 0..5 {
        let port = free_port();
        let mut cfg = readme_config();
        cfg = replaced(
            &cfg,
            "bind :443 ssl crt /etc/haproxy/vault.example.com.pem",
            &format!("bind 127.0.0.1:{port} ssl crt {}", pem.display()),
        );
        cfg = replaced(&cfg, "log /dev/log local0", "log stdout format raw local0");
        cfg = replaced(
            &cfg,
            "default_backend strongroom",
            "http-request capture req.hdr(X-Request-Id) len 64\n    default_backend strongroom",
        );
        for (i, replica) in cluster.replicas.iter().enumerate() {
            cfg = replaced(&cfg, &format!("10.0.0.1{}:8080", i + 1), &format!("127.0.0.1:{}", replica.port));
        }
        let cfg_path = work.path().join("haproxy.cfg");
        std::fs::write(&cfg_path, &cfg).unwrap();
        let check = Command::new(&bin).args(["-c", "-q", "-f"]).arg(&cfg_path).output().unwrap();
        let said = format!("{}{}", String::from_utf8_lossy(&check.stdout), String::from_utf8_lossy(&check.stderr));
        assert!(check.status.success(), "haproxy -c: {said}\n{cfg}");
        let mut child = Command::new(&bin)
            .args(["-db", "-f"])
            .arg(&cfg_path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        for pipe in [Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>, Box::new(child.stderr.take().unwrap())] {
            let log = log.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    let mut l = log.lock().unwrap();
                    l.push_str(&line);
                    l.push('\n');
                }
            });
        }
        let mut balancer = Balancer { child, log };
        let base = format!("https://localhost:{port}");
        let since = Instant::now();
        let answered = loop {
            if http.get(format!("{base}/health/ready")).send().await.is_ok_and(|r| r.status() == 200) {
                break true;
            }
            if balancer.child.try_wait().unwrap().is_some() || since.elapsed() > Duration::from_secs(20) {
                break false;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        if answered {
            up = Some((balancer, base));
            break;
        }
        let said = balancer.log.lock().unwrap().clone();
        assert!(said.contains("cannot bind socket"), "HAProxy did not start:\n{said}");
    }
    let (balancer, base) = up.expect("five ports were taken before HAProxy could bind them");
    // Metrics are not served on the public side, however the path is spelled.
    for path in ["/metrics", "//Metrics", "/METRICS/"] {
        assert_eq!(http.get(format!("{base}{path}")).send().await.unwrap().status(), 404, "{path}");
    }
    let t = crate::process::Api::with(http.clone(), base.clone()).password_grant(LENIENT, USER, PASSWORD, SCOPE).await;
    let access = crate::process::TokensExt::access(&t).to_owned();

    // The load: clients verifying the token through the balancer, without pause.
    let sent = Arc::new(Mutex::new(Vec::<Sent>::new()));
    let load_start = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        let (http, base, access, sent) = (http.clone(), base.clone(), access.clone(), sent.clone());
        tasks.push(tokio::spawn(async move {
            let mut n = 0;
            while load_start.elapsed() < LOAD {
                n += 1;
                let id = format!("c{c}-{n}");
                let started = Instant::now();
                let r = http.get(format!("{base}/vedauth/authorize/verify")).bearer_auth(&access).header("x-request-id", &id).send().await;
                let outcome = match r {
                    Ok(r) => {
                        let status = r.status().as_u16();
                        let _ = r.bytes().await;
                        Ok(status)
                    }
                    Err(e) => {
                        let mut text = e.to_string();
                        let mut cause = std::error::Error::source(&e);
                        while let Some(c) = cause {
                            text.push_str(&format!(": {c}"));
                            cause = c.source();
                        }
                        Err(text)
                    }
                };
                sent.lock().unwrap().push(Sent { id, started, ended: Instant::now(), outcome });
            }
        }));
    }
    tokio::time::sleep(KILL_AT).await;
    // Between these two instants the replica dies (SIGKILL, then reaped).
    let killed_at = Instant::now();
    cluster.replicas[1].kill();
    let dead_at = Instant::now();
    for t in tasks {
        t.await.unwrap();
    }
    // Let HAProxy write its last lines, then read them.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let log_text = balancer.log.lock().unwrap().clone();
    drop(balancer);
    let logged = parse_log(&log_text);
    let sent = sent.lock().unwrap().clone();

    let total = sent.len();
    let failed: Vec<&Sent> = sent.iter().filter(|s| s.outcome != Ok(200)).collect();
    let after_kill = sent.iter().filter(|s| s.started > dead_at && s.outcome == Ok(200)).count();
    let by_server = |name: &str| logged.values().filter(|l| l.server == name).count();
    let in_flight: Vec<(&Sent, Option<&Logged>)> = failed.iter().map(|s| (*s, logged.get(&s.id))).collect();
    eprintln!(
        "haproxy: {total} requests through the book's configuration; {} failed, all in flight on replica r2 when it was \
         killed; {after_kill} answered after the kill; answered by r1 {}, r2 {}, r3 {}; the failures: {:?}",
        failed.len(),
        by_server("r1"),
        by_server("r2"),
        by_server("r3"),
        in_flight.iter().map(|(s, l)| (s.id.as_str(), s.outcome.clone(), l.map(|l| l.line.as_str()))).collect::<Vec<_>>()
    );
    assert!(total > 100, "too little load to mean anything: {total} requests");
    assert!(by_server("r2") > 0 && by_server("r1") > 0 && by_server("r3") > 0, "every replica served:\n{log_text}");
    assert!(after_kill > 50, "the survivors kept answering: {after_kill}");
    // The survivors answered every request HAProxy sent them.
    let survivors_failed: Vec<&Logged> = logged.values().filter(|l| l.server != "r2" && l.status != 200 && l.status != -1).collect();
    assert!(survivors_failed.is_empty(), "r1 or r3 failed: {survivors_failed:?}");
    for (s, l) in &in_flight {
        // In flight when r2 died: sent before it was dead, unanswered when it was killed.
        assert!(s.started < dead_at && s.ended > killed_at, "{} failed but was not in flight at the kill: {s:?} {l:?}", s.id);
        match l {
            // HAProxy answered (502): its log puts it on r2, cut off by the server.
            Some(l) => {
                assert_eq!(l.server, "r2", "{} failed on a replica that was not killed: {}", s.id, l.line);
                assert!(l.termination.starts_with('S'), "{} was not cut off by the server: {}", s.id, l.line);
            }
            // Sent on a kept-alive connection whose server connection died
            // under it: HAProxy closes the client's connection without an
            // answer (`http-reuse safe`: "the browser can decide to silently
            // retry it") and logs nothing.
            None => {
                let e = s.outcome.as_ref().err().map_or("", String::as_str);
                assert!(e.contains("connection closed before message completed"), "{}: {e}", s.id);
            }
        }
    }
    assert!(failed.len() <= CLIENTS, "more failures than requests that can be in flight at once: {}", failed.len());
    // HAProxy's log to a pipe drops lines when the pipe is full: it names
    // the server where it has a line, and timing decides the rest.
    let unlogged = sent.iter().filter(|s| !logged.contains_key(&s.id)).count();
    eprintln!("haproxy: its log holds {} of {total} requests", total - unlogged);
    drop(cluster);
}

/// A port for HAProxy to bind: HAProxy is another program and takes a port
/// number, so one found free is named; the caller tries another when HAProxy
/// could not bind it (another test took it meanwhile).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}
