//! Tests of the `strongroom` binary as people and operators run it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, unreachable_pub, missing_debug_implementations)]

mod admin_store;
mod backup;
mod client;
mod config_check;
mod discovery;
mod file_modes;
mod haproxy;
mod hsm;
mod kill_during_refresh;
mod log_hygiene;
mod migrate_store;
mod openapi;
mod ops;
mod pg_failover;
mod pg_instance;
mod pg_tls;
mod process;
mod replica_kill;
mod replicas;
mod serving;
mod tls;
mod tls_reload;
