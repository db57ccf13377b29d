//! The files `strongroom serve` keeps are private: the data directory 0700,
//! the database and its journal, the master key and the TLS key 0600; a
//! master key file others can open stops the server.
#![cfg(unix)]
#![allow(clippy::disallowed_methods)] // waits on a real process

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::process::{BIN, Server};

const PASSWORD: &str = "correct horse battery staple";

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())).permissions().mode() & 0o777
}

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn files_are_private_and_an_open_master_key_stops_serve() {
    let mut server = Server::start_in_new_dir(&[], &[]);
    let dir = server.dir.clone();
    // A write, through another process, while the server holds the database open.
    server.admin(&["users", "create", "alice"], &format!("{PASSWORD}\n"));
    assert_eq!(mode(&dir), 0o700, "data directory");
    assert_eq!(mode(&dir.join("tls")), 0o700, "tls directory");
    for f in ["strongroom.db", "strongroom.db-wal", "strongroom.db-shm", "master.key", "tls/key.pem"] {
        assert_eq!(mode(&dir.join(f)), 0o600, "{f}");
    }

    // An open master key file: serve refuses, names the file and the fix.
    server.kill();
    let key = dir.join("master.key");
    chmod(&key, 0o644);
    let mut child = Command::new(BIN)
        .arg("serve")
        .arg("--data-dir")
        .arg(&dir)
        .args(["--listen", "127.0.0.1:0"])
        .env_remove("STRONGROOM_MASTER_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("serve started with a master key readable by others");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "serve must exit non-zero: {stderr}");
    assert!(stderr.contains(&format!("chmod 600 {}", key.display())), "names the file and the fix: {stderr}");

    // Fixed key, and a database an older version left world-readable:
    // serve starts and tightens the database.
    chmod(&key, 0o600);
    chmod(&dir.join("strongroom.db"), 0o644);
    server.restart();
    assert_eq!(mode(&dir.join("strongroom.db")), 0o600);
    assert!(server.output.lock().unwrap().contains("now mode 600"), "the tightening is logged");
}
