//! The test kit: what every test binary of the workspace needs to drive
//! Strongroom, written once.
//!
//! - [`env`]: the skip rule (a loud `!!! SKIPPED` line, or a failure under
//!   `STRONGROOM_REQUIRE_ALL_TESTS=1`), [`env::pg_url_or_skip`], which
//!   probes the server `STRONGROOM_TEST_POSTGRES_URL` names, and
//!   [`env::seed`], a randomised test's seed (fresh, or one to replay).
//! - [`process`]: `strongroom serve` as a child process on `127.0.0.1:0`,
//!   its address read from its own `strongroom serving listen=…` log line
//!   (no port is picked by binding and dropping a socket), and one-shot
//!   commands (`admin`, client verbs).
//! - [`api`]: a typed client of `/vedauth` and `/vedsdk` on the wire types of
//!   `strongroom_proto`, and the raw JSON calls wire-level tests keep on
//!   purpose.
//! - [`jwt`]: a JWT issuer on Node.js with the `jose` library (JWKS and
//!   discovery over HTTPS, tokens minted on request), and a test CA.
//! - [`page`]: the approval page as a browser without JavaScript sees it: one
//!   hidden-field reader, one sign-in, one decision.
//! - [`pg`]: PostgreSQL clusters a test makes itself (`initdb` in a temporary
//!   directory), on a Unix socket in that directory unless the test needs TCP.
//! - [`ldap`]: Debian's `slapd` in a temporary directory with its own TLS
//!   certificate and a small directory, in an LDAP or an AD shape.
//! - [`oidc`]: node-oidc-provider on 127.0.0.1 (installed by `scripts/test`).
//! - [`undo_migration`]: the SQL that undoes a schema migration, for the
//!   upgrade tests' older stores.
//! - `browser` (feature `browser`): ChromeDriver on a port it picks itself,
//!   driven through `fantoccini`.
//!
//! It is test code: a set-up that fails panics, failing the test that asked
//! for it, so the crate allows `unwrap`, `expect` and `panic`.
#![forbid(unsafe_code)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod api;
#[cfg(feature = "browser")]
pub mod browser;
pub mod env;
pub mod jwt;
pub mod ldap;
pub mod oidc;
pub mod page;
pub mod pg;
pub mod process;

pub use api::{Api, Fail, TokensExt};
pub use env::{pg_url_or_skip, postgres_url, require_all, seed, skip};

/// The SQL that undoes each schema migration, newest last, in SQLite's
/// dialect and PostgreSQL's: the upgrade tests make an older store by
/// undoing the newest one.
const MIGRATION_UNDO: &[(i64, &str, &str)] = &[
    (
        18,
        "DROP TABLE cert_pending; ALTER TABLE cert_authorities DROP COLUMN manual_approval;",
        "DROP TABLE cert_pending; ALTER TABLE cert_authorities DROP COLUMN manual_approval;",
    ),
    (17, "DROP TABLE cert_field_values; DROP TABLE cert_fields;", "DROP TABLE cert_field_values; DROP TABLE cert_fields;"),
    (16, "ALTER TABLE certificates DROP COLUMN template;", "ALTER TABLE certificates DROP COLUMN template;"),
    (
        15,
        "DROP TABLE cert_revocations; DROP TABLE certificates; DROP TABLE cert_policies; DROP TABLE cert_authorities;",
        "DROP TABLE cert_revocations; DROP TABLE certificates; DROP TABLE cert_policies; DROP TABLE cert_authorities;",
    ),
    (13, "DROP TABLE console_epochs;", "DROP TABLE console_epochs;"),
    (
        14,
        "CREATE TABLE access_tokens (hash BLOB PRIMARY KEY, grant_id TEXT NOT NULL REFERENCES grants(id) ON DELETE CASCADE, \
         issued_at INTEGER NOT NULL, expires_at INTEGER NOT NULL) STRICT; \
         CREATE INDEX access_tokens_grant ON access_tokens(grant_id); \
         CREATE TABLE refresh_tokens (hash BLOB PRIMARY KEY, grant_id TEXT NOT NULL REFERENCES grants(id) ON DELETE CASCADE, \
         issued_at INTEGER NOT NULL, spent_at INTEGER) STRICT; \
         CREATE INDEX refresh_tokens_grant ON refresh_tokens(grant_id);",
        "CREATE TABLE access_tokens (hash BYTEA PRIMARY KEY, grant_id TEXT NOT NULL REFERENCES grants(id) ON DELETE CASCADE, \
         issued_at BIGINT NOT NULL, expires_at BIGINT NOT NULL); \
         CREATE INDEX access_tokens_grant ON access_tokens(grant_id); \
         CREATE TABLE refresh_tokens (hash BYTEA PRIMARY KEY, grant_id TEXT NOT NULL REFERENCES grants(id) ON DELETE CASCADE, \
         issued_at BIGINT NOT NULL, spent_at BIGINT); \
         CREATE INDEX refresh_tokens_grant ON refresh_tokens(grant_id); \
         ALTER TABLE grants ALTER COLUMN slot DROP NOT NULL;",
    ),
];

/// The SQL that undoes migration `version` (PostgreSQL's when `postgres`);
/// a migration without it fails the test that asks, saying what to add here.
pub fn undo_migration(version: i64, postgres: bool) -> &'static str {
    MIGRATION_UNDO
        .iter()
        .find(|(v, _, _)| *v == version)
        .map(|(_, lite, pg)| if postgres { *pg } else { *lite })
        .unwrap_or_else(|| panic!("migration {version} has no undoing in strongroom_testkit's MIGRATION_UNDO: add the SQL that undoes it"))
}
