//! Integration tests: the real server on a free port, driven over HTTP.
//! One test binary (link time is the slow part of a build).
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
