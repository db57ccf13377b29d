//! What a test may need from outside (PostgreSQL, a browser, SoftHSM2,
//! openssl), and the one rule for when it is missing: skip with a loud
//! message, or fail when `STRONGROOM_REQUIRE_ALL_TESTS=1` (CI sets it).

use std::hash::{BuildHasher as _, RandomState};
use std::time::Duration;

/// The test server's URL when `STRONGROOM_TEST_POSTGRES_URL` is not set.
pub const DEFAULT_POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// Whether a test that needs something from outside must fail rather than
/// skip when it is missing.
pub fn require_all() -> bool {
    std::env::var("STRONGROOM_REQUIRE_ALL_TESTS").is_ok_and(|v| v == "1")
}

/// Skips loudly, or fails under `STRONGROOM_REQUIRE_ALL_TESTS=1`.
pub fn skip(what: &str) {
    assert!(!require_all(), "{what} (STRONGROOM_REQUIRE_ALL_TESTS=1 forbids skipping)");
    eprintln!("\n!!! SKIPPED: {what} !!!\n");
}

/// The seed of a randomised test's run: the number the environment
/// variable `var` holds, to replay a run, or a fresh one. The test prints it
/// with `var`'s name, so that a red run can be replayed exactly.
pub fn seed(var: &str) -> u64 {
    match std::env::var(var) {
        Ok(v) => v.trim().parse().unwrap_or_else(|_| panic!("{var}={v:?} is not a seed (a number from 0 to 2^64 - 1)")),
        // The standard library's hasher keys are random (from the OS) and
        // differ from one `RandomState` to the next: a fresh seed.
        Err(_) => RandomState::new().hash_one(var),
    }
}

/// `STRONGROOM_TEST_POSTGRES_URL`, or [`DEFAULT_POSTGRES_URL`].
pub fn postgres_url() -> String {
    std::env::var("STRONGROOM_TEST_POSTGRES_URL").ok().filter(|u| !u.trim().is_empty()).unwrap_or_else(|| DEFAULT_POSTGRES_URL.to_owned())
}

/// The test PostgreSQL server's URL ([`postgres_url`]) when something
/// accepts connections at the host and port (or Unix socket) it names;
/// otherwise `None` after [`skip`] (which fails the test under
/// `STRONGROOM_REQUIRE_ALL_TESTS=1`). `test` names the test in the message.
pub fn pg_url_or_skip(test: &str) -> Option<String> {
    let url = postgres_url();
    match reachable(&url) {
        Ok(()) => Some(url),
        Err(why) => {
            skip(&format!("{test}: no PostgreSQL at {url} ({why}; set STRONGROOM_TEST_POSTGRES_URL)"));
            None
        }
    }
}

/// Whether any of the hosts `url` names accepts a connection within 2 s.
fn reachable(url: &str) -> Result<(), String> {
    let config: tokio_postgres::Config = url.parse().map_err(|e| format!("not a connection string: {e}"))?;
    let ports = config.get_ports();
    let port = |i: usize| ports.get(i).or(ports.first()).copied().unwrap_or(5432);
    let mut tried = Vec::new();
    for (i, host) in config.get_hosts().iter().enumerate() {
        let result = match host {
            tokio_postgres::config::Host::Tcp(name) => {
                let addrs = std::net::ToSocketAddrs::to_socket_addrs(&(name.as_str(), port(i))).map_err(|e| e.to_string());
                addrs.and_then(|mut a| {
                    let addr = a.next().ok_or("no address")?;
                    std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)).map(drop).map_err(|e| e.to_string())
                })
            }
            tokio_postgres::config::Host::Unix(dir) => {
                std::os::unix::net::UnixStream::connect(dir.join(format!(".s.PGSQL.{}", port(i)))).map(drop).map_err(|e| e.to_string())
            }
        };
        match result {
            Ok(()) => return Ok(()),
            Err(e) => tried.push(format!("{host:?}: {e}")),
        }
    }
    Err(if tried.is_empty() { "the connection string names no host".to_owned() } else { tried.join("; ") })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_goes_where_the_url_says() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        assert_eq!(reachable(&format!("postgres://u@127.0.0.1:{port}/db")), Ok(()));
        assert_eq!(reachable(&format!("host=127.0.0.1 port={port} user=u")), Ok(()));
        drop(listener);
        let dir = tempfile::tempdir().unwrap();
        let err = reachable(&format!("host={} port=5432 user=u", dir.path().display())).unwrap_err();
        assert!(err.contains(".s.PGSQL") || err.contains("No such file"), "{err}");
        let _socket = std::os::unix::net::UnixListener::bind(dir.path().join(".s.PGSQL.5432")).unwrap();
        assert_eq!(reachable(&format!("host={} port=5432 user=u", dir.path().display())), Ok(()));
        assert!(reachable("not a url at all ===").is_err());
    }
}
