//! Every statement of the store, written once for both dialects.
//!
//! Statements are written with SQLite's numbered parameters (`?1`); the
//! PostgreSQL text reads them as `$1` (see [`Sql`]). A parameter whose type
//! PostgreSQL cannot infer (`?2 IS NULL OR …`) is written `?2::TEXT`: the
//! cast stays in PostgreSQL's text and is dropped from SQLite's. Row locks
//! (`FOR UPDATE`) are PostgreSQL's: SQLite's writer thread is the only
//! writer, so they are dropped from its text. Booleans are compared with
//! `NOT x` / `x` and bound as booleans, which SQLite stores as 0/1. The few
//! statements that differ in more than that give both texts
//! ([`ALLOCATE_VAULT_ID`], [`EVENTS`], the copier's sequence and column
//! reads). Columns are named from [`crate::schema`], in the codec's order.

use std::sync::LazyLock;

use strongroom_core::vault::Rights;

use crate::schema::{self, ASSOCIATIONS, DATA_KEYS, DEVICE_CODES, EVENTS as EVENT_ROWS, GRANTS, JWT_ISSUERS, MACHINE_MAPPINGS, USERS};

/// One statement in both dialects.
#[derive(Debug)]
pub(crate) struct Sql {
    sqlite: String,
    postgres: String,
}

impl Sql {
    /// A statement both dialects read alike (see the module's rules).
    pub(crate) fn new(text: impl Into<String>) -> Sql {
        let text = text.into();
        Sql { sqlite: for_sqlite(&text), postgres: for_postgres(&text) }
    }

    /// A statement with a text of each dialect's own, both written with `?N`.
    pub(crate) fn dialects(sqlite: &str, postgres: &str) -> Sql {
        Sql { sqlite: for_sqlite(sqlite), postgres: for_postgres(postgres) }
    }

    pub(crate) fn sqlite(&self) -> &str {
        &self.sqlite
    }

    pub(crate) fn postgres(&self) -> &str {
        &self.postgres
    }
}

/// `?1` → `$1`. Statements hold no `?` inside string literals.
fn for_postgres(sql: &str) -> String {
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

/// `?1::TYPE` → `?1`, and no `FOR UPDATE`.
fn for_sqlite(sql: &str) -> String {
    let sql = sql.replace(" FOR UPDATE", "");
    let mut out = String::with_capacity(sql.len());
    let mut rest = sql.as_str();
    while let Some(q) = rest.find('?') {
        let (head, tail) = rest.split_at(q + 1);
        out.push_str(head);
        let digits = tail.len() - tail.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        out.push_str(&tail[..digits]);
        rest = &tail[digits..];
        if digits > 0
            && let Some(cast) = rest.strip_prefix("::")
        {
            rest = cast.trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '_');
        }
    }
    out.push_str(rest);
    out
}

macro_rules! sql {
    ($(#[$doc:meta])* $name:ident = $text:expr) => {
        $(#[$doc])*
        pub(crate) static $name: LazyLock<Sql> = LazyLock::new(|| Sql::new($text));
    };
}

// ------------------------------------------------------------------ pieces

/// Whether user column `user` is allowed on integration `i` (whose client
/// id column is `client`): everyone (`allow_all_users`), a user listed
/// on it, a member of a group listed on it, or a machine identity whose
/// mapping lists it (`mapping_clients`). Memberships are read in the same
/// statement, so a removal takes effect on the next request.
fn allowed(client: &str, user: &str) -> String {
    format!(
        "(i.allow_all_users OR EXISTS (SELECT 1 FROM integration_users iu WHERE iu.client_id = {client} AND iu.user_id = {user}) \
         OR EXISTS (SELECT 1 FROM integration_groups ig JOIN group_members gm ON gm.group_id = ig.group_id \
         WHERE ig.client_id = {client} AND gm.user_id = {user}) \
         OR EXISTS (SELECT 1 FROM machine_users mu JOIN mapping_clients mc ON mc.mapping = mu.mapping \
         WHERE mu.user_id = {user} AND mc.client_id = {client}))"
    )
}

/// The rights user `user` holds, as a table of (`path_key`, `rights`) rows:
/// those granted to the user and those granted to each group the user is a
/// member of now (a folder may appear more than once: the rights add up).
pub(crate) fn held_rights(user: &str) -> String {
    format!(
        "(SELECT path_key, rights FROM folder_rights WHERE user_id = {user} UNION ALL \
         SELECT gr.path_key, gr.rights FROM group_rights gr JOIN group_members gm ON gm.group_id = gr.group_id WHERE gm.user_id = {user})"
    )
}

/// The standing of user `u` on integration `i` (6 columns, `codec::standing`).
/// Needs `i` and `u` joined; `client` and `user` name the columns the
/// integration's user list is checked with.
fn standing_cols(client: &str, user: &str) -> String {
    format!(
        "i.client_id IS NOT NULL, i.client_id IS NOT NULL AND i.disabled, i.max_scope, u.id IS NOT NULL, \
         u.id IS NOT NULL AND u.disabled, {}",
        allowed(client, user)
    )
}

/// Joins the integration `i` and user `u` of a client id and user id column.
fn standing_joins(client: &str, user: &str) -> String {
    format!("LEFT JOIN integrations i ON i.client_id = {client} LEFT JOIN users u ON u.id = {user}")
}

/// The columns of an access or refresh context found through a token's
/// locator (`codec::located_access`): the grant, user name, master admin,
/// and the user's standing on the integration now. Over [`LOCATED_JOINS`].
pub(crate) fn located_cols() -> String {
    format!("{}, u.name, u.master_admin, {}", GRANTS.cols("g"), standing_cols("g.client_id", "g.user_id"))
}

/// A grant `g`, its user `u` and integration `i` (a token names the grant
/// by its slot).
pub(crate) const LOCATED_JOINS: &str = "grants g JOIN users u ON u.id = g.user_id LEFT JOIN integrations i ON i.client_id = g.client_id";

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

/// Whether user `user` may still write through grant `grant` where
/// `folder_rule` (an SQL condition on the right row `r`) holds: the grant
/// stands ([`grant_stands`]), and the user is a Master Admin or holds Write
/// on a matching folder or one above it.
fn may_write(grant: &str, user: &str, folder_rule: &str) -> String {
    format!(
        "EXISTS (SELECT 1 {} \
         AND (u.master_admin OR EXISTS (SELECT 1 FROM {held} r WHERE (r.rights & {write}) <> 0 AND {folder_rule})))",
        grant_stands(grant, user),
        held = held_rights("u.id"),
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

/// The events a reader may see, as a condition on `events`: all when
/// `identity` (a parameter) is NULL; else those they acted in, and those on
/// vault entries (`vault.*` events name the VaultID in `object`, which
/// `object_id` reads as an integer in the dialect's safe way) on an owner of
/// which user `user` holds Read, granted there or above.
fn visible_to(identity: &str, user: &str, object_id: &str) -> String {
    format!(
        "({identity} IS NULL OR events.identity = {identity} OR (events.kind LIKE 'vault.%' AND EXISTS (\
         SELECT 1 FROM vault_owners o JOIN {held} r ON (r.rights & {read}) <> 0 AND {} \
         WHERE o.vault_id = {object_id})))",
        covers("o.owner_key"),
        held = held_rights(user),
        read = Rights::READ.bits()
    )
}

// ------------------------------------------------------------------ the token service

sql!(
    /// `?1` grant slot (from an access token's locator) → [`located_cols`].
    ACCESS_BY_SLOT = format!("SELECT {} FROM {LOCATED_JOINS} WHERE g.slot = ?1", located_cols())
);

sql!(
    /// `?1` grant slot (from a refresh token's locator) → grant, standing, the integration's retry window.
    REFRESH_BY_SLOT = format!(
        "SELECT {}, {}, i.retry_window FROM grants g {} WHERE g.slot = ?1",
        GRANTS.cols("g"),
        standing_cols("g.client_id", "g.user_id"),
        standing_joins("g.client_id", "g.user_id")
    )
);

sql!(
    /// `?1` device-code hash → device code, integration settings (7), standing of the deciding user, grant.
    DEVICE_CONTEXT = format!(
        "SELECT {}, i.client_id IS NOT NULL AND i.allow_device AND NOT i.disabled, i.access_validity, i.grant_validity, \
         i.refreshable, i.device_code_validity, i.poll_interval, i.retry_window, {}, {} \
         FROM device_codes d {} LEFT JOIN grants g ON g.id = d.grant_id WHERE d.code_hash = ?1",
        DEVICE_CODES.cols("d"),
        standing_cols("d.client_id", "d.user_id"),
        GRANTS.cols("g"),
        standing_joins("d.client_id", "d.user_id")
    )
);

sql!(
    /// `?1` user-code hash → device code.
    DEVICE_BY_USER_CODE = format!("SELECT {} FROM device_codes d WHERE d.user_code_hash = ?1", DEVICE_CODES.cols("d"))
);

sql!(
    /// A user code of a code that has expired (`?1` user-code hash, `?2` now) may be reused.
    FREE_USER_CODE = "DELETE FROM device_codes WHERE user_code_hash = ?1 AND expires_at <= ?2"
);

sql!(INSERT_DEVICE = DEVICE_CODES.insert());

sql!(
    /// A poll of code `?3` still at version `?4` and pending: `?1` its time, `?2` the interval now.
    RECORD_POLL = "UPDATE device_codes SET last_poll_at = ?1, interval_secs = ?2, version = version + 1 \
                   WHERE code_hash = ?3 AND version = ?4 AND state = 'pending'"
);

sql!(
    /// Pending code `?3` at version `?4` → state `?1` by user `?2`.
    DECIDE_DEVICE = "UPDATE device_codes SET state = ?1, user_id = ?2, version = version + 1 \
                     WHERE code_hash = ?3 AND version = ?4 AND state = 'pending'"
);

sql!(
    /// Approved → redeemed, remembering the grant: `?1` code hash, `?2` version, `?3` grant id.
    REDEEM_DEVICE = "UPDATE device_codes SET state = 'redeemed', grant_id = ?3, version = version + 1 \
                     WHERE code_hash = ?1 AND version = ?2 AND state = 'approved'"
);

sql!(
    /// A new grant with its first pair (`codec::grant_row`).
    INSERT_GRANT = GRANTS.insert()
);

sql!(
    /// The one conditional write of a refresh, a retry or a re-issue: `?1` grant, `?2` version read,
    /// `?3` refresh, `?4` access, `?5` used, `?6` rotated from, `?7` rotated at, `?8` now,
    /// `?9` the pair's generation, `?10` the earlier access tokens kept, `?11` the client's
    /// address (NULL: kept). No indexed column changes: the row is rewritten in place and no
    /// index is touched.
    ADVANCE_PAIR = "UPDATE grants SET version = version + 1, refresh_hash = ?3, access_hash = ?4, pair_used = ?5, \
                    rotated_from = ?6, rotated_at = ?7, access_issued_at = ?8, generation = ?9, older_access = ?10, \
                    last_addr = COALESCE(?11, last_addr) \
                    WHERE id = ?1 AND version = ?2 AND revoked_at IS NULL AND refresh_until > ?8"
);

sql!(
    /// The first use of grant `?1`'s newest access token `?2` (`?3` is true).
    MARK_PAIR_USED = "UPDATE grants SET pair_used = ?3, version = version + 1 WHERE id = ?1 AND access_hash = ?2 AND NOT pair_used"
);

sql!(
    /// Revokes grant `?2` at `?1` if live.
    REVOKE_GRANT = "UPDATE grants SET revoked_at = ?1, version = version + 1 WHERE id = ?2 AND revoked_at IS NULL"
);

sql!(
    /// `?1` user name (lower-cased) → the user's row (`codec::user_and_hash`).
    USER_BY_NAME = format!("SELECT {} FROM users u WHERE u.name_key = ?1", USERS.cols("u"))
);

sql!(
    /// `?1` user name (lower-cased), `?2` client address → the user's row
    /// (all NULL if no such user), and whether the address has signed in as
    /// that name before. Always one row.
    LOGIN_CONTEXT = format!(
        "SELECT {}, EXISTS (SELECT 1 FROM sign_in_origins s WHERE s.name_key = ?1 AND s.addr = ?2) \
         FROM (SELECT 1 AS one) x LEFT JOIN users u ON u.name_key = ?1",
        USERS.cols("u")
    )
);

sql!(
    /// Counter `?1` at zero if it does not exist, so that it can be locked.
    ZERO_COUNTER = "INSERT INTO throttle (key, failures, window_start, locked_until) VALUES (?1, 0, 0, NULL) ON CONFLICT (key) DO NOTHING"
);

sql!(
    /// Counter `?1`, locked for the transaction (`codec::counter`).
    COUNTER = format!("SELECT {} FROM throttle WHERE key = ?1 FOR UPDATE", schema::THROTTLE.column_list())
);

sql!(
    /// Writes a counter (`codec::counter_row`).
    PUT_COUNTER = format!(
        "{} ON CONFLICT (key) DO UPDATE SET failures = excluded.failures, window_start = excluded.window_start, \
         locked_until = excluded.locked_until, subject = excluded.subject",
        schema::THROTTLE.insert()
    )
);

sql!(
    /// User `?1` signed in at `?2`.
    STAMP_SIGN_IN = "UPDATE users SET signed_in_at = ?2 WHERE id = ?1"
);

sql!(
    /// Address `?2` signed in as user name `?1` at `?3`.
    REMEMBER_ORIGIN = "INSERT INTO sign_in_origins (name_key, addr, last_success) VALUES (?1, ?2, ?3) \
                       ON CONFLICT (name_key, addr) DO UPDATE SET last_success = excluded.last_success"
);

sql!(
    /// The newest migration applied (readiness, `config check --online`).
    SCHEMA_VERSION = "SELECT max(version) FROM schema_migrations"
);

/// Whether the database (on PostgreSQL, its `search_path`) has Strongroom's
/// migrations table: a store is there.
pub(crate) static HAS_STORE: LazyLock<Sql> = LazyLock::new(|| {
    Sql::dialects(
        "SELECT count(*) = 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'",
        "SELECT to_regclass('schema_migrations') IS NOT NULL",
    )
});

// ------------------------------------------------------------------ the event log

sql!(
    /// The event chain's head, locked until the transaction ends.
    EVENT_HEAD = "SELECT seq, hash FROM event_head WHERE id = 1 FOR UPDATE"
);

sql!(
    /// The head, unlocked (readers).
    READ_EVENT_HEAD = "SELECT seq, hash FROM event_head WHERE id = 1"
);

sql!(INSERT_EVENT = EVENT_ROWS.insert());

sql!(
    /// The head moves to `?1`, `?2`.
    MOVE_HEAD = "UPDATE event_head SET seq = ?1, hash = ?2 WHERE id = 1"
);

sql!(
    /// The last archived event's sequence number and hash, if any (`codec::head`).
    EVENT_CHECKPOINT = "SELECT seq, hash FROM event_checkpoint WHERE id = 1"
);

sql!(
    /// The checkpoint moves to event `?1` (hash `?2`) if it is at `?3` now (0: none yet) and
    /// that event is stored with that hash.
    MOVE_CHECKPOINT = "INSERT INTO event_checkpoint (id, seq, hash) \
                       SELECT 1, ?1, ?2 WHERE EXISTS (SELECT 1 FROM events WHERE seq = ?1 AND hash = ?2) \
                       AND ?3 = coalesce((SELECT seq FROM event_checkpoint WHERE id = 1), 0) \
                       ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash WHERE event_checkpoint.seq = ?3"
);

sql!(
    /// The newest event written before `?1` (`codec::head`); `at`'s index
    /// finds it, however many newer events there are.
    EVENT_CUT = "SELECT seq, hash FROM events WHERE seq = (SELECT max(seq) FROM events WHERE at < ?1)"
);

sql!(
    /// The events after `?1` up to and including `?2`, archived away.
    DELETE_ARCHIVED = "DELETE FROM events WHERE seq > ?1 AND seq <= ?2"
);

/// The events [`EVENTS`] selects, in `order` of their sequence numbers,
/// with `object_id` the dialect's reading of `events.object` as a VaultID.
fn events(object_id: &str, order: &str) -> String {
    format!(
        "SELECT {}, (SELECT min(o.owner) FROM vault_owners o WHERE events.kind LIKE 'vault.%' AND o.vault_id = {object_id}) \
         FROM events \
         WHERE (?1::BIGINT IS NULL OR at >= ?1) AND (?2::BIGINT IS NULL OR at < ?2) AND (?3::TEXT IS NULL OR kind = ?3) \
         AND (?4::TEXT IS NULL OR identity = ?4) AND (?5::TEXT IS NULL OR object = ?5) AND seq > coalesce(?6::BIGINT, 0) \
         AND (?8::BIGINT IS NULL OR seq < ?8) AND (?13::TEXT IS NULL OR detail = ?13) \
         AND (?14::TEXT IS NULL OR (',' || ?14 || ',') LIKE ('%,' || kind || ',%')) \
         AND (?11::TEXT IS NULL OR {component}) AND {} ORDER BY seq {order} LIMIT ?7 OFFSET ?12",
        EVENT_ROWS.column_list(),
        visible_to("?9::TEXT", "?10::TEXT", object_id),
        component = in_component("?11::TEXT", object_id),
    )
}

/// The events at or below folder key `key` (a parameter): a `vault.*`
/// event whose entry has an owner there or below, any other whose object,
/// lower-cased, is that folder or one below it.
fn in_component(key: &str, object_id: &str) -> String {
    format!(
        "(CASE WHEN events.kind LIKE 'vault.%' THEN EXISTS (SELECT 1 FROM vault_owners o WHERE o.vault_id = {object_id} \
         AND (o.owner_key = {key} OR substr(o.owner_key, 1, length({key}) + 1) = {key} || '\\')) \
         ELSE (lower(events.object) = {key} OR substr(lower(events.object), 1, length({key}) + 1) = {key} || '\\') END)"
    )
}

/// [`EVENTS`] or [`EVENTS_NEWEST_FIRST`] in both dialects.
fn events_in(order: &str) -> Sql {
    Sql::dialects(
        &events("CAST(events.object AS INTEGER)", order),
        // A VaultID is at most 19 digits; anything else is no entry.
        &events("(CASE WHEN events.object ~ '^[0-9]{1,18}$' THEN events.object::BIGINT END)", order),
    )
}

/// `?1` since, `?2` until, `?3` kind, `?4` identity, `?5` object, `?6` after
/// seq, `?7` limit, `?8` before seq, `?9` and `?10` the viewer's identity
/// and user id, `?11` a folder key (see `in_component`), `?12` offset,
/// `?13` detail, `?14` kinds (comma-separated): the oldest first. Each row
/// is an event and the first owner folder of the entry a `vault.*` event names.
pub(crate) static EVENTS: LazyLock<Sql> = LazyLock::new(|| events_in("ASC"));

/// [`EVENTS`], the newest first.
pub(crate) static EVENTS_NEWEST_FIRST: LazyLock<Sql> = LazyLock::new(|| events_in("DESC"));

/// What `purge` deletes, each with `?1` the time before which things ended.
pub(crate) static PURGE: LazyLock<[Sql; 3]> = LazyLock::new(|| {
    [
        Sql::new("DELETE FROM device_codes WHERE expires_at < ?1"),
        Sql::new("DELETE FROM grants WHERE refresh_until < ?1"),
        Sql::new("DELETE FROM throttle WHERE window_start < ?1 AND (locked_until IS NULL OR locked_until < ?1)"),
    ]
});

sql!(
    /// JWT replay records whose token expired before `?1`: an expired token is refused by its
    /// claims, so its record has nothing left to stop.
    PURGE_REPLAYS = "DELETE FROM jwt_replay WHERE expires_at < ?1"
);

sql!(
    /// Sign-in origins not seen since `?1`.
    FORGET_ORIGINS = "DELETE FROM sign_in_origins WHERE last_success < ?1"
);

// ------------------------------------------------------------------ the vault

sql!(
    /// May user `?2` (grant `?1`) write entry `?3`: Write on one of its owners, which must exist.
    MAY_WRITE_ENTRY = format!("SELECT {}", may_write_entry("?1", "?2", "?3"))
);

sql!(
    /// May user `?2` (grant `?1`) write in folder key `?3`.
    MAY_WRITE_FOLDER = format!("SELECT {}", may_write("?1", "?2", &covers("?3")))
);

sql!(
    /// May user `?1` still change the permissions of folder key `?2`: enabled,
    /// and a Master Admin or holding ManagePermissions there or above it
    /// (granted to them or to a group they are a member of now).
    MAY_MANAGE_FOLDER = format!(
        "SELECT EXISTS (SELECT 1 FROM users u WHERE u.id = ?1 AND NOT u.disabled \
         AND (u.master_admin OR EXISTS (SELECT 1 FROM {held} r WHERE (r.rights & {manage}) <> 0 AND {})))",
        covers("?2"),
        held = held_rights("u.id"),
        manage = Rights::MANAGE_PERMISSIONS.bits()
    )
);

sql!(
    /// Is user `?2` (grant `?1`) still a Master Admin with a grant that stands.
    IS_MASTER_ADMIN = format!("SELECT EXISTS (SELECT 1 {} AND u.master_admin)", grant_stands("?1", "?2"))
);

sql!(
    /// The rights user `?1` holds, granted to them or to a group of theirs: folder key, rights.
    RIGHTS_OF = format!("SELECT r.path_key, r.rights FROM {} r ORDER BY r.path_key", held_rights("?1"))
);

sql!(
    /// The newest data key of each named key.
    CURRENT_KEYS = "SELECT key_name, max(id) FROM data_keys GROUP BY key_name ORDER BY key_name"
);

sql!(
    /// Entry `?1` (`codec::entry`).
    ENTRY = format!("SELECT {} FROM vault_entries WHERE vault_id = ?1", schema::VAULT_ENTRIES.column_list())
);

sql!(ENTRY_EXISTS = "SELECT 1 FROM vault_entries WHERE vault_id = ?1");

sql!(
    /// Entry `?1`'s owners, in key order.
    OWNERS = "SELECT owner FROM vault_owners WHERE vault_id = ?1 ORDER BY owner_key"
);

sql!(FOLDER_EXISTS = "SELECT 1 FROM folders WHERE path_key = ?1");

sql!(
    /// Every data key, oldest first.
    DATA_KEYS_ALL = format!("SELECT {} FROM data_keys ORDER BY id", DATA_KEYS.column_list())
);

sql!(INSERT_DATA_KEY = DATA_KEYS.insert());

/// The next VaultID: SQLite counts in a table, PostgreSQL in a sequence.
pub(crate) static ALLOCATE_VAULT_ID: LazyLock<Sql> = LazyLock::new(|| {
    Sql::dialects("UPDATE vault_id_seq SET next = next + 1 WHERE id = 1 RETURNING next - 1", "SELECT nextval('vault_id_seq')")
});

sql!(INSERT_ENTRY = schema::VAULT_ENTRIES.insert());

sql!(
    /// An owner of an entry (`codec::owner_row`); no change if it already is one.
    INSERT_OWNER = format!("{} ON CONFLICT DO NOTHING", schema::VAULT_OWNERS.insert())
);

sql!(
    /// `?1` type, `?2` owner key, `?3` only entries without owners.
    VAULT_IDS = "SELECT e.vault_id FROM vault_entries e \
                 WHERE (?1::INTEGER IS NULL OR e.vault_type = ?1) \
                 AND (?2::TEXT IS NULL OR EXISTS (SELECT 1 FROM vault_owners o WHERE o.vault_id = e.vault_id AND o.owner_key = ?2)) \
                 AND (NOT ?3 OR NOT EXISTS (SELECT 1 FROM vault_owners o WHERE o.vault_id = e.vault_id)) \
                 ORDER BY e.vault_id"
);

sql!(
    /// Entry `?2` becomes type `?1`.
    MUTATE_ENTRY = "UPDATE vault_entries SET vault_type = ?1 WHERE vault_id = ?2"
);

sql!(
    /// The entries folder key `?1` owns (only entry `?2`, if given), locked.
    OWNED_BY = "SELECT vault_id FROM vault_owners WHERE owner_key = ?1 AND (?2::BIGINT IS NULL OR vault_id = ?2) ORDER BY vault_id FOR UPDATE"
);

sql!(
    /// Folder key `?2` no longer owns entry `?1`.
    DELETE_OWNER = "DELETE FROM vault_owners WHERE vault_id = ?1 AND owner_key = ?2"
);

sql!(OWNER_COUNT = "SELECT count(*) FROM vault_owners WHERE vault_id = ?1");

sql!(DELETE_ENTRY = "DELETE FROM vault_entries WHERE vault_id = ?1");

sql!(KEY_NAMES_IN_USE = "SELECT key_name, count(*) FROM vault_entries GROUP BY key_name ORDER BY key_name");

sql!(
    /// Entry `?1`'s associations by name (`codec::association`).
    ASSOCIATIONS_OF = format!("SELECT {} FROM associations WHERE vault_id = ?1 ORDER BY name", ASSOCIATIONS.column_list())
);

sql!(
    /// The lookup hash of association `?2` of entry `?1`.
    ASSOCIATION_LOOKUP = "SELECT lookup FROM associations WHERE vault_id = ?1 AND name = ?2"
);

sql!(
    /// Stores an association (`codec::association_row`), replacing one of that name.
    PUT_ASSOCIATION = format!(
        "{} ON CONFLICT (vault_id, name) DO UPDATE SET value_type = excluded.value_type, key_id = excluded.key_id, \
         sealed = excluded.sealed, lookup = excluded.lookup",
        ASSOCIATIONS.insert()
    )
);

sql!(
    /// Entry `?1`'s associations: all, those named `?2`, or the one with hash `?3`.
    DISSOCIATE = "DELETE FROM associations WHERE vault_id = ?1 AND (?2::TEXT IS NULL OR name = ?2) AND (?3::BYTEA IS NULL OR lookup = ?3)"
);

sql!(
    /// Entries with association `?1`, with their owners (and each owner's
    /// key, the order they come in: a batched read orders by what it answers).
    LOOKUP_BY_ASSOCIATION = "SELECT a.vault_id, o.owner, o.owner_key FROM associations a LEFT JOIN vault_owners o ON o.vault_id = a.vault_id \
                             WHERE a.name = ?1 ORDER BY a.vault_id, o.owner_key"
);

sql!(
    /// Entries with association `?1` of hash `?2`, with their owners and
    /// their keys, as [`LOOKUP_BY_ASSOCIATION`] (the index
    /// `associations_lookup` on both).
    LOOKUP_BY_ASSOCIATION_VALUE = "SELECT a.vault_id, o.owner, o.owner_key FROM associations a LEFT JOIN vault_owners o ON o.vault_id = a.vault_id \
                                   WHERE a.name = ?1 AND a.lookup = ?2 ORDER BY a.vault_id, o.owner_key"
);

sql!(
    /// Up to `?2` entries under named key `?3` not under data key `?1` (`codec::sealed_data`).
    DATA_ON_OLD_KEYS = "SELECT vault_id, key_id, sealed FROM vault_entries WHERE key_id <> ?1 AND lower(key_name) = lower(?3) \
                        ORDER BY vault_id LIMIT ?2"
);

sql!(
    /// Up to `?2` associations of entries under named key `?3` not under data key `?1`.
    ASSOCIATIONS_ON_OLD_KEYS = format!(
        "SELECT {} FROM associations a JOIN vault_entries e ON e.vault_id = a.vault_id \
         WHERE a.key_id <> ?1 AND lower(e.key_name) = lower(?3) ORDER BY a.vault_id, a.name LIMIT ?2",
        ASSOCIATIONS.cols("a")
    )
);

sql!(
    /// Up to `?3` entries under named key `?1` above VaultID `?2` (`codec::sealed_data`).
    ENTRIES_UNDER_KEY = "SELECT vault_id, key_id, sealed FROM vault_entries WHERE lower(key_name) = lower(?1) AND vault_id > ?2 \
                         ORDER BY vault_id LIMIT ?3"
);

sql!(
    /// Entry `?3`'s data sealed again (`?1` data key, `?2` sealed), if it is
    /// still the ciphertext `?5` under data key `?4` that was read: a value
    /// written meanwhile is never overwritten with an older one.
    RESEAL_DATA = "UPDATE vault_entries SET key_id = ?1, sealed = ?2 WHERE vault_id = ?3 AND key_id = ?4 AND sealed = ?5"
);

sql!(
    /// Association `?4` of entry `?3` sealed again, as [`RESEAL_DATA`] (`?5`
    /// data key and `?6` ciphertext read).
    RESEAL_ASSOCIATION =
        "UPDATE associations SET key_id = ?1, sealed = ?2 WHERE vault_id = ?3 AND name = ?4 AND key_id = ?5 AND sealed = ?6"
);

sql!(
    /// Entry `?4` moved under named key `?1`, its data sealed again (`?2`
    /// data key, `?3` sealed), if it is still `?6` under data key `?5`.
    REKEY_DATA =
        "UPDATE vault_entries SET key_name = ?1, key_id = ?2, sealed = ?3 WHERE vault_id = ?4 AND key_id = ?5 AND sealed = ?6"
);

sql!(
    /// Whether association `?2` of entry `?1` is still ciphertext `?4` under data key `?3`.
    ASSOCIATION_UNCHANGED =
        "SELECT EXISTS (SELECT 1 FROM associations WHERE vault_id = ?1 AND name = ?2 AND key_id = ?3 AND sealed = ?4)"
);

sql!(
    /// How many associations entry `?1` has.
    ASSOCIATION_COUNT = "SELECT count(*) FROM associations WHERE vault_id = ?1"
);

// ------------------------------------------------------------------ administration

sql!(
    /// The master key's check value `?1`, recorded at `?2` unless one is.
    RECORD_KEY_CHECK = "INSERT INTO master_key_check (id, digest, recorded_at) VALUES (1, ?1, ?2) ON CONFLICT (id) DO NOTHING"
);

sql!(KEY_CHECK = "SELECT digest FROM master_key_check WHERE id = 1");

sql!(INSERT_USER = USERS.insert());

sql!(USER_BY_ID = format!("SELECT {} FROM users u WHERE u.id = ?1", USERS.cols("u")));

sql!(LIST_USERS = format!("SELECT {} FROM users u ORDER BY u.name_key", USERS.cols("u")));

sql!(
    /// The id of the user named `?1` (lower-cased), its row locked.
    USER_ID_OF = "SELECT id FROM users WHERE name_key = ?1 FOR UPDATE"
);

sql!(SET_USER_DISABLED = "UPDATE users SET disabled = ?1 WHERE id = ?2");

sql!(SET_USER_MASTER_ADMIN = "UPDATE users SET master_admin = ?1 WHERE id = ?2 AND master_admin <> ?1");

sql!(SET_USER_PASSWORD = "UPDATE users SET password_hash = ?1 WHERE id = ?2");

sql!(USER_EXISTS = "SELECT 1 FROM users WHERE id = ?1");

sql!(
    /// User `?1`'s console epoch (no row: 0).
    CONSOLE_EPOCH = "SELECT epoch FROM console_epochs WHERE user_id = ?1"
);

sql!(
    /// Moves user `?1`'s console epoch on by one: every console session of theirs ends.
    END_CONSOLE_SESSIONS = "INSERT INTO console_epochs (user_id, epoch) VALUES (?1, 1) \
         ON CONFLICT (user_id) DO UPDATE SET epoch = console_epochs.epoch + 1"
);

sql!(
    /// Revokes every live grant of user `?2` at `?1`.
    REVOKE_USER_GRANTS = "UPDATE grants SET revoked_at = ?1, version = version + 1 WHERE user_id = ?2 AND revoked_at IS NULL"
);

sql!(
    /// Device codes user `?1` approved that were not redeemed become denied.
    DENY_USER_APPROVALS = "UPDATE device_codes SET state = 'denied', version = version + 1 WHERE user_id = ?1 AND state = 'approved'"
);

sql!(
    /// Guessing locks in force at `?1`: (user name, until), by name.
    LOCKS = "SELECT subject, max(locked_until) FROM throttle WHERE subject IS NOT NULL AND locked_until > ?1 \
             GROUP BY subject ORDER BY subject"
);

sql!(
    /// Clears every counter limiting guesses against user name `?1`.
    UNLOCK = "DELETE FROM throttle WHERE subject = ?1"
);

sql!(
    /// Forgets the addresses user name `?1` signed in from.
    FORGET_NAME_ORIGINS = "DELETE FROM sign_in_origins WHERE name_key = ?1"
);

/// The grants not revoked yet whose `column` is `?1`, oldest first.
fn live_grants(column: &str) -> String {
    format!("SELECT id FROM grants WHERE {column} = ?1 AND revoked_at IS NULL ORDER BY created_at, id")
}

sql!(USER_LIVE_GRANTS = live_grants("user_id"));

sql!(CLIENT_LIVE_GRANTS = live_grants("client_id"));

sql!(
    /// The live grants of integration `?1` that it no longer lets stand: all of them while it is
    /// disabled, else those of users no longer on its allow-list (directly, through a group, or
    /// as a machine identity of one of its mappings).
    CLIENT_STOPPED_GRANTS = format!(
        "SELECT g.id FROM grants g JOIN integrations i ON i.client_id = g.client_id \
         WHERE g.client_id = ?1 AND g.revoked_at IS NULL AND (i.disabled OR NOT {}) ORDER BY g.created_at, g.id",
        allowed("g.client_id", "g.user_id")
    )
);

sql!(
    /// Device codes user `?1` approved that were not exchanged.
    DROP_USER_APPROVALS = "DELETE FROM device_codes WHERE user_id = ?1 AND state = 'approved'"
);

sql!(
    /// Device codes of integration `?1` still pending or approved.
    DROP_CLIENT_CODES = "DELETE FROM device_codes WHERE client_id = ?1 AND state IN ('pending', 'approved')"
);

sql!(USER_RIGHTS_COUNT = "SELECT count(*) FROM folder_rights WHERE user_id = ?1");

sql!(
    /// Deletes user `?1`; their grants, rights and places on
    /// integrations' lists go with them (`ON DELETE CASCADE`).
    DELETE_USER = "DELETE FROM users WHERE id = ?1"
);

sql!(INSERT_INTEGRATION = schema::INTEGRATIONS.insert());

sql!(
    /// Every field of integration `?1` from its row (`codec::integration_row`),
    /// but its creation time, which stays, if the row is still at the
    /// version the row names, which moves on by one (every parameter is
    /// used, so that PostgreSQL knows each one's type).
    UPDATE_INTEGRATION = {
        let mut at_version = String::new();
        let set: Vec<String> = schema::INTEGRATIONS
            .columns
            .iter()
            .enumerate()
            .skip(1)
            .map(|(k, (c, _))| match *c {
                "created_at" => format!("{c} = coalesce({c}, ?{})", k + 1),
                "version" => {
                    at_version = format!(" AND version = ?{}", k + 1);
                    "version = version + 1".to_owned()
                }
                _ => format!("{c} = ?{}", k + 1),
            })
            .collect();
        format!("UPDATE integrations SET {} WHERE client_id = ?1{at_version}", set.join(", "))
    }
);

sql!(INTEGRATION = format!("SELECT {} FROM integrations WHERE client_id = ?1", schema::INTEGRATIONS.column_list()));

sql!(LIST_INTEGRATIONS = format!("SELECT {} FROM integrations ORDER BY client_id", schema::INTEGRATIONS.column_list()));

sql!(ALLOWED_USERS = "SELECT user_id FROM integration_users WHERE client_id = ?1 ORDER BY user_id");

sql!(CLEAR_ALLOWED_USERS = "DELETE FROM integration_users WHERE client_id = ?1");

sql!(ALLOW_USER = schema::INTEGRATION_USERS.insert());

sql!(
    /// Deletes integration `?1`; its grants and its device
    /// codes go with it (`ON DELETE CASCADE`).
    DELETE_INTEGRATION = "DELETE FROM integrations WHERE client_id = ?1"
);

sql!(
    /// Every grant (`?1`) or only the live ones at `?2`, with its user's name.
    LIST_GRANTS = format!(
        "SELECT {}, coalesce(u.name, '') FROM grants g LEFT JOIN users u ON u.id = g.user_id \
         WHERE ?1 OR (g.revoked_at IS NULL AND g.refresh_until > ?2) ORDER BY g.created_at, g.id",
        GRANTS.cols("g")
    )
);

sql!(
    /// User `?1`'s live grants at `?2`, oldest first, with their application's name.
    APPROVED_GRANTS = format!(
        "SELECT {}, coalesce(i.name, g.client_id) FROM grants g LEFT JOIN integrations i ON i.client_id = g.client_id \
         WHERE g.user_id = ?1 AND g.revoked_at IS NULL AND g.refresh_until > ?2 ORDER BY g.created_at, g.id",
        GRANTS.cols("g")
    )
);

sql!(
    /// A folder (`codec::folder_row`), unless it exists.
    CREATE_FOLDER = format!("{} ON CONFLICT (path_key) DO NOTHING", schema::FOLDERS.insert())
);

sql!(FOLDERS = "SELECT path FROM folders ORDER BY path_key");

sql!(
    /// User `?2`'s rights `?3` on folder key `?1`.
    SET_RIGHTS = "INSERT INTO folder_rights (path_key, user_id, rights) VALUES (?1, ?2, ?3) \
                  ON CONFLICT (path_key, user_id) DO UPDATE SET rights = excluded.rights"
);

sql!(DELETE_RIGHTS = "DELETE FROM folder_rights WHERE path_key = ?1 AND user_id = ?2");

/// Folder key `?1` and every folder below it (`?2`: the key and a backslash).
const SUBTREE: &str = "(path_key = ?1 OR substr(path_key, 1, length(?2::TEXT)) = ?2::TEXT)";

sql!(SUBTREE_FOLDERS = format!("SELECT count(*) FROM folders WHERE {SUBTREE}"));

sql!(
    /// The entries a folder of the subtree owns.
    SUBTREE_ENTRIES = format!(
        "SELECT DISTINCT vault_id FROM vault_owners WHERE owner_key IN (SELECT path_key FROM folders WHERE {SUBTREE}) ORDER BY vault_id"
    )
);

sql!(DELETE_SUBTREE_OWNERS = format!("DELETE FROM vault_owners WHERE owner_key IN (SELECT path_key FROM folders WHERE {SUBTREE})"));

sql!(SUBTREE_RIGHTS_COUNT = format!("SELECT count(*) FROM folder_rights WHERE path_key IN (SELECT path_key FROM folders WHERE {SUBTREE})"));

sql!(
    /// Deletes the subtree's folders; the rights on them go with them (`ON DELETE CASCADE`).
    DELETE_SUBTREE = format!("DELETE FROM folders WHERE {SUBTREE}")
);

sql!(
    /// Every grant of rights: folder, user or group name, rights, whether a group's.
    ALL_RIGHTS = "SELECT f.path, u.name, r.rights, false FROM folder_rights r JOIN folders f ON f.path_key = r.path_key \
                  JOIN users u ON u.id = r.user_id UNION ALL \
                  SELECT f.path, g.name, r.rights, true FROM group_rights r JOIN folders f ON f.path_key = r.path_key \
                  JOIN groups g ON g.id = r.group_id ORDER BY 1, 4, 2"
);

// ------------------------------------------------------------------ groups

sql!(INSERT_GROUP = schema::GROUPS.insert());

sql!(
    /// A directory group (`codec::group_row`), unless one of its name exists.
    INSERT_GROUP_IF_NEW = format!("{} ON CONFLICT (name_key) DO NOTHING", schema::GROUPS.insert())
);

sql!(
    /// Frees user name key `?1` from any user but `?2` (a directory account
    /// deleted and made again under the same name gets a new id): the old
    /// row keeps its grants' history under `name~id`.
    FREE_USER_NAME = "UPDATE users SET name = name || '~' || id, name_key = name_key || '~' || id WHERE name_key = ?1 AND id <> ?2"
);

sql!(
    /// Directory user `?3` as it vouches for them now: name `?1` (key
    /// `?2`), signed in (or looked up) at `?4`.
    SYNC_USER = "UPDATE users SET name = ?1, name_key = ?2, signed_in_at = ?4 WHERE id = ?3"
);

sql!(GROUP_BY_NAME = format!("SELECT {} FROM groups WHERE name_key = ?1", schema::GROUPS.column_list()));

sql!(GROUP_BY_ID = format!("SELECT {} FROM groups WHERE id = ?1", schema::GROUPS.column_list()));

sql!(
    /// Every group, with its member count.
    LIST_GROUPS = format!(
        "SELECT {}, (SELECT count(*) FROM group_members m WHERE m.group_id = g.id) FROM groups g ORDER BY g.name_key",
        schema::GROUPS.cols("g")
    )
);

sql!(
    /// Deletes group `?1`; its members, rights and places on integrations go with it (`ON DELETE CASCADE`).
    DELETE_GROUP = "DELETE FROM groups WHERE id = ?1"
);

sql!(GROUP_RIGHTS_COUNT = "SELECT count(*) FROM group_rights WHERE group_id = ?1");

sql!(
    /// User `?2` joins group `?1`, unless a member already.
    ADD_MEMBER = format!("{} ON CONFLICT (group_id, user_id) DO NOTHING", schema::GROUP_MEMBERS.insert())
);

sql!(REMOVE_MEMBER = "DELETE FROM group_members WHERE group_id = ?1 AND user_id = ?2");

sql!(
    /// The members of group `?1`, by name.
    MEMBERS_OF = format!(
        "SELECT {} FROM group_members m JOIN users u ON u.id = m.user_id WHERE m.group_id = ?1 ORDER BY u.name_key",
        USERS.cols("u")
    )
);

sql!(
    /// The groups user `?1` is a member of, by name.
    GROUPS_OF = format!(
        "SELECT {} FROM group_members m JOIN groups g ON g.id = m.group_id WHERE m.user_id = ?1 ORDER BY g.name_key",
        schema::GROUPS.cols("g")
    )
);

sql!(
    /// Group `?2`'s rights `?3` on folder key `?1`.
    SET_GROUP_RIGHTS = "INSERT INTO group_rights (path_key, group_id, rights) VALUES (?1, ?2, ?3) \
                        ON CONFLICT (path_key, group_id) DO UPDATE SET rights = excluded.rights"
);

sql!(DELETE_GROUP_RIGHTS = "DELETE FROM group_rights WHERE path_key = ?1 AND group_id = ?2");

sql!(
    /// The rights granted to group `?1`: folder key, rights.
    GROUP_RIGHTS_OF = "SELECT path_key, rights FROM group_rights WHERE group_id = ?1 ORDER BY path_key"
);

sql!(ALLOWED_GROUPS = "SELECT group_id FROM integration_groups WHERE client_id = ?1 ORDER BY group_id");

// ------------------------------------------------------------------ the \VED tree

/// A folder as an object: path, GUID, creation (`ops::tree::folder_object`).
const TREE_FOLDER_COLS: &str = "SELECT path, guid, created_at FROM folders";

sql!(TREE_FOLDERS = format!("{TREE_FOLDER_COLS} ORDER BY path_key"));
sql!(TREE_FOLDER = format!("{TREE_FOLDER_COLS} WHERE path_key = ?1"));
sql!(TREE_FOLDER_BY_GUID = format!("{TREE_FOLDER_COLS} WHERE guid = ?1"));

sql!(
    /// The explicit entries on folder key `?1`: users' (kind 1), then groups' (kind 2); id, rights.
    EXPLICIT_RIGHTS = "SELECT 1, user_id, rights FROM folder_rights WHERE path_key = ?1 UNION ALL \
                       SELECT 2, group_id, rights FROM group_rights WHERE path_key = ?1 ORDER BY 1, 2"
);

sql!(
    /// User `?2`'s entry `?3` on folder key `?1`, only if they have none there (a POST).
    CREATE_USER_ENTRY = "INSERT INTO folder_rights (path_key, user_id, rights) VALUES (?1, ?2, ?3) ON CONFLICT (path_key, user_id) DO NOTHING"
);
sql!(
    /// User `?2`'s entry on folder key `?1` replaced by `?3`, only if there is one (a PUT).
    REPLACE_USER_ENTRY = "UPDATE folder_rights SET rights = ?3 WHERE path_key = ?1 AND user_id = ?2"
);
sql!(
    /// Group `?2`'s entry `?3` on folder key `?1`, only if it has none there.
    CREATE_GROUP_ENTRY = "INSERT INTO group_rights (path_key, group_id, rights) VALUES (?1, ?2, ?3) ON CONFLICT (path_key, group_id) DO NOTHING"
);
sql!(
    /// The folders of the subtree of key `?1` (`?2`: the key and a backslash), top first: path, GUID, creation.
    TREE_SUBTREE = format!("{TREE_FOLDER_COLS} WHERE {SUBTREE} ORDER BY path_key")
);
sql!(
    /// A folder's new row (key `?1`, path `?2`, creation `?3`) under a placeholder GUID `?4` while the old row holds the real one.
    INSERT_MOVED_FOLDER = "INSERT INTO folders (path_key, path, created_at, guid) VALUES (?1, ?2, ?3, ?4)"
);
sql!(MOVE_USER_RIGHTS = "UPDATE folder_rights SET path_key = ?2 WHERE path_key = ?1");
sql!(MOVE_GROUP_RIGHTS = "UPDATE group_rights SET path_key = ?2 WHERE path_key = ?1");
sql!(MOVE_OWNERS = "UPDATE vault_owners SET owner_key = ?2, owner = ?3 WHERE owner_key = ?1");
sql!(DELETE_FOLDER_ROW = "DELETE FROM folders WHERE path_key = ?1");
sql!(SET_FOLDER_GUID = "UPDATE folders SET guid = ?2 WHERE path_key = ?1");

sql!(
    /// Group `?2`'s entry on folder key `?1` replaced by `?3`, only if there is one.
    REPLACE_GROUP_ENTRY = "UPDATE group_rights SET rights = ?3 WHERE path_key = ?1 AND group_id = ?2"
);

sql!(CLEAR_ALLOWED_GROUPS = "DELETE FROM integration_groups WHERE client_id = ?1");

sql!(ALLOW_GROUP = schema::INTEGRATION_GROUPS.insert());

sql!(FORGET_OIDC_STATES = "DELETE FROM oidc_states WHERE expires_at <= ?1");

sql!(INSERT_OIDC_STATE = "INSERT INTO oidc_states (state_hash, binding_hash, user_code, expires_at, used) VALUES (?1, ?2, ?3, ?4, false)");

sql!(
    /// Takes state `?1` of browser `?2` at `?3`: once, unexpired.
    TAKE_OIDC_STATE = "UPDATE oidc_states SET used = true WHERE state_hash = ?1 AND binding_hash = ?2 AND NOT used AND expires_at > ?3"
);

sql!(OIDC_STATE_CODE = "SELECT user_code FROM oidc_states WHERE state_hash = ?1");

// ------------------------------------------------------------------ the copier

/// Table `?1`'s columns, as the database has them.
pub(crate) static COLUMNS_OF: LazyLock<Sql> = LazyLock::new(|| {
    Sql::dialects(
        "SELECT name FROM pragma_table_info(?1)",
        "SELECT column_name::TEXT FROM information_schema.columns WHERE table_schema = current_schema() AND table_name::TEXT = ?1::TEXT",
    )
});

/// The VaultID the next allocation answers.
pub(crate) static NEXT_VAULT_ID: LazyLock<Sql> = LazyLock::new(|| {
    Sql::dialects(
        "SELECT next FROM vault_id_seq WHERE id = 1",
        "SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END FROM vault_id_seq",
    )
});

/// The next allocation answers `?1`.
pub(crate) static SET_NEXT_VAULT_ID: LazyLock<Sql> =
    LazyLock::new(|| Sql::dialects("UPDATE vault_id_seq SET next = ?1 WHERE id = 1", "SELECT setval('vault_id_seq', ?1, false)"));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_dialect_gets_its_own_parameters_casts_and_locks() {
        let s = Sql::new("SELECT a FROM t WHERE (?1::BIGINT IS NULL OR a = ?1) AND b = ?12 FOR UPDATE");
        assert_eq!(s.postgres(), "SELECT a FROM t WHERE ($1::BIGINT IS NULL OR a = $1) AND b = $12 FOR UPDATE");
        assert_eq!(s.sqlite(), "SELECT a FROM t WHERE (?1 IS NULL OR a = ?1) AND b = ?12");
        assert!(!ADVANCE_PAIR.postgres().contains('?'));
        assert!(!PUT_ASSOCIATION.postgres().contains('?'));
        assert!(MAY_WRITE_ENTRY.sqlite().contains("& 4"), "Write is bit 4");
        assert!(!EVENTS.sqlite().contains("::") && EVENTS.postgres().contains("$10::TEXT"));
        assert!(!COUNTER.sqlite().contains("FOR UPDATE") && COUNTER.postgres().ends_with("FOR UPDATE"));
    }

    #[test]
    fn the_integration_update_sets_every_column_but_its_key_and_creation_at_the_version_read() {
        assert_eq!(
            UPDATE_INTEGRATION.sqlite(),
            "UPDATE integrations SET name = ?2, max_scope = ?3, allow_all_users = ?4, allow_device = ?5, allow_password = ?6, \
             access_validity = ?7, grant_validity = ?8, refreshable = ?9, device_code_validity = ?10, poll_interval = ?11, \
             disabled = ?12, created_at = coalesce(created_at, ?13), retry_window = ?14, version = version + 1 \
             WHERE client_id = ?1 AND version = ?15",
            "only over the row as it was read, which it moves on"
        );
    }
}

// ------------------------------------------------------------------ machines (JWT and certificate grants)

sql!(
    /// Creates or replaces issuer `?1` (`codec::jwt_issuer_row`); its creation time stays.
    SAVE_JWT_ISSUER = format!(
        "{} ON CONFLICT (name) DO UPDATE SET issuer = excluded.issuer, keys_kind = excluded.keys_kind, \
         keys_source = excluded.keys_source, audiences = excluded.audiences, algorithms = excluded.algorithms, \
         clock_skew = excluded.clock_skew, max_lifetime = excluded.max_lifetime",
        JWT_ISSUERS.insert()
    )
);

sql!(LIST_JWT_ISSUERS = format!("SELECT {} FROM jwt_issuers j ORDER BY j.name", JWT_ISSUERS.cols("j")));

sql!(
    /// The issuer whose `iss` is `?1`.
    JWT_ISSUER_BY_ISS = format!("SELECT {} FROM jwt_issuers j WHERE j.issuer = ?1", JWT_ISSUERS.cols("j"))
);

sql!(
    /// How many mappings use issuer `?1`.
    ISSUER_MAPPINGS = "SELECT COUNT(*) FROM machine_mappings WHERE issuer = ?1"
);

sql!(DELETE_JWT_ISSUER = "DELETE FROM jwt_issuers WHERE name = ?1");

sql!(
    /// Creates or replaces mapping `?1` (`codec::mapping_row`); its creation time stays.
    SAVE_MAPPING = format!(
        "{} ON CONFLICT (name) DO UPDATE SET kind = excluded.kind, issuer = excluded.issuer, conditions = excluded.conditions, \
         identity_from = excluded.identity_from, ca_bundle = excluded.ca_bundle, max_scope = excluded.max_scope",
        MACHINE_MAPPINGS.insert()
    )
);

sql!(CLEAR_MAPPING_CLIENTS = "DELETE FROM mapping_clients WHERE mapping = ?1");

sql!(INSERT_MAPPING_CLIENT = "INSERT INTO mapping_clients (mapping, client_id) VALUES (?1, ?2)");

sql!(
    /// Every mapping (`codec::mapping`), with its client ids after it (NULL when none), by name.
    LIST_MAPPINGS = format!(
        "SELECT {}, mc.client_id FROM machine_mappings m LEFT JOIN mapping_clients mc ON mc.mapping = m.name \
         ORDER BY m.name, mc.client_id",
        MACHINE_MAPPINGS.cols("m")
    )
);

sql!(
    /// The mappings of the issuer whose `iss` is `?1`, as [`LIST_MAPPINGS`].
    ISSUER_MAPPINGS_ROWS = format!(
        "SELECT {}, mc.client_id FROM machine_mappings m JOIN jwt_issuers j ON j.name = m.issuer \
         LEFT JOIN mapping_clients mc ON mc.mapping = m.name WHERE j.issuer = ?1 ORDER BY m.name, mc.client_id",
        MACHINE_MAPPINGS.cols("m")
    )
);

sql!(
    /// Revokes at `?1` the live grants of mapping `?2`'s identities.
    REVOKE_MAPPING_GRANTS = "UPDATE grants SET revoked_at = ?1, version = version + 1 WHERE revoked_at IS NULL \
         AND user_id IN (SELECT user_id FROM machine_users WHERE mapping = ?2)"
);

sql!(DELETE_MAPPING = "DELETE FROM machine_mappings WHERE name = ?1");

sql!(
    /// Records JWT `?2` of issuer `?1`, kept until `?3`: one row (a record
    /// of a JWT that expired before `?4` is taken over). Row count 0: the
    /// JWT was presented before.
    RECORD_JWT = "INSERT INTO jwt_replay (issuer, replay_key, expires_at) VALUES (?1, ?2, ?3) \
         ON CONFLICT (issuer, replay_key) DO UPDATE SET expires_at = excluded.expires_at WHERE jwt_replay.expires_at < ?4"
);

sql!(
    /// Machine user `?1`: whether it is disabled (no row: none).
    MACHINE_USER_DISABLED = "SELECT disabled FROM users WHERE id = ?1"
);

sql!(
    /// A machine identity's user row (`codec::user_row` with an unusable password hash), unless its
    /// id or name is taken.
    INSERT_MACHINE_USER = format!("{} ON CONFLICT DO NOTHING", USERS.insert())
);

sql!(INSERT_MACHINE_LINK = "INSERT INTO machine_users (user_id, mapping) VALUES (?1, ?2) ON CONFLICT (user_id) DO NOTHING");

// ------------------------------------------------------------------ certificates

sql!(
    /// May user `?2` (grant `?1`) act on folder key `?3` with right bits `?4`: the grant stands, and a
    /// Master Admin, or one of the bits granted there or above (to them or a group of theirs now).
    MAY_HOLD = format!(
        "SELECT EXISTS (SELECT 1 {} AND (u.master_admin OR EXISTS (SELECT 1 FROM {held} r WHERE (r.rights & ?4::BIGINT) <> 0 AND {})))",
        grant_stands("?1", "?2"),
        covers("?3"),
        held = held_rights("u.id")
    )
);

sql!(CAS = format!("SELECT {} FROM cert_authorities ORDER BY name_key", schema::CERT_AUTHORITIES.column_list()));
sql!(INSERT_CA = format!("{} ON CONFLICT (name_key) DO NOTHING", schema::CERT_AUTHORITIES.insert()));
sql!(SET_CA_CERT = "UPDATE cert_authorities SET cert_der = ?2 WHERE name_key = ?1 AND cert_der = ?3");
sql!(CERT_POLICIES = "SELECT p.path_key, p.policy FROM cert_policies p JOIN folders f ON f.path_key = p.path_key ORDER BY p.path_key");
sql!(
    SET_CERT_POLICY = "INSERT INTO cert_policies (path_key, policy) VALUES (?1, ?2) \
                       ON CONFLICT (path_key) DO UPDATE SET policy = excluded.policy"
);
sql!(CLEAR_CERT_POLICY = "DELETE FROM cert_policies WHERE path_key = ?1");
sql!(ADD_CERT_POLICY = "INSERT INTO cert_policies (path_key, policy) VALUES (?1, ?2) ON CONFLICT (path_key) DO NOTHING");
sql!(REPLACE_CERT_POLICY = "UPDATE cert_policies SET policy = ?2 WHERE path_key = ?1 AND policy = ?3");
sql!(DROP_CERT_POLICY = "DELETE FROM cert_policies WHERE path_key = ?1 AND policy = ?2");

/// A certificate object's columns: its folder's path and GUID, then its row after the key.
const CERT_COLS: &str = "SELECT f.path, f.guid, c.ca_key, c.cn, c.sans, c.serial, c.thumbprint, c.valid_from, c.valid_to, \
     c.cert_vault_id, c.key_vault_id, c.csr_vault_id, c.disabled, c.revoked, c.version, c.created_at, c.issued_at, \
     c.template FROM certificates c JOIN folders f ON f.path_key = c.path_key";
sql!(CERTIFICATES = format!("{CERT_COLS} ORDER BY c.path_key"));
sql!(CERTIFICATE = format!("{CERT_COLS} WHERE c.path_key = ?1"));
sql!(
    /// A certificate object's row, replacing the DN's previous one (its creation and version carried on).
    UPSERT_CERTIFICATE = format!(
        "{} ON CONFLICT (path_key) DO UPDATE SET ca_key = excluded.ca_key, cn = excluded.cn, sans = excluded.sans, \
         serial = excluded.serial, thumbprint = excluded.thumbprint, valid_from = excluded.valid_from, valid_to = excluded.valid_to, \
         cert_vault_id = excluded.cert_vault_id, key_vault_id = excluded.key_vault_id, csr_vault_id = excluded.csr_vault_id, \
         disabled = excluded.disabled, revoked = excluded.revoked, version = certificates.version + 1, issued_at = excluded.issued_at, \
         template = excluded.template",
        schema::CERTIFICATES.insert()
    )
);
sql!(
    /// Archives the current certificate, key and CSR entries owned by folder key `?1` (the product's overlay bit 2^30).
    ARCHIVE_CERT_ENTRIES = "UPDATE vault_entries SET vault_type = vault_type + 1073741824 WHERE vault_type IN (2, 256, 512) \
                            AND vault_id IN (SELECT vault_id FROM vault_owners WHERE owner_key = ?1)"
);
sql!(
    /// A certificate object's row for a request waiting for approval, unless the DN has one.
    INSERT_CERT_PLACEHOLDER = format!("{} ON CONFLICT (path_key) DO NOTHING", schema::CERTIFICATES.insert())
);
sql!(SET_CA_APPROVAL = "UPDATE cert_authorities SET manual_approval = ?2 WHERE name_key = ?1");
/// A waiting (or rejected) request's columns: its object's path and GUID, then its row after the key.
const PENDING_COLS: &str = "SELECT f.path, f.guid, p.ca_key, p.request, p.renewal, p.requested_by, p.requested_at, p.rejected, \
     p.status, p.version FROM cert_pending p JOIN folders f ON f.path_key = p.path_key";
sql!(PENDING_CERTS = format!("{PENDING_COLS} ORDER BY p.requested_at, p.path_key"));
sql!(PENDING_CERT = format!("{PENDING_COLS} WHERE p.path_key = ?1"));
sql!(
    /// A request set waiting, replacing the DN's previous waiting or rejected one (its version moved on).
    UPSERT_PENDING = format!(
        "{} ON CONFLICT (path_key) DO UPDATE SET ca_key = excluded.ca_key, request = excluded.request, \
         renewal = excluded.renewal, requested_by = excluded.requested_by, requested_at = excluded.requested_at, \
         rejected = excluded.rejected, status = excluded.status, version = cert_pending.version + 1",
        schema::CERT_PENDING.insert()
    )
);
sql!(
    /// The approval's conditional write: the request `?1` still waiting at version `?2`.
    TAKE_PENDING = "DELETE FROM cert_pending WHERE path_key = ?1 AND version = ?2 AND NOT rejected"
);
sql!(CLEAR_PENDING = "DELETE FROM cert_pending WHERE path_key = ?1");
sql!(
    /// Rejects (`?3` true) or sets waiting again (`?3` false) the request `?1` still at version `?2`.
    SET_PENDING = "UPDATE cert_pending SET rejected = ?3, status = ?4, version = version + 1 WHERE path_key = ?1 AND version = ?2"
);
sql!(INSERT_REVOCATION = format!("{} ON CONFLICT (ca_key, serial) DO NOTHING", schema::CERT_REVOCATIONS.insert()));
sql!(MARK_REVOKED = "UPDATE certificates SET revoked = ?2, disabled = (disabled OR ?3) WHERE path_key = ?1 AND serial = ?4");
sql!(
    REVOCATIONS = "SELECT ca_key, serial, revoked_at, reason, not_after FROM cert_revocations \
                   WHERE ca_key = ?1 AND not_after > ?2 ORDER BY revoked_at, serial"
);
sql!(
    /// Revocations of certificates that ended before `?1`, every CA's.
    PURGE_REVOCATIONS = "DELETE FROM cert_revocations WHERE not_after < ?1"
);
sql!(SET_CERT_DISABLED = "UPDATE certificates SET disabled = ?2 WHERE path_key = ?1");
sql!(DELETE_CERTIFICATE = "DELETE FROM certificates WHERE path_key = ?1");
sql!(CERT_OWNED = "SELECT vault_id FROM vault_owners WHERE owner_key = ?1 ORDER BY vault_id");
sql!(DELETE_OWNED_BY = "DELETE FROM vault_owners WHERE owner_key = ?1");
sql!(
    DELETE_ORPHAN_ENTRY =
        "DELETE FROM vault_entries WHERE vault_id = ?1 AND NOT EXISTS (SELECT 1 FROM vault_owners o WHERE o.vault_id = ?1)"
);
sql!(
    /// Folder key `?1`, unless another folder lies below it.
    DELETE_LEAF_FOLDER = "DELETE FROM folders WHERE path_key = ?1 AND NOT EXISTS \
                          (SELECT 1 FROM folders b WHERE substr(b.path_key, 1, length(?1::TEXT) + 1) = ?1::TEXT || '\\')"
);
sql!(
    /// The entries owned by folder key `?1` (`codec::entry`), oldest first.
    CERT_ENTRIES = format!(
        "SELECT {} FROM vault_entries e JOIN vault_owners o ON o.vault_id = e.vault_id WHERE o.owner_key = ?1 ORDER BY e.vault_id",
        schema::VAULT_ENTRIES.cols("e")
    )
);

sql!(CERT_FIELDS = format!("SELECT {} FROM cert_fields ORDER BY name_key", schema::CERT_FIELDS.column_list()));
sql!(
    /// A field definition, unless its GUID or its name (any case) is taken.
    INSERT_CERT_FIELD = format!("{} ON CONFLICT DO NOTHING", schema::CERT_FIELDS.insert())
);
sql!(
    /// The values of field `?1` (by name key) on every object.
    DELETE_FIELD_VALUES = "DELETE FROM cert_field_values WHERE field_guid IN (SELECT guid FROM cert_fields WHERE name_key = ?1)"
);
sql!(DELETE_CERT_FIELD = "DELETE FROM cert_fields WHERE name_key = ?1");
sql!(CERT_FIELD_VALUES = "SELECT field_guid, vals FROM cert_field_values WHERE path_key = ?1 ORDER BY field_guid");
sql!(
    /// Object `?1`'s values of field `?2`, when that field is defined.
    SET_CERT_FIELD_VALUE = "INSERT INTO cert_field_values (path_key, field_guid, vals) SELECT ?1::TEXT, guid, ?3::TEXT FROM cert_fields \
                            WHERE guid = ?2 ON CONFLICT (path_key, field_guid) DO UPDATE SET vals = excluded.vals"
);
sql!(CLEAR_CERT_FIELD_VALUE = "DELETE FROM cert_field_values WHERE path_key = ?1 AND field_guid = ?2");
sql!(CLEAR_CERT_FIELD_VALUES = "DELETE FROM cert_field_values WHERE path_key = ?1");
sql!(CERTIFICATE_EXISTS = "SELECT 1 FROM certificates WHERE path_key = ?1");
