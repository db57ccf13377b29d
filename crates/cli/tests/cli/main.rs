//! Tests of the `strongroom` binary as people and operators run it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, unreachable_pub, missing_debug_implementations)]

mod client;
mod file_modes;
mod kill_during_refresh;
mod log_hygiene;
mod process;
mod tls;
