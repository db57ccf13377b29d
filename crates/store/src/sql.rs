//! SQL that both dialects share, written once.
//!
//! Statements are written with SQLite's numbered parameters (`?1`); the
//! PostgreSQL store reads them with `$1` (see [`Sql`]). Only constructs both
//! dialects accept appear here: booleans are compared with `NOT x` / `x`
//! (SQLite stores them as 0/1, PostgreSQL as `BOOLEAN`) and bound as Rust
//! `bool`s, which both drivers map to their column type.
//!
//! These are the request path's statements: the context reads, the
//! conditional writes of a grant's token pair, the rights check every
//! vault write repeats, and the vault's plain reads and writes of entries,
//! owners, associations and data keys. A statement that needs a dialect's own
//! syntax (PostgreSQL's `$2::BYTEA IS NULL` casts, `FOR UPDATE`, sequences)
//! stays in its backend.

use std::sync::LazyLock;

use strongroom_core::vault::Rights;

/// One statement in both dialects' parameter syntax.
#[derive(Debug)]
pub(crate) struct Sql {
    sqlite: String,
    postgres: String,
}

impl Sql {
    fn new(text: String) -> Sql {
        Sql { postgres: dollar(&text), sqlite: text }
    }
    pub(crate) fn sqlite(&self) -> &str {
        &self.sqlite
    }
    pub(crate) fn postgres(&self) -> &str {
        &self.postgres
    }
}

/// `?1` → `$1`. Statements hold no `?` inside string literals.
fn dollar(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '?' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('$');
        } else {
            out.push(c);
        }
    }
    out
}

macro_rules! shared {
    ($(#[$doc:meta])* $name:ident = $text:expr) => {
        $(#[$doc])*
        pub(crate) static $name: LazyLock<Sql> = LazyLock::new(|| Sql::new($text.into()));
    };
}

/// A grant's columns, in the order the row decoders read them (16).
pub(crate) const GRANT_COLS: &str = "g.id, g.client_id, g.user_id, g.scope, g.created_at, g.refresh_until, g.refreshable, \
     g.access_issued_at, g.access_validity, g.revoked_at, g.refresh_hash, g.access_hash, g.pair_used, g.rotated_from, g.rotated_at, g.version";
pub(crate) const GRANT_COL_COUNT: usize = 16;

/// Whether user column `user` is allowed on integration `i` (whose client
/// id column is `client`): everyone is, or the user is on its list.
fn allowed(client: &str, user: &str) -> String {
    format!("(i.allow_all_users OR EXISTS (SELECT 1 FROM integration_users iu WHERE iu.client_id = {client} AND iu.user_id = {user}))")
}

/// The standing of user `u` on integration `i` (6 columns), for
/// `may_receive`. Needs `i` and `u` joined (see [`standing_joins`]);
/// `client` and `user` name the columns the integration's user list is
/// checked with.
fn standing_cols(client: &str, user: &str) -> String {
    format!(
        "i.client_id IS NOT NULL, i.client_id IS NOT NULL AND i.disabled, i.max_scope, u.id IS NOT NULL, \
         u.id IS NOT NULL AND u.disabled, {}",
        allowed(client, user)
    )
}
pub(crate) const STANDING_COL_COUNT: usize = 6;

/// Joins the integration `i` and user `u` of a client id and user id column.
fn standing_joins(client: &str, user: &str) -> String {
    format!("LEFT JOIN integrations i ON i.client_id = {client} LEFT JOIN users u ON u.id = {user}")
}

/// The access context's columns (`GRANT_COL_COUNT` + [`ACCESS_EXTRA_COLS`]):
/// grant, token times, user name, master admin, and the user's standing on
/// the integration now. Over [`ACCESS_JOINS`].
pub(crate) fn access_cols() -> String {
    format!("{GRANT_COLS}, t.issued_at, t.expires_at, u.name, u.master_admin, {}", standing_cols("g.client_id", "g.user_id"))
}
pub(crate) const ACCESS_EXTRA_COLS: usize = 4 + STANDING_COL_COUNT;

/// The access token `t`, its grant `g`, user `u` and integration `i`.
pub(crate) const ACCESS_JOINS: &str = "access_tokens t JOIN grants g ON g.id = t.grant_id JOIN users u ON u.id = g.user_id LEFT JOIN integrations i ON i.client_id = g.client_id";

shared!(
    /// `?1` access-token hash → [`access_cols`].
    ACCESS_CONTEXT = format!("SELECT {} FROM {ACCESS_JOINS} WHERE t.hash = ?1", access_cols())
);

shared!(
    /// `?1` refresh-token hash → grant, standing, the integration's retry window.
    REFRESH_CONTEXT = format!(
        "SELECT {GRANT_COLS}, {}, i.retry_window FROM refresh_tokens t JOIN grants g ON g.id = t.grant_id {} WHERE t.hash = ?1",
        standing_cols("g.client_id", "g.user_id"),
        standing_joins("g.client_id", "g.user_id")
    )
);

/// A device code's columns (11), in the order the row decoders read them.
pub(crate) const DEVICE_COLS: &str = "d.code_hash, d.user_code_hash, d.client_id, d.scope, d.state, d.user_id, d.created_at, d.expires_at, \
     d.interval_secs, d.last_poll_at, d.version";
pub(crate) const DEVICE_COL_COUNT: usize = 11;

shared!(
    /// `?1` device-code hash → device code, integration settings (7), standing of the deciding user, grant.
    DEVICE_CONTEXT = format!(
        "SELECT {DEVICE_COLS}, i.client_id IS NOT NULL AND i.allow_device AND NOT i.disabled, i.access_validity, i.grant_validity, \
         i.refreshable, i.device_code_validity, i.poll_interval, i.retry_window, {}, {GRANT_COLS} \
         FROM device_codes d {} LEFT JOIN grants g ON g.id = d.grant_id WHERE d.code_hash = ?1",
        standing_cols("d.client_id", "d.user_id"),
        standing_joins("d.client_id", "d.user_id")
    )
);

shared!(
    /// `?1` user-code hash → device code.
    DEVICE_BY_USER_CODE = format!("SELECT {DEVICE_COLS} FROM device_codes d WHERE d.user_code_hash = ?1")
);

shared!(
    /// Approved → redeemed, remembering the grant: `?1` code hash, `?2` version, `?3` grant id.
    REDEEM_DEVICE = "UPDATE device_codes SET state = 'redeemed', grant_id = ?3, version = version + 1 \
                     WHERE code_hash = ?1 AND version = ?2 AND state = 'approved'"
);

shared!(
    /// A new grant with its first pair (16 values in `GRANT_COLS` order).
    INSERT_GRANT = "INSERT INTO grants (id, client_id, user_id, scope, created_at, refresh_until, refreshable, access_issued_at, \
                    access_validity, revoked_at, refresh_hash, access_hash, pair_used, rotated_from, rotated_at, version) \
                    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)"
);

shared!(
    /// The one conditional write of a refresh, a retry or a re-issue: `?1` grant, `?2` version read,
    /// `?3` refresh, `?4` access, `?5` used, `?6` rotated from, `?7` rotated at, `?8` now.
    ADVANCE_PAIR = "UPDATE grants SET version = version + 1, refresh_hash = ?3, access_hash = ?4, pair_used = ?5, \
                    rotated_from = ?6, rotated_at = ?7, access_issued_at = ?8 \
                    WHERE id = ?1 AND version = ?2 AND revoked_at IS NULL AND refresh_until > ?8"
);

shared!(RETIRE_ACCESS = "DELETE FROM access_tokens WHERE hash = ?1");

shared!(INSERT_ACCESS = "INSERT INTO access_tokens (hash, grant_id, issued_at, expires_at) VALUES (?1, ?2, ?3, ?4)");

shared!(INSERT_REFRESH = "INSERT INTO refresh_tokens (hash, grant_id, issued_at, spent_at) VALUES (?1, ?2, ?3, NULL)");

shared!(
    /// The first use of grant `?1`'s newest access token `?2` (`?3` is true).
    MARK_PAIR_USED = "UPDATE grants SET pair_used = ?3, version = version + 1 WHERE id = ?1 AND access_hash = ?2 AND NOT pair_used"
);

shared!(
    /// Revokes grant `?2` at `?1` if live; its access tokens go in the same transaction.
    REVOKE_GRANT = "UPDATE grants SET revoked_at = ?1, version = version + 1 WHERE id = ?2 AND revoked_at IS NULL"
);

/// The grant `g` of user `u` still stands: not revoked, the user enabled,
/// the integration `i` there, enabled and still admitting the user. (The
/// grant's scope against the integration's maximum is checked at the
/// context read: scopes are parsed in Rust, not SQL.)
fn grant_stands(grant: &str, user: &str) -> String {
    format!(
        "FROM grants g JOIN users u ON u.id = g.user_id JOIN integrations i ON i.client_id = g.client_id \
         WHERE g.id = {grant} AND u.id = {user} AND g.revoked_at IS NULL AND NOT u.disabled AND NOT i.disabled AND {}",
        allowed("g.client_id", "u.id")
    )
}

/// Whether user `?U` may still write through grant `?G` where `rule` (an SQL
/// condition on the right row `r`) holds: the grant stands ([`grant_stands`]),
/// and the user is a Master Admin or holds Write on a matching folder or one
/// above it.
fn may_write(grant: &str, user: &str, folder_rule: &str) -> String {
    format!(
        "EXISTS (SELECT 1 {} \
         AND (u.master_admin OR EXISTS (SELECT 1 FROM folder_rights r WHERE r.user_id = u.id AND (r.rights & {write}) <> 0 AND {folder_rule})))",
        grant_stands(grant, user),
        write = Rights::WRITE.bits()
    )
}

/// `r` is granted on folder key `key` or above it (a string column or parameter).
fn covers(key: &str) -> String {
    format!("({key} = r.path_key OR substr({key}, 1, length(r.path_key) + 1) = r.path_key || '\\')")
}

/// May user `user` (grant `grant`) write entry `entry` (parameters or
/// columns): Write on one of its owners, which must exist. A condition.
pub(crate) fn may_write_entry(grant: &str, user: &str, entry: &str) -> String {
    may_write(grant, user, &format!("EXISTS (SELECT 1 FROM vault_owners o WHERE o.vault_id = {entry} AND {})", covers("o.owner_key")))
}

shared!(
    /// May user `?2` (grant `?1`) write entry `?3`: Write on one of its owners, which must exist.
    MAY_WRITE_ENTRY = format!("SELECT {}", may_write_entry("?1", "?2", "?3"))
);

shared!(
    /// May user `?2` (grant `?1`) write in folder key `?3`.
    MAY_WRITE_FOLDER = format!("SELECT {}", may_write("?1", "?2", &covers("?3")))
);

shared!(
    /// Is user `?2` (grant `?1`) still a Master Admin with a grant that stands.
    IS_MASTER_ADMIN = format!("SELECT EXISTS (SELECT 1 {} AND u.master_admin)", grant_stands("?1", "?2"))
);

/// The events a reader may see, as a condition on `events`: all when
/// `identity` (a parameter) is NULL; else those they acted in, and those on
/// vault entries (`vault.*` events name the VaultID in `object`, which
/// `object_id` reads as an integer in the dialect's safe way) on an owner of
/// which user `user` holds Read, granted there or above.
pub(crate) fn visible_to(identity: &str, user: &str, object_id: &str) -> String {
    format!(
        "({identity} IS NULL OR events.identity = {identity} OR (events.kind LIKE 'vault.%' AND EXISTS (\
         SELECT 1 FROM vault_owners o JOIN folder_rights r ON r.user_id = {user} AND (r.rights & {read}) <> 0 AND {} \
         WHERE o.vault_id = {object_id})))",
        covers("o.owner_key"),
        read = Rights::READ.bits()
    )
}

shared!(
    /// `?1` user name (lower-cased), `?2` client address → the user's columns
    /// and password hash (all NULL if no such user), and whether the address
    /// has signed in as that name before. Always one row.
    LOGIN_CONTEXT = "SELECT u.id, u.name, u.disabled, u.master_admin, u.created_at, u.password_hash, \
                     EXISTS (SELECT 1 FROM sign_in_origins s WHERE s.name_key = ?1 AND s.addr = ?2) \
                     FROM (SELECT 1 AS one) x LEFT JOIN users u ON u.name_key = ?1"
);

shared!(
    /// Counter `?1`: failures, window start, locked until.
    COUNTER = "SELECT failures, window_start, locked_until FROM throttle WHERE key = ?1"
);

shared!(
    /// Writes counter `?1` (`?2` failures, `?3` window start, `?4` locked until, `?5` subject).
    PUT_COUNTER = "INSERT INTO throttle (key, failures, window_start, locked_until, subject) VALUES (?1, ?2, ?3, ?4, ?5) \
                   ON CONFLICT (key) DO UPDATE SET failures = excluded.failures, window_start = excluded.window_start, \
                   locked_until = excluded.locked_until, subject = excluded.subject"
);

shared!(
    /// Address `?2` signed in as user name `?1` at `?3`.
    REMEMBER_ORIGIN = "INSERT INTO sign_in_origins (name_key, addr, last_success) VALUES (?1, ?2, ?3) \
                       ON CONFLICT (name_key, addr) DO UPDATE SET last_success = excluded.last_success"
);

shared!(
    /// Guessing locks in force at `?1`: (user name, until), by name.
    LOCKS = "SELECT subject, max(locked_until) FROM throttle WHERE subject IS NOT NULL AND locked_until > ?1 \
             GROUP BY subject ORDER BY subject"
);

shared!(
    /// Clears every counter limiting guesses against user name `?1`.
    UNLOCK = "DELETE FROM throttle WHERE subject = ?1"
);

shared!(
    /// Revokes every live grant of user `?2` at `?1`; their access tokens go in the same transaction
    /// ([`DELETE_USER_ACCESS`]).
    REVOKE_USER_GRANTS = "UPDATE grants SET revoked_at = ?1, version = version + 1 WHERE user_id = ?2 AND revoked_at IS NULL"
);

shared!(
    /// The access tokens of user `?1`'s grants.
    DELETE_USER_ACCESS = "DELETE FROM access_tokens WHERE grant_id IN (SELECT id FROM grants WHERE user_id = ?1)"
);

shared!(
    /// Device codes user `?1` approved that were not redeemed become denied.
    DENY_USER_APPROVALS = "UPDATE device_codes SET state = 'denied', version = version + 1 WHERE user_id = ?1 AND state = 'approved'"
);

shared!(
    /// Entry `?3`'s data sealed again (`?1` data key, `?2` sealed), if it is
    /// still the ciphertext `?5` under data key `?4` that was read: a value
    /// written meanwhile is never overwritten with an older one.
    RESEAL_DATA = "UPDATE vault_entries SET key_id = ?1, sealed = ?2 WHERE vault_id = ?3 AND key_id = ?4 AND sealed = ?5"
);

shared!(
    /// Association `?4` of entry `?3` sealed again, as [`RESEAL_DATA`] (`?5`
    /// data key and `?6` ciphertext read).
    RESEAL_ASSOCIATION =
        "UPDATE associations SET key_id = ?1, sealed = ?2 WHERE vault_id = ?3 AND name = ?4 AND key_id = ?5 AND sealed = ?6"
);

shared!(
    /// Entry `?4` moved under named key `?1`, its data sealed again (`?2`
    /// data key, `?3` sealed), if it is still `?6` under data key `?5`.
    REKEY_DATA =
        "UPDATE vault_entries SET key_name = ?1, key_id = ?2, sealed = ?3 WHERE vault_id = ?4 AND key_id = ?5 AND sealed = ?6"
);

shared!(
    /// Whether association `?2` of entry `?1` is still ciphertext `?4` under data key `?3`.
    ASSOCIATION_UNCHANGED =
        "SELECT EXISTS (SELECT 1 FROM associations WHERE vault_id = ?1 AND name = ?2 AND key_id = ?3 AND sealed = ?4)"
);

shared!(
    /// How many associations entry `?1` has.
    ASSOCIATION_COUNT = "SELECT count(*) FROM associations WHERE vault_id = ?1"
);

shared!(
    /// Entry `?1`: type, key name, data key, sealed data, created at.
    ENTRY = "SELECT vault_type, key_name, key_id, sealed, created_at FROM vault_entries WHERE vault_id = ?1"
);

shared!(
    /// Entry `?1`'s owners, in key order.
    OWNERS = "SELECT owner FROM vault_owners WHERE vault_id = ?1 ORDER BY owner_key"
);

shared!(
    /// A new entry: `?1` id, `?2` type, `?3` key name, `?4` data key, `?5` sealed, `?6` created at.
    INSERT_ENTRY = "INSERT INTO vault_entries (vault_id, vault_type, key_name, key_id, sealed, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
);

shared!(
    /// Folder `?3` (key `?2`) owns entry `?1`; no change if it already does.
    INSERT_OWNER = "INSERT INTO vault_owners (vault_id, owner_key, owner) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING"
);

shared!(
    /// Folder key `?2` no longer owns entry `?1`.
    DELETE_OWNER = "DELETE FROM vault_owners WHERE vault_id = ?1 AND owner_key = ?2"
);

shared!(
    /// Stores association `?2` of entry `?1`, replacing one of that name.
    PUT_ASSOCIATION = "INSERT INTO associations (vault_id, name, value_type, key_id, sealed, lookup) VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
                       ON CONFLICT (vault_id, name) DO UPDATE SET value_type = excluded.value_type, key_id = excluded.key_id, \
                       sealed = excluded.sealed, lookup = excluded.lookup"
);

shared!(
    /// Every data key, oldest first.
    DATA_KEYS = "SELECT id, key_name, wrapped, created_at FROM data_keys ORDER BY id"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_parameters_become_dollars() {
        assert_eq!(dollar("SELECT ?1, ?12 FROM t WHERE a = ?2"), "SELECT $1, $12 FROM t WHERE a = $2");
        assert!(!ADVANCE_PAIR.postgres().contains('?'));
        assert!(!PUT_ASSOCIATION.postgres().contains('?'));
        assert!(MAY_WRITE_ENTRY.sqlite().contains("& 4"), "Write is bit 4");
    }
}
