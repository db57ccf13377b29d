//! Integration tests: the real server on a free port, driven over HTTP.
//! One test binary (link time is the slow part of a build).
//!
//! The device flow through the page, clock-driven expiry, races, bad input,
//! the `oauth2` crate as a standard client, headless Chromium, the vault, the
//! client library on the manual clock, and 600 random requests that must
//! never get a 5xx. `operability`: metrics counted exactly after a scripted
//! flow, readiness with a locked SQLite file or a locked PostgreSQL table
//! and a missing migration, request ids. `suite`: the security tests that
//! need the manual clock (A4, replay by age; A7, the model-based property
//! test), which `scripts/test` skips and `scripts/security` runs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, unreachable_pub, missing_debug_implementations)]

mod bad_input;
mod browser;
mod client_library;
mod concurrency;
mod device_flow;
mod fuzz;
mod lost_answers;
mod named_keys;
mod oauth2_client;
mod operability;
mod password_grant;
mod suite;
mod support;
mod vault;
mod vcert;
