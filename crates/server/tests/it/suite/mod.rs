//! Tests of the security list (book/src/security/suite.md)
//! that need the manual clock, so they run in-process rather than against
//! the binary (`crates/cli/tests/security`): A4, A7, and B1, B2 and I3,
//! which would otherwise wait out real seconds; and L1, L2 (a directory's
//! sign-in and groups, on the in-process server); M1-M6 (an outside
//! probe's findings: `findings`). Each prints one line,
//! `SECURITY <id> <name>: <figure> — pass|FAIL`, before asserting.
//! `scripts/test` runs them with every other test and prints those lines.

mod a4_replay_by_age;
mod a7_model;
mod findings;
mod on_the_clock;
mod people;

/// Prints a test's line for the security suite's summary; returns `pass`.
pub fn report(id: &str, name: &str, figure: &str, pass: bool) -> bool {
    eprintln!("SECURITY {id} {name}: {figure} — {}", if pass { "pass" } else { "FAIL" });
    pass
}
