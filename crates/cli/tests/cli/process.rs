//! The `strongroom` binary as the test kit runs it (`strongroom_testkit::process`):
//! this file names the binary, which only this package's tests can see.

pub use strongroom_testkit::api::{Api, TokensExt};
pub use strongroom_testkit::page::approve;
pub use strongroom_testkit::process::{ClosedPort, Run};

pub const BIN: &str = env!("CARGO_BIN_EXE_strongroom");

/// The kit's marker for this binary.
#[derive(Debug)]
pub struct Strongroom;

impl strongroom_testkit::process::Binary for Strongroom {
    fn path() -> &'static str {
        BIN
    }
}

/// `strongroom serve` on `127.0.0.1:0`, its port read from its log.
pub type Server = strongroom_testkit::process::Server<Strongroom>;

/// `strongroom admin --data-dir DIR ARGS`; see [`strongroom_testkit::process::admin`].
pub fn admin(dir: &std::path::Path, args: &[&str], env: &[(&str, &str)], stdin: &str) -> String {
    strongroom_testkit::process::admin::<Strongroom>(dir, args, env, stdin)
}

/// Runs `strongroom <args>` with `env`, to completion.
pub fn run(args: &[&str], env: &[(&str, &str)]) -> Run {
    strongroom_testkit::process::run::<Strongroom>(args, env)
}

/// Like [`run`], killed and reported with code -1 past `limit`.
pub fn run_bounded(args: &[&str], env: &[(&str, &str)], limit: std::time::Duration) -> Run {
    strongroom_testkit::process::run_bounded::<Strongroom>(args, env, limit)
}
