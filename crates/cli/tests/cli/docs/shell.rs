//! One bash process per page, fed the page's commands one at a time, so
//! that what a command sets (a variable, a function, a file) is there for
//! the next, as in the reader's terminal.
//!
//! Each command runs as `{ COMMAND\n} </dev/null >FILE 2>&1` followed by a
//! line that prints its exit status to bash's own stdout: the output (stdout
//! and stderr in the order they were written) is read from FILE, which can
//! be watched while the command runs (for a sign-in link to approve), and no
//! command can read the test's next commands as its input.
#![allow(clippy::disallowed_methods)] // waits on a real process

use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

const DONE: &str = "__strongroom_doc_test_done__";

#[derive(Debug)]
pub struct Shell {
    child: Child,
    stdin: ChildStdin,
    /// The lines bash itself prints: only the exit statuses.
    statuses: Receiver<String>,
    /// Where a command's output goes.
    out: PathBuf,
    /// What bash prints on its stderr (a command that does not parse).
    err: PathBuf,
    /// Ended already: its process group is not signalled again (its id may
    /// be another's by then).
    ended: bool,
}

/// How a command ended.
#[derive(Debug)]
pub struct Ran {
    pub code: i32,
    pub output: String,
}

impl Shell {
    /// bash in `dir`, with `env` only (and `set -o pipefail`); `scratch`
    /// holds the output files.
    pub fn start(dir: &Path, env: &[(String, String)], scratch: &Path) -> Shell {
        let err = scratch.join("bash.stderr");
        let mut child = Command::new("bash")
            .args(["--noprofile", "--norc"])
            // A group of its own, so that ending it ends what it started.
            .process_group(0)
            .current_dir(dir)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("bash: {e}"));
        let stdout = child.stdout.take().unwrap();
        let (tx, statuses) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take().unwrap();
        let mut shell = Shell { child, stdin, statuses, out: scratch.join("command.out"), err, ended: false };
        shell.send("set -o pipefail\n");
        shell
    }

    fn send(&mut self, text: &str) {
        self.stdin.write_all(text.as_bytes()).and_then(|()| self.stdin.flush()).unwrap_or_else(|e| panic!("bash's input: {e}"));
    }

    /// The output so far of the command running (or last run).
    pub fn output(&self) -> String {
        std::fs::read(&self.out).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default()
    }

    /// Runs `command`, calling `watch` with its output so far every 50 ms
    /// while it runs; its status and output, or why there is none (it ran
    /// past `limit`, and was killed with the shell, or bash ended).
    pub fn run(&mut self, command: &str, limit: Duration, mut watch: impl FnMut(&str)) -> Result<Ran, String> {
        let syntax = Command::new("bash").args(["-n", "-c", command]).stdin(Stdio::null()).output().map_err(|e| format!("bash -n: {e}"))?;
        if !syntax.status.success() {
            return Err(format!("bash -n refuses it: {}", String::from_utf8_lossy(&syntax.stderr).trim()));
        }
        let _ = std::fs::remove_file(&self.out);
        let out = self.out.display().to_string().replace('\'', "'\\''");
        self.send(&format!("{{\n{command}\n}} </dev/null >'{out}' 2>&1\necho \"{DONE} $?\"\n"));
        let started = Instant::now();
        loop {
            match self.statuses.recv_timeout(Duration::from_millis(50)) {
                Ok(line) => {
                    let Some(code) = line.strip_prefix(DONE).and_then(|c| c.trim().parse().ok()) else {
                        return Err(format!("bash printed {line:?} on its own output"));
                    };
                    return Ok(Ran { code, output: self.output() });
                }
                Err(RecvTimeoutError::Timeout) if started.elapsed() < limit => watch(&self.output()),
                Err(RecvTimeoutError::Timeout) => {
                    self.kill();
                    return Err(format!("still running after {limit:?} (killed); its output so far:\n{}", self.output()));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let err = std::fs::read_to_string(&self.err).unwrap_or_default();
                    return Err(format!("bash ended; its stderr:\n{err}\nthe command's output:\n{}", self.output()));
                }
            }
        }
    }
}

impl Shell {
    /// Ends bash and every process of its group (a command still running).
    fn kill(&mut self) {
        if std::mem::replace(&mut self.ended, true) {
            return;
        }
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).stderr(Stdio::null()).status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_carry_over_and_a_command_past_its_limit_is_ended_with_what_it_started() {
        let (dir, scratch) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let env = [("PATH".to_owned(), std::env::var("PATH").unwrap_or_default())];
        let mut shell = Shell::start(dir.path(), &env, scratch.path());
        let ran = shell.run("A=1; f() { echo \"f $A\"; }", Duration::from_secs(10), |_| {}).unwrap();
        assert_eq!((ran.code, ran.output.as_str()), (0, ""));
        let ran = shell.run("f; echo err >&2; false", Duration::from_secs(10), |_| {}).unwrap();
        assert_eq!((ran.code, ran.output.as_str()), (1, "f 1\nerr\n"));
        assert!(shell.run("echo 'unclosed", Duration::from_secs(10), |_| {}).unwrap_err().contains("bash -n"));
        let err = shell.run("sleep 300 & echo $! > sleeper.pid; wait", Duration::from_millis(500), |_| {}).unwrap_err();
        assert!(err.contains("still running"), "{err}");
        let pid = std::fs::read_to_string(dir.path().join("sleeper.pid")).unwrap();
        let proc = PathBuf::from(format!("/proc/{}", pid.trim()));
        let started = Instant::now();
        while proc.exists() && started.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!proc.exists(), "the command's child {} outlived the shell", pid.trim());
    }
}
