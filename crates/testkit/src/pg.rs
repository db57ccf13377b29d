//! PostgreSQL servers owned by a test: `initdb` into a temporary directory,
//! started and stopped with `pg_ctl`, run as the `postgres` user when the
//! test runs as root. By default a cluster listens on a Unix socket in its
//! own directory only (no TCP port to race another test for); a test that
//! needs TCP (TLS to the database) asks for it with [`PgInstance::init_tcp`],
//! whose port is tried at start and replaced when another process holds it.
//! Dropping an instance stops its server (immediately) and removes its
//! directory, also after a failed assertion. Waiting on real processes takes
//! real time: sleeping is allowed here.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::env::skip;

/// The port number in the socket's file name (`.s.PGSQL.5432`): the
/// directory is the cluster's own, so the number is never contended.
const SOCKET_PORT: u16 = 5432;

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
    skip(&format!(
        "{test}: no PostgreSQL server binaries (initdb, pg_ctl, pg_basebackup) in /usr/lib/postgresql/*/bin (apt-get install postgresql)"
    ));
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

/// A TCP port to try for a cluster's `listen_addresses = '127.0.0.1'`: one
/// of the registered range, spread by process id and a counter so tests
/// running at once start apart. PostgreSQL holds it once it has started.
fn candidate_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = std::process::id().wrapping_mul(7919).wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed).wrapping_mul(104_729));
    // 20000..32000: below Linux's ephemeral range, where clients' ports come from.
    20_000 + u16::try_from(n % 12_000).unwrap()
}

/// One PostgreSQL server in a temporary directory.
#[derive(Debug)]
pub struct PgInstance {
    bin: PathBuf,
    /// Holds `data/`, the server's socket, its log and any files the test
    /// adds; removed on drop.
    pub root: tempfile::TempDir,
    /// The TCP port on 127.0.0.1 ([`PgInstance::init_tcp`]), or the number
    /// in the socket's name (Unix socket only).
    pub port: u16,
    tcp: bool,
    running: bool,
}

impl PgInstance {
    /// A new cluster on a Unix socket in its directory only (trust
    /// authentication for every local connection, replication included),
    /// configured with `conf` lines and `hba` lines, not started.
    pub fn init(bin: &Path, conf: &[&str], hba: &[&str]) -> PgInstance {
        Self::make(bin, conf, hba, false)
    }

    /// Like [`PgInstance::init`], listening on 127.0.0.1 too, for a test
    /// that needs TCP (`hostssl` rules); its port is chosen at
    /// [`PgInstance::start`].
    pub fn init_tcp(bin: &Path, conf: &[&str], hba: &[&str]) -> PgInstance {
        Self::make(bin, conf, hba, true)
    }

    fn make(bin: &Path, conf: &[&str], hba: &[&str], tcp: bool) -> PgInstance {
        let root = tempfile::Builder::new().prefix("strongroom-pg-").tempdir().unwrap();
        let port = if tcp { candidate_port() } else { SOCKET_PORT };
        let inst = PgInstance { bin: bin.to_owned(), root, port, tcp, running: false };
        inst.give_to_postgres(inst.root.path());
        let mut c = pg_command(bin, "initdb");
        c.args(["-D"]).arg(inst.data()).args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions"]);
        run(c);
        inst.configure(conf, hba);
        inst
    }

    /// A hot standby of `primary` (`pg_basebackup -R` over the primary's
    /// socket), on a socket of its own, not started.
    pub fn standby_of(primary: &PgInstance, conf: &[&str]) -> PgInstance {
        let root = tempfile::Builder::new().prefix("strongroom-pg-").tempdir().unwrap();
        let inst = PgInstance { bin: primary.bin.clone(), root, port: SOCKET_PORT, tcp: false, running: false };
        inst.give_to_postgres(inst.root.path());
        let mut c = pg_command(&inst.bin, "pg_basebackup");
        c.args(["-h", &primary.socket_dir(), "-p", &primary.socket_port().to_string(), "-U", "postgres", "-D"]).arg(inst.data()).args([
            "-R",
            "-X",
            "stream",
            "--no-sync",
            "-c",
            "fast",
        ]);
        run(c);
        // The copy carries the primary's settings; the last line of each wins.
        let socket_dir = format!("unix_socket_directories = '{}'", inst.socket_dir());
        inst.append("postgresql.conf", &["listen_addresses = ''", &format!("port = {}", inst.port), &socket_dir, "hot_standby = on"]);
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

    /// The directory of the server's Unix socket.
    pub fn socket_dir(&self) -> String {
        self.root.path().display().to_string()
    }

    /// The port number of the socket's file name (the TCP port too, on a
    /// TCP cluster).
    pub fn socket_port(&self) -> u16 {
        self.port
    }

    /// The socket's path, for a test that connects to it directly.
    pub fn socket_path(&self) -> PathBuf {
        self.root.path().join(format!(".s.PGSQL.{}", self.port))
    }

    /// `host=SOCKET_DIR port=N user=postgres dbname=postgres`, and `extra`
    /// (`key=value` words): a connection string over the socket.
    pub fn socket_url(&self, extra: &str) -> String {
        format!("host={} port={} user=postgres dbname=postgres {extra}", self.socket_dir(), self.port).trim_end().to_owned()
    }

    fn append(&self, file: &str, lines: &[&str]) {
        use std::io::Write as _;
        let mut f = std::fs::OpenOptions::new().append(true).open(self.data().join(file)).unwrap();
        for l in lines {
            writeln!(f, "{l}").unwrap();
        }
    }

    fn configure(&self, conf: &[&str], hba: &[&str]) {
        let listen = if self.tcp { "listen_addresses = '127.0.0.1'" } else { "listen_addresses = ''" };
        self.append(
            "postgresql.conf",
            &[
                listen,
                &format!("port = {}", self.port),
                &format!("unix_socket_directories = '{}'", self.socket_dir()),
                "max_connections = 40",
                "shared_buffers = 16MB",
                "logging_collector = off",
            ],
        );
        self.append("postgresql.conf", conf);
        // Only the test's rules after the local socket's own (pg_ctl, psql,
        // the store, and streaming replication on the socket).
        std::fs::write(self.data().join("pg_hba.conf"), format!("local all all trust\nlocal replication all trust\n{}\n", hba.join("\n")))
            .unwrap();
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
    /// are extra `postgres` command-line settings (`-c name=value`), which a
    /// standby copied from this instance does not inherit. A TCP cluster
    /// whose port another process holds is started again on another port
    /// (`self.port`), up to ten times.
    pub fn start(&mut self, options: &str) {
        for _ in 0..10 {
            let mut c = pg_command(&self.bin, "pg_ctl");
            let before = self.log().len();
            c.arg("-D")
                .arg(self.data())
                .arg("-l")
                .arg(self.root.path().join("server.log"))
                .args(["-w", "-t", "60", "-o", options, "start"]);
            let out = c.stdin(Stdio::null()).output().unwrap();
            self.running = true;
            if out.status.success() {
                return;
            }
            let log = self.log();
            if self.tcp && log.get(before..).is_some_and(|new| new.contains("could not bind")) {
                self.port = candidate_port();
                self.append("postgresql.conf", &[&format!("port = {}", self.port)]);
                continue;
            }
            panic!("pg_ctl start failed: {}\nlog:\n{log}", String::from_utf8_lossy(&out.stderr));
        }
        panic!("pg_ctl start: ten ports in a row were taken; log:\n{}", self.log());
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

    /// Runs `sql` with psql over the Unix socket and returns its unaligned output.
    pub fn psql(&self, sql: &str) -> String {
        let mut c = pg_command(&self.bin, "psql");
        c.args(["-h", &self.socket_dir(), "-p", &self.port.to_string(), "-U", "postgres", "-d", "postgres"]).args([
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

impl Drop for PgInstance {
    fn drop(&mut self) {
        self.stop("immediate");
    }
}
