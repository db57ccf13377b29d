//! PostgreSQL servers owned by a test: `initdb` into a temporary directory,
//! its own port on 127.0.0.1, started and stopped with `pg_ctl`, run as the
//! `postgres` user when the test runs as root. Dropping an instance stops
//! its server (immediately) and removes its directory, also after a failed
//! assertion. Waiting on real processes takes real time: sleeping is
//! allowed here.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::process::free_port;

/// The directory of the PostgreSQL server binaries (`initdb`, `pg_ctl`,
/// `pg_basebackup`), newest version first; `None` after a loud message when
/// they are missing and skipping is allowed. Fails the test under
/// `STRONGROOM_REQUIRE_ALL_TESTS=1`.
pub fn server_binaries(test: &str) -> Option<PathBuf> {
    let mut dirs: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse::<u32>().ok()?, e.path().join("bin"))))
        .filter(|(_, bin)| ["initdb", "pg_ctl", "pg_basebackup"].iter().all(|b| bin.join(b).is_file()))
        .collect();
    dirs.sort();
    if let Some((_, bin)) = dirs.pop() {
        return Some(bin);
    }
    if std::env::var("STRONGROOM_REQUIRE_ALL_TESTS").is_ok_and(|v| v == "1") {
        panic!("{test}: the PostgreSQL server binaries (initdb, pg_ctl, pg_basebackup) are required but not in /usr/lib/postgresql/*/bin");
    }
    eprintln!("\n!!! SKIPPED {test}: no PostgreSQL server binaries in /usr/lib/postgresql/*/bin (apt-get install postgresql) !!!\n");
    None
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Runs a PostgreSQL program (as `postgres` when we are root: the server
/// refuses to run as root).
fn pg_command(bin: &Path, program: &str) -> Command {
    if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(bin.join(program));
        c
    } else {
        Command::new(bin.join(program))
    }
}

fn run(mut c: Command) -> Output {
    let out = c.stdin(Stdio::null()).output().unwrap();
    assert!(out.status.success(), "{c:?} failed: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    out
}

/// One PostgreSQL server in a temporary directory.
pub struct PgInstance {
    bin: PathBuf,
    /// Holds `data/`, the log and any files the test adds; removed on drop.
    pub root: tempfile::TempDir,
    pub port: u16,
    running: bool,
}

impl PgInstance {
    /// A new cluster (trust authentication for the `postgres` user),
    /// configured with `conf` lines and `hba` lines, not started.
    pub fn init(bin: &Path, conf: &[&str], hba: &[&str]) -> PgInstance {
        let root = tempfile::Builder::new().prefix("strongroom-pg-").tempdir().unwrap();
        let inst = PgInstance { bin: bin.to_owned(), root, port: free_port(), running: false };
        inst.give_to_postgres(inst.root.path());
        let mut c = pg_command(bin, "initdb");
        c.args(["-D"]).arg(inst.data()).args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions"]);
        run(c);
        inst.configure(conf, hba);
        inst
    }

    /// A hot standby of `primary` (`pg_basebackup -R`), not started.
    pub fn standby_of(primary: &PgInstance, conf: &[&str]) -> PgInstance {
        let root = tempfile::Builder::new().prefix("strongroom-pg-").tempdir().unwrap();
        let inst = PgInstance { bin: primary.bin.clone(), root, port: free_port(), running: false };
        inst.give_to_postgres(inst.root.path());
        let mut c = pg_command(&inst.bin, "pg_basebackup");
        c.args(["-h", "127.0.0.1", "-p", &primary.port.to_string(), "-U", "postgres", "-D"]).arg(inst.data()).args([
            "-R",
            "-X",
            "stream",
            "--no-sync",
            "-c",
            "fast",
        ]);
        run(c);
        // The copy carries the primary's settings; the last `port` line wins.
        let socket_dir = format!("unix_socket_directories = '{}'", inst.root.path().display());
        inst.append("postgresql.conf", &[&format!("port = {}", inst.port), &socket_dir, "hot_standby = on"]);
        inst.append("postgresql.conf", conf);
        inst
    }

    fn give_to_postgres(&self, path: &Path) {
        if is_root() {
            run({
                let mut c = Command::new("chown");
                c.args(["-R", "postgres:postgres"]).arg(path);
                c
            });
        }
    }

    pub fn data(&self) -> PathBuf {
        self.root.path().join("data")
    }

    fn append(&self, file: &str, lines: &[&str]) {
        use std::io::Write as _;
        let mut f = std::fs::OpenOptions::new().append(true).open(self.data().join(file)).unwrap();
        for l in lines {
            writeln!(f, "{l}").unwrap();
        }
    }

    fn configure(&self, conf: &[&str], hba: &[&str]) {
        let socket_dir = self.root.path().display().to_string();
        self.append(
            "postgresql.conf",
            &[
                "listen_addresses = '127.0.0.1'",
                &format!("port = {}", self.port),
                &format!("unix_socket_directories = '{socket_dir}'"),
                "max_connections = 40",
                "shared_buffers = 16MB",
                "logging_collector = off",
            ],
        );
        self.append("postgresql.conf", conf);
        // Only the test's rules: local socket for pg_ctl, then `hba`.
        std::fs::write(self.data().join("pg_hba.conf"), format!("local all all trust\n{}\n", hba.join("\n"))).unwrap();
        self.give_to_postgres(&self.data());
    }

    /// Writes `contents` to `name` in the data directory, private to the server.
    pub fn add_private_file(&self, name: &str, contents: &str) {
        let path = self.data().join(name);
        std::fs::write(&path, contents).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        self.give_to_postgres(&path);
    }

    /// Starts the server and waits until it accepts connections; `options`
    /// are extra `postgres` command-line settings (`-c name=value`), which
    /// a standby copied from this instance does not inherit.
    pub fn start(&mut self, options: &str) {
        let mut c = pg_command(&self.bin, "pg_ctl");
        c.arg("-D").arg(self.data()).arg("-l").arg(self.root.path().join("server.log")).args(["-w", "-t", "60", "-o", options, "start"]);
        let out = c.stdin(Stdio::null()).output().unwrap();
        self.running = true;
        assert!(out.status.success(), "pg_ctl start failed: {}\nlog:\n{}", String::from_utf8_lossy(&out.stderr), self.log());
    }

    /// Stops the server: `fast` (clean) or `immediate` (as if it crashed).
    pub fn stop(&mut self, mode: &str) {
        if !self.running {
            return;
        }
        let mut c = pg_command(&self.bin, "pg_ctl");
        c.arg("-D").arg(self.data()).args(["-m", mode, "-w", "-t", "60", "stop"]);
        let _ = c.stdin(Stdio::null()).output();
        self.running = false;
    }

    /// Promotes a standby and waits until it accepts writes.
    pub fn promote(&self) {
        let mut c = pg_command(&self.bin, "pg_ctl");
        c.arg("-D").arg(self.data()).args(["-w", "-t", "60", "promote"]);
        run(c);
    }

    /// Runs `sql` with psql over TCP (plain, as the hba allows) and returns its unaligned output.
    pub fn psql(&self, sql: &str) -> String {
        let mut c = pg_command(&self.bin, "psql");
        c.args(["-h", &self.root.path().display().to_string(), "-p", &self.port.to_string(), "-U", "postgres", "-d", "postgres"]).args([
            "-v",
            "ON_ERROR_STOP=1",
            "-Atc",
            sql,
        ]);
        String::from_utf8_lossy(&run(c).stdout).trim().to_owned()
    }

    /// Waits until `sql` answers `expected` (bounded).
    pub fn wait_for(&self, sql: &str, expected: &str) {
        let start = Instant::now();
        loop {
            if self.psql(sql) == expected {
                return;
            }
            assert!(start.elapsed() < Duration::from_secs(60), "{sql} never answered {expected}; log:\n{}", self.log());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.root.path().join("server.log")).unwrap_or_default()
    }
}

/// A started instance that trusts TCP connections from 127.0.0.1, and the
/// URL a server connects to it with.
pub async fn trusting_local_tcp(bin: PathBuf) -> (PgInstance, String) {
    let pg = tokio::task::spawn_blocking(move || {
        let mut pg = PgInstance::init(&bin, &[], &["host all all 127.0.0.1/32 trust"]);
        pg.start("");
        pg
    })
    .await
    .unwrap();
    let url = format!("postgres://postgres@127.0.0.1:{}/postgres?connect_timeout=5", pg.port);
    (pg, url)
}

impl Drop for PgInstance {
    fn drop(&mut self) {
        self.stop("immediate");
    }
}
