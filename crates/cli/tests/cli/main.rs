//! Tests of the `strongroom` binary as people and operators run it, through
//! the test kit (`process`: the binary on `127.0.0.1:0`, its address read
//! from its log).
//!
//! Log hygiene at trace level; HTTPS with the generated certificate; SIGTERM;
//! the client verbs end to end over HTTPS; a backup under write load,
//! restored and served; `config check`; completions and man pages
//! (`strongroom.toml(5)` too); the metrics listener. `admin_store`: admin
//! makes no store, deletes, events newest first with paging and `--follow`,
//! listings as arrays, `backup --force`, `migrate-store` refusing a served
//! source, output cut short. `config_check`: one test per start-up check
//! `config check` repeats, and `--online`. `serving`: a port in use creates
//! nothing, a second `serve` on one SQLite store, `health`, `/`, health
//! checks at DEBUG, process metrics. `tls_reload`: SIGHUP with a good and two
//! bad pairs. `discovery`: the `oauth2` crate from RFC 8414 metadata through
//! the device flow to RFC 7009 revocation. `docs`: the shell examples of the
//! README's quick start and the book's step-by-step pages, run against a real
//! server, their shown output checked. `haproxy`: the book's HAProxy
//! block before three replicas on PostgreSQL, one SIGKILLed under load. `hsm`:
//! named keys in two SoftHSM2 tokens the test initialises (one token away
//! while the other key's reads run, `admin keys move` both ways, a PIN
//! changed under the running server and refused once, counted by log line
//! and by SoftHSM's own flag, no PIN or key bytes in the trace log).
//! `replicas` and `replica_kill`: three servers on one PostgreSQL database,
//! simultaneous presentations spread over them, SIGKILL of one under write
//! load (the security suite's F3). `migrate_store`: SQLite to PostgreSQL to
//! SQLite. `upgrade`: an older store refused by `admin`, upgraded after a
//! backup, its grants working on; `serve` migrating and saying so. On PostgreSQL servers the tests make themselves (`pg_instance`,
//! the kit's, on Unix sockets in their own directories; TCP only for TLS):
//! every `sslmode` against a TLS-only server (`pg_tls`); failover to a
//! promoted standby under load, and readiness false while the server's one
//! address leads to a hot standby and true again after its promotion
//! (`pg_failover`); a database stopped and started again under a running
//! server, answered 503 `temporarily_unavailable` (`pg_outage`); and, as the
//! security suite's F4 (a `suite::` test), a PostgreSQL crash and restart
//! under load.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, unreachable_pub, missing_debug_implementations)]

mod admin_remote;
mod admin_store;
mod backup;
mod cert_approval;
mod cert_fields;
mod cert_policy;
mod certificate_keys;
mod certificates;
mod client;
mod config_check;
mod console_certs;
mod discovery;
mod docs;
mod file_modes;
mod haproxy;
mod hsm;
mod kill_during_refresh;
mod log_hygiene;
mod machine_grants;
mod migrate_store;
mod openapi;
mod ops;
mod pg_failover;
mod pg_instance;
mod pg_outage;
mod pg_tls;
mod process;
mod replica_kill;
mod replicas;
mod serving;
mod tls;
mod tls_reload;
mod upgrade;
