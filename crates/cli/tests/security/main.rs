//! The security suite: every test of `security-anchors.md` §3 (A1-I4) that
//! applies, plus slow connections (K1) and TLS (K2), against the real
//! `strongroom` binary. Each test prints one line per id,
//! `SECURITY <id> <name>: <figure> — pass|FAIL` (or `n/a: <reason>`), on
//! stderr before it asserts; `scripts/security` runs this binary with
//! `--nocapture --test-threads=1` and collects the lines into a table.
//! Trial counts are scaled down from the anchors' to keep the whole suite
//! within a few minutes on two cores; every line names the counts used.
//! `scripts/test` skips the `suite::` tests; `scripts/security` runs them
//! once, one at a time.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, unreachable_pub, missing_debug_implementations)]

#[allow(dead_code, unused_imports)]
#[path = "../cli/process.rs"]
mod process;

mod suite;
mod support;
