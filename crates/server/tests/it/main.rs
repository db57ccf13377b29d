//! Integration tests: the real server in-process on a port it binds
//! itself, driven over HTTP through the test kit. One test binary (link time
//! is the slow part of a build).
//!
//! The device flow through the page, clock-driven expiry, races, bad input,
//! the `oauth2` crate as a standard client, headless Chromium, the vault, the
//! client library on the manual clock, and 600 random requests that must
//! never get a 5xx. `vcert`: the calls Go vcert makes around an
//! authentication (`Identity/Self`, `POST Log`, also on a locked database).
//! `certificates`: the vault view of certificate objects and revocation
//! upkeep on the manual clock. `retention`: the event log's archive on the manual clock, with
//! replicas racing. `operability`: metrics counted exactly after a scripted flow, readiness
//! with a locked SQLite file or a locked PostgreSQL table and a missing
//! migration, request ids. `suite`: the security tests that need the manual
//! clock (A4, replay by age; A7, the model-based property test; B1, B2 and
//! I3, which would otherwise wait out real seconds).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, unreachable_pub, missing_debug_implementations)]

mod bad_input;
mod browser;
mod certificates;
mod client_library;
mod concurrency;
mod config;
mod console;
mod credentials;
mod device_flow;
mod fuzz;
mod groups;
mod ldap;
mod log;
mod lost_answers;
mod named_keys;
mod oauth2_client;
mod oauth_admin;
mod oidc;
mod operability;
mod password_grant;
mod people;
mod permissions;
mod retention;
mod suite;
mod support;
mod vault;
mod vcert;
mod venafips;
