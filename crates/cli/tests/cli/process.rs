//! Running `strongroom serve` and `strongroom admin` as child processes.
//! Waiting on a real process takes real time: sleeping is allowed here.
#![allow(clippy::disallowed_methods)]

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_strongroom");

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Starts `strongroom serve` on `data_dir` and `port`, collecting its
/// stdout and stderr into one string.
fn spawn_serve(data_dir: &std::path::Path, port: u16, args: &[String], env: &[(String, String)]) -> (Child, Arc<Mutex<String>>) {
    let mut cmd = Command::new(BIN);
    cmd.arg("serve").arg("--data-dir").arg(data_dir).arg("--listen").arg(format!("127.0.0.1:{port}"));
    cmd.args(args).envs(env.iter().map(|(k, v)| (k, v))).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
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

/// A running server whose output (stdout and stderr) is captured.
pub struct Server {
    child: Child,
    pub output: Arc<Mutex<String>>,
    pub port: u16,
    pub data_dir: tempfile::TempDir,
    /// The data directory given to the server: `data_dir` itself, or a
    /// directory in it the server creates ([`Server::start_in_new_dir`]).
    pub dir: std::path::PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

/// Waits until the server says it serves; its output if it exits first
/// (or is still not serving after 30 s, when it is killed).
fn serving(child: &mut Child, output: &Mutex<String>) -> Result<(), String> {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) {
        if output.lock().unwrap().contains("strongroom serving") {
            return Ok(());
        }
        if child.try_wait().unwrap().is_some() {
            std::thread::sleep(Duration::from_millis(100)); // the readers drain the pipes
            return Err(output.lock().unwrap().clone());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    Err(format!("not serving after 30 s; output:\n{}", output.lock().unwrap()))
}

/// Starts `serve` on a free port and waits until it serves. `free_port`
/// only finds a port that was free: another test may take it before the
/// server binds it, so a start refused for that port alone is tried again on
/// another, up to five times.
fn spawn_serving(dir: &std::path::Path, args: &[String], env: &[(String, String)]) -> Result<(Child, Arc<Mutex<String>>, u16), String> {
    let mut last = String::new();
    for _ in 0..5 {
        let port = free_port();
        let (mut child, output) = spawn_serve(dir, port, args, env);
        match serving(&mut child, &output) {
            Ok(()) => return Ok((child, output, port)),
            Err(out) if out.contains(&format!("listening on 127.0.0.1:{port}: Address already in use")) => last = out,
            Err(out) => return Err(out),
        }
    }
    Err(last)
}

impl Server {
    pub fn start(extra_args: &[&str], env: &[(&str, &str)]) -> Server {
        Server::try_start(extra_args, env).unwrap_or_else(|out| panic!("the server did not start; output:\n{out}"))
    }

    /// Like [`Server::start`]; the server's output if it does not start.
    pub fn try_start(extra_args: &[&str], env: &[(&str, &str)]) -> Result<Server, String> {
        let data_dir = tempfile::tempdir().unwrap();
        let dir = data_dir.path().to_owned();
        Server::try_start_at(data_dir, dir, extra_args, env)
    }

    /// Like [`Server::start`], on a data directory that does not exist yet.
    pub fn start_in_new_dir(extra_args: &[&str], env: &[(&str, &str)]) -> Server {
        let data_dir = tempfile::tempdir().unwrap();
        let dir = data_dir.path().join("data");
        Server::start_at(data_dir, dir, extra_args, env)
    }

    /// Like [`Server::start`], on an existing data directory (a restored one).
    pub fn start_on(dir: std::path::PathBuf, extra_args: &[&str], env: &[(&str, &str)]) -> Server {
        Server::start_at(tempfile::tempdir().unwrap(), dir, extra_args, env)
    }

    fn start_at(data_dir: tempfile::TempDir, dir: std::path::PathBuf, extra_args: &[&str], env: &[(&str, &str)]) -> Server {
        Server::try_start_at(data_dir, dir, extra_args, env).unwrap_or_else(|out| panic!("the server did not start; output:\n{out}"))
    }

    fn try_start_at(
        data_dir: tempfile::TempDir,
        dir: std::path::PathBuf,
        extra_args: &[&str],
        env: &[(&str, &str)],
    ) -> Result<Server, String> {
        let args: Vec<String> = extra_args.iter().map(|a| (*a).to_owned()).collect();
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        let (child, output, port) = spawn_serving(&dir, &args, &env)?;
        Ok(Server { child, output, port, data_dir, dir, args, env })
    }

    /// The server process's id.
    #[allow(dead_code)]
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
    /// directory with the same arguments, on a new free port (`self.port`);
    /// the new process's output replaces `output`.
    pub fn restart(&mut self) {
        assert!(self.child.try_wait().unwrap().is_some(), "restart only a server that is gone");
        let (child, output, port) =
            spawn_serving(&self.dir, &self.args, &self.env).unwrap_or_else(|out| panic!("the server did not start again; output:\n{out}"));
        (self.child, self.output, self.port) = (child, output, port);
    }

    /// Waits (up to 30 s) until the server's output holds `text`.
    #[allow(dead_code)] // used by the security suite, which includes this file
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
        admin(&self.dir, args, &env, stdin)
    }

    /// Like [`Server::stop`], keeping the data directory (made by
    /// [`Server::start`]) for a later [`Server::start_on`].
    #[allow(dead_code)]
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

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `strongroom admin --data-dir DIR ARGS` with `env`, `stdin` fed to it;
/// its stdout and stderr. The command must succeed.
pub fn admin(dir: &std::path::Path, args: &[&str], env: &[(&str, &str)], stdin: &str) -> String {
    let mut child = Command::new(BIN)
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

/// Approves (or denies) a device login through the page's form posts, as a
/// person in a browser would.
pub async fn approve(http: &reqwest::Client, base: &str, link: &str, user: &str, password: &str, yes: bool) -> String {
    fn hidden(html: &str, name: &str) -> String {
        let marker = format!("name=\"{name}\" value=\"");
        let start = html.find(&marker).unwrap_or_else(|| panic!("no {name} field in {html}")) + marker.len();
        html[start..start + html[start..].find('"').unwrap()].to_owned()
    }
    let r = http.get(link).send().await.unwrap();
    let cookie = r.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_owned();
    let html = r.text().await.unwrap();
    let csrf = hidden(&html, "csrf");
    let code = hidden(&html, "user_code");
    let html = http
        .post(format!("{base}/vedauth/device"))
        .header("cookie", &cookie)
        .form(&[("csrf", csrf.as_str()), ("user_code", code.as_str()), ("username", user), ("password", password)])
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let ticket = hidden(&html, "ticket");
    http.post(format!("{base}/vedauth/device/decision"))
        .header("cookie", &cookie)
        .form(&[("csrf", csrf.as_str()), ("ticket", ticket.as_str()), ("action", if yes { "approve" } else { "deny" })])
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// The password grant (`/vedauth/authorize/oauth`) for `user` on
/// `client_id`: its answer, which must be 200 (the access and refresh tokens).
#[allow(dead_code)] // not every test binary that includes this file asks for one
pub async fn password_grant(
    http: &reqwest::Client,
    base: &str,
    client_id: &str,
    user: &str,
    password: &str,
    scope: &str,
) -> serde_json::Value {
    let r = http
        .post(format!("{base}/vedauth/authorize/oauth"))
        .json(&serde_json::json!({"client_id": client_id, "username": user, "password": password, "scope": scope}))
        .send()
        .await
        .unwrap();
    let status = r.status();
    let t: serde_json::Value = r.json().await.unwrap();
    assert_eq!(status, 200, "password grant for {user} on {client_id}: {t}");
    t
}

/// Output of a finished client command.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `strongroom <args>` with `env`, to completion.
pub fn run(args: &[&str], env: &[(&str, &str)]) -> Run {
    let out = Command::new(BIN).args(args).envs(env.iter().copied()).stdin(Stdio::null()).output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Like [`run`], for a command that should end by itself (a start that must
/// be refused): killed, and reported with code -1, if it runs past `limit`.
pub fn run_bounded(args: &[&str], env: &[(&str, &str)], limit: Duration) -> Run {
    let mut child = Command::new(BIN)
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
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}
