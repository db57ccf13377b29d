//! The security suite: every test of the security list (A1-I4, book/src/security/suite.md) that
//! applies, plus slow connections (K1) and TLS (K2), against the real
//! `strongroom` binary. Each test prints one line per id,
//! `SECURITY <id> <name>: <figure> — pass|FAIL`, on stderr before it
//! asserts; `scripts/test` runs them with every other test (cargo-nextest,
//! `.config/nextest.toml`: those that measure time or load one at a time and
//! alone), keeps their output in the JUnit report and prints the lines from
//! there. Trial counts are scaled down from the security list's to keep the whole
//! suite within a few minutes on two cores; every line names the counts
//! used. `ids` checks the table of ids of book/src/security/suite.md
//! against the tests' names.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, unreachable_pub, missing_debug_implementations)]

#[allow(dead_code, unused_imports)]
#[path = "../cli/process.rs"]
mod process;

mod ids;
mod suite;
mod support;
