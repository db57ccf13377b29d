//! `strongroom serve` and `strongroom admin` as child processes.
//!
//! A server listens on `127.0.0.1:0`: the kernel picks a free port as it
//! binds, and the kit reads the address from the server's own log line
//! (`strongroom serving listen=127.0.0.1:NNNNN`), so no test races another
//! for a port. Waiting on a real process takes real time: sleeping is
//! allowed here.
#![allow(clippy::disallowed_methods)]

use std::io::{BufRead as _, BufReader, Write as _};
use std::marker::PhantomData;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The executable a test binary runs: the `strongroom` binary's tests name it
/// with `env!("CARGO_BIN_EXE_strongroom")`, which only they can see.
pub trait Binary {
    fn path() -> &'static str;
}

/// How long a server may take to say it serves.
const START_LIMIT: Duration = Duration::from_secs(30);

/// The address in the `listen` field of the first log line holding
/// `message`, in the text format (`listen=127.0.0.1:1234`) or JSON
/// (`"listen":"127.0.0.1:1234"`).
pub fn logged_addr(output: &str, message: &str) -> Option<SocketAddr> {
    let line = output.lines().find(|l| l.contains(message))?;
    let rest = line.split_once("listen=").or_else(|| line.split_once("\"listen\":\""))?.1;
    rest.split(|c: char| c.is_whitespace() || c == '"' || c == ',').next()?.parse().ok()
}

/// Starts `BIN serve --data-dir DIR --listen 127.0.0.1:0 ARGS`, collecting
/// its stdout and stderr into one string.
fn spawn_serve(bin: &str, data_dir: &Path, args: &[String], env: &[(String, String)]) -> (Child, Arc<Mutex<String>>) {
    let mut cmd = Command::new(bin);
    cmd.arg("serve").arg("--data-dir").arg(data_dir).args(["--listen", "127.0.0.1:0"]);
    cmd.args(args).envs(env.iter().map(|(k, v)| (k, v))).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("{bin} serve: {e}"));
    let output = Arc::new(Mutex::new(String::new()));
    for pipe in [Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>, Box::new(child.stderr.take().unwrap())] {
        let out = output.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let mut o = out.lock().unwrap();
                o.push_str(&line);
                o.push('\n');
            }
        });
    }
    (child, output)
}

/// Waits until the server says it serves and returns the address it bound;
/// its output if it exits first (or is still not serving after 30 s, when
/// it is killed).
fn serving(child: &mut Child, output: &Mutex<String>) -> Result<SocketAddr, String> {
    let start = Instant::now();
    while start.elapsed() < START_LIMIT {
        if let Some(addr) = logged_addr(&output.lock().unwrap(), "strongroom serving") {
            return Ok(addr);
        }
        if child.try_wait().unwrap().is_some() {
            std::thread::sleep(Duration::from_millis(100)); // the readers drain the pipes
            return Err(output.lock().unwrap().clone());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    Err(format!("not serving after {START_LIMIT:?}; output:\n{}", output.lock().unwrap()))
}

/// A running `serve` process whose output (stdout and stderr) is captured.
/// Killed when dropped.
#[derive(Debug)]
pub struct Server<B: Binary> {
    child: Child,
    pub output: Arc<Mutex<String>>,
    /// The port the server bound (it changes on [`Server::restart`]).
    pub port: u16,
    pub data_dir: tempfile::TempDir,
    /// The data directory given to the server: `data_dir` itself, or a
    /// directory in it the server creates ([`Server::start_in_new_dir`]).
    pub dir: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
    binary: PhantomData<B>,
}

impl<B: Binary> Server<B> {
    pub fn start(extra_args: &[&str], env: &[(&str, &str)]) -> Self {
        Self::try_start(extra_args, env).unwrap_or_else(|out| panic!("the server did not start; output:\n{out}"))
    }

    /// Like [`Server::start`]; the server's output if it does not start.
    pub fn try_start(extra_args: &[&str], env: &[(&str, &str)]) -> Result<Self, String> {
        let data_dir = tempfile::tempdir().unwrap();
        let dir = data_dir.path().to_owned();
        Self::try_start_at(data_dir, dir, extra_args, env)
    }

    /// Like [`Server::start`], on a data directory that does not exist yet.
    pub fn start_in_new_dir(extra_args: &[&str], env: &[(&str, &str)]) -> Self {
        let data_dir = tempfile::tempdir().unwrap();
        let dir = data_dir.path().join("data");
        Self::start_at(data_dir, dir, extra_args, env)
    }

    /// Like [`Server::start`], on an existing data directory (a restored one).
    pub fn start_on(dir: PathBuf, extra_args: &[&str], env: &[(&str, &str)]) -> Self {
        Self::start_at(tempfile::tempdir().unwrap(), dir, extra_args, env)
    }

    fn start_at(data_dir: tempfile::TempDir, dir: PathBuf, extra_args: &[&str], env: &[(&str, &str)]) -> Self {
        Self::try_start_at(data_dir, dir, extra_args, env).unwrap_or_else(|out| panic!("the server did not start; output:\n{out}"))
    }

    fn try_start_at(data_dir: tempfile::TempDir, dir: PathBuf, extra_args: &[&str], env: &[(&str, &str)]) -> Result<Self, String> {
        let args: Vec<String> = extra_args.iter().map(|a| (*a).to_owned()).collect();
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        let (mut child, output) = spawn_serve(B::path(), &dir, &args, &env);
        let addr = serving(&mut child, &output)?;
        Ok(Server { child, output, port: addr.port(), data_dir, dir, args, env, binary: PhantomData })
    }

    /// `http://127.0.0.1:PORT` (for a server started with `--insecure-http`).
    pub fn http_base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The address in the `listen` field of the server's first log line
    /// holding `message` (say the metrics listener's `metrics served`).
    pub fn logged_addr(&self, message: &str) -> Option<SocketAddr> {
        logged_addr(&self.output.lock().unwrap(), message)
    }

    /// The server process's id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills the server with SIGKILL (what `Child::kill` sends on Unix):
    /// no shutdown, nothing in flight finishes. Reaps the process.
    pub fn kill(&mut self) {
        self.child.kill().unwrap();
        let status = self.child.wait().unwrap();
        assert!(!status.success(), "a killed server cannot have exited cleanly: {status}");
    }

    /// Starts the server again after [`Server::kill`], on the same data
    /// directory with the same arguments, on a new port (`self.port`); the
    /// new process's output replaces `output`.
    pub fn restart(&mut self) {
        assert!(self.child.try_wait().unwrap().is_some(), "restart only a server that is gone");
        let (mut child, output) = spawn_serve(B::path(), &self.dir, &self.args, &self.env);
        let addr = serving(&mut child, &output).unwrap_or_else(|out| panic!("the server did not start again; output:\n{out}"));
        (self.child, self.output, self.port) = (child, output, addr.port());
    }

    /// Waits (up to 30 s) until the server's output holds `text`.
    pub fn wait_for(&self, text: &str) {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(30) {
            if self.output.lock().unwrap().contains(text) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("server never printed {text:?}; output:\n{}", self.output.lock().unwrap());
    }

    /// `strongroom admin ...` on this server's data directory, with the
    /// server's environment (its database URL, say) but not its log level.
    pub fn admin(&self, args: &[&str], stdin: &str) -> String {
        let env: Vec<(&str, &str)> =
            self.env.iter().filter(|(k, _)| k != "STRONGROOM_LOG" && k != "RUST_LOG").map(|(k, v)| (k.as_str(), v.as_str())).collect();
        admin::<B>(&self.dir, args, &env, stdin)
    }

    /// Like [`Server::stop`], keeping the data directory (made by
    /// [`Server::start`]) for a later [`Server::start_on`].
    pub fn stop_keeping_data(mut self) -> (String, tempfile::TempDir) {
        let kept = std::mem::replace(&mut self.data_dir, tempfile::tempdir().unwrap());
        (self.stop(), kept)
    }

    /// Sends SIGTERM and waits for a clean exit; returns everything printed.
    pub fn stop(mut self) -> String {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "server exited with {status}");
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(20), "server did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(100));
        self.output.lock().unwrap().clone()
    }
}

impl<B: Binary> Drop for Server<B> {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `BIN admin --data-dir DIR ARGS` with `env`, `stdin` fed to it; its stdout
/// and stderr. The command must succeed.
pub fn admin<B: Binary>(dir: &Path, args: &[&str], env: &[(&str, &str)], stdin: &str) -> String {
    let mut child = Command::new(B::path())
        .arg("admin")
        .arg("--data-dir")
        .arg(dir)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "admin {args:?} failed: {text}");
    text
}

/// Output of a finished command.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    fn of(out: std::process::Output) -> Run {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// Runs `BIN <args>` with `env`, to completion.
pub fn run<B: Binary>(args: &[&str], env: &[(&str, &str)]) -> Run {
    Run::of(Command::new(B::path()).args(args).envs(env.iter().copied()).stdin(Stdio::null()).output().unwrap())
}

/// Like [`run`], for a command that should end by itself (a start that must
/// be refused): killed, and reported with code -1, if it runs past `limit`.
pub fn run_bounded<B: Binary>(args: &[&str], env: &[(&str, &str)], limit: Duration) -> Run {
    let mut child = Command::new(B::path())
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            child.kill().unwrap();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Run::of(child.wait_with_output().unwrap())
}

/// A TCP port on 127.0.0.1 that refuses connections for as long as the
/// value lives: bound, never listened on, so no other test can take it (a
/// server that is "unreachable").
#[derive(Debug)]
pub struct ClosedPort {
    socket: tokio::net::TcpSocket,
    pub port: u16,
}

impl ClosedPort {
    pub fn new() -> ClosedPort {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let port = socket.local_addr().unwrap().port();
        ClosedPort { socket, port }
    }

    /// The bound (closed) address.
    pub fn addr(&self) -> SocketAddr {
        self.socket.local_addr().unwrap()
    }
}

impl Default for ClosedPort {
    fn default() -> Self {
        ClosedPort::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_address_is_read_from_either_log_format() {
        let text = "2026-05-01T00:00:00Z  INFO strongroom serving listen=127.0.0.1:43127 public_url=http://localhost:43127 version=0.1.0\n";
        assert_eq!(logged_addr(text, "strongroom serving"), Some("127.0.0.1:43127".parse().unwrap()));
        let json = r#"{"timestamp":"x","level":"INFO","fields":{"message":"metrics served","listen":"127.0.0.1:9090"}}"#;
        assert_eq!(logged_addr(json, "metrics served"), Some("127.0.0.1:9090".parse().unwrap()));
        assert_eq!(logged_addr("INFO store opened\n", "strongroom serving"), None);
    }

    #[test]
    fn a_closed_port_refuses_connections() {
        let closed = ClosedPort::new();
        let err = std::net::TcpStream::connect(closed.addr()).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused);
    }
}
