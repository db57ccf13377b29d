//! node-oidc-provider (npm, pinned in `crates/testkit/oidc/package-lock.json`)
//! as an OpenID provider a test starts on 127.0.0.1: its development
//! sign-in pages take any name and password, one confidential client.
//! `scripts/test` installs it into `${XDG_CACHE_HOME:-~/.cache}/strongroom/oidc-provider`
//! (`npm ci`, outside the clone); without it the test skips (or fails under
//! `STRONGROOM_REQUIRE_ALL_TESTS=1`).

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::env::skip;

/// Where `scripts/test` installs the provider.
pub fn install_dir() -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache"));
    cache.join("strongroom").join("oidc-provider")
}

/// A running provider.
#[derive(Debug)]
pub struct OidcProvider {
    pub addr: SocketAddr,
    child: Child,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl OidcProvider {
    /// A free port for the provider, chosen before the server it redirects to starts.
    pub fn free_port() -> u16 {
        TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
    }

    /// Starts the provider on `port` for client `client_id` with `secret`,
    /// redirecting to `redirect_uri`; `None` (skipped) without node or the install.
    pub fn start(port: u16, redirect_uri: &str, client_id: &str, secret: &str, test: &str) -> Option<OidcProvider> {
        let dir = install_dir();
        if !dir.join("node_modules/oidc-provider").exists() || Command::new("node").arg("--version").output().is_err() {
            skip(&format!("{test}: node-oidc-provider is not installed in {} (scripts/test installs it with npm ci)", dir.display()));
            return None;
        }
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/oidc/provider.mjs");
        // The script is run from the install, so that `import 'oidc-provider'` finds its modules.
        std::fs::copy(script, dir.join("provider.mjs")).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("provider.log");
        let out = std::fs::File::create(&log).unwrap();
        let child = Command::new("node")
            .current_dir(&dir)
            .args(["provider.mjs", &port.to_string(), redirect_uri, client_id, secret])
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let p = OidcProvider { addr, child, log, _dir: tmp };
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            assert!(Instant::now() < deadline, "the OIDC provider did not start: {}", p.log());
            #[allow(clippy::disallowed_methods)] // Waits on a real child process.
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(p)
    }

    pub fn issuer(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for OidcProvider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
