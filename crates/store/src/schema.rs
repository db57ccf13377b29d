//! Every table's columns, once, in the order the migrations create them.
//!
//! The row codec ([`crate::codec`]) writes and reads each domain type as its
//! table's whole row in this order; the statements of [`crate::sql`] name
//! their columns from here ([`Table::cols`], [`Table::insert`]); the copier
//! ([`crate::transfer`]) pages through every table with it. The migrations
//! of both dialects are the only other place a column is named, and a test
//! (`transfer::tests`) checks that they and this list name the same ones. A
//! new column is added to a migration of each dialect, here, and to its
//! type's encoder and decoder in the codec.

/// How a column's values are told apart across the dialects: SQLite keeps
/// booleans as integers, PostgreSQL as `BOOLEAN`. (Integer widths are read
/// from PostgreSQL's column types, so `INTEGER` and `BIGINT` are both `Int`.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Int,
    Bool,
    Text,
    Bytes,
}

/// One table: its columns, the first `key` of which are its primary key.
#[derive(Debug)]
pub struct Table {
    pub name: &'static str,
    pub columns: &'static [(&'static str, Kind)],
    pub key: usize,
}

impl Table {
    pub(crate) fn column_list(&self) -> String {
        self.columns.iter().map(|(c, _)| *c).collect::<Vec<_>>().join(", ")
    }

    /// The columns as `alias.column, …`, in order: what a decoder reads.
    pub(crate) fn cols(&self, alias: &str) -> String {
        self.columns.iter().map(|(c, _)| format!("{alias}.{c}")).collect::<Vec<_>>().join(", ")
    }

    pub(crate) fn key_list(&self) -> String {
        self.columns[..self.key].iter().map(|(c, _)| *c).collect::<Vec<_>>().join(", ")
    }

    /// `SELECT` of up to `limit` rows after the key given as parameters
    /// `?1..?key` (or from the start), in key order.
    pub(crate) fn page_sql(&self, after: bool, limit: u32) -> String {
        let keys = self.key_list();
        let filter = if after {
            format!(" WHERE ({keys}) > ({})", (1..=self.key).map(|k| format!("?{k}")).collect::<Vec<_>>().join(", "))
        } else {
            String::new()
        };
        format!("SELECT {} FROM {}{filter} ORDER BY {keys} LIMIT {limit}", self.column_list(), self.name)
    }

    /// The columns' values as PostgreSQL parameters `$first, …`, each cast
    /// to its kind's type: an `INSERT … SELECT` gives its parameters no
    /// column to take a type from.
    pub(crate) fn pg_params(&self, first: usize) -> String {
        self.columns.iter().enumerate().map(|(i, (_, k))| format!("${}::{}", first + i, pg_type(*k))).collect::<Vec<_>>().join(", ")
    }

    /// The columns named `{prefix}{column}`, each with its PostgreSQL type.
    pub(crate) fn pg_columns(&self, prefix: &str) -> Vec<(String, &'static str)> {
        self.columns.iter().map(|(c, k)| (format!("{prefix}{c}"), pg_type(*k))).collect()
    }

    /// `INSERT` of a whole row, values `?1..?n` in column order.
    pub(crate) fn insert(&self) -> String {
        let values = (1..=self.columns.len()).map(|k| format!("?{k}")).collect::<Vec<_>>().join(", ");
        format!("INSERT INTO {} ({}) VALUES ({values})", self.name, self.column_list())
    }
}

use Kind::{Bool, Bytes, Int, Text};

pub(crate) const USERS: Table = Table {
    name: "users",
    columns: &[
        ("id", Text),
        ("name", Text),
        ("name_key", Text),
        ("password_hash", Text),
        ("disabled", Bool),
        ("master_admin", Bool),
        ("created_at", Int),
        ("signed_in_at", Int),
    ],
    key: 1,
};

pub(crate) const INTEGRATIONS: Table = Table {
    name: "integrations",
    columns: &[
        ("client_id", Text),
        ("name", Text),
        ("max_scope", Text),
        ("allow_all_users", Bool),
        ("allow_device", Bool),
        ("allow_password", Bool),
        ("access_validity", Int),
        ("grant_validity", Int),
        ("refreshable", Bool),
        ("device_code_validity", Int),
        ("poll_interval", Int),
        ("disabled", Bool),
        ("created_at", Int),
        ("retry_window", Int),
        ("version", Int),
    ],
    key: 1,
};

pub(crate) const INTEGRATION_USERS: Table = Table { name: "integration_users", columns: &[("client_id", Text), ("user_id", Text)], key: 2 };

pub(crate) const DEVICE_CODES: Table = Table {
    name: "device_codes",
    columns: &[
        ("code_hash", Bytes),
        ("user_code_hash", Bytes),
        ("client_id", Text),
        ("scope", Text),
        ("state", Text),
        ("user_id", Text),
        ("created_at", Int),
        ("expires_at", Int),
        ("interval_secs", Int),
        ("last_poll_at", Int),
        ("version", Int),
        ("grant_id", Text),
    ],
    key: 1,
};

/// A column kind's PostgreSQL type.
fn pg_type(k: Kind) -> &'static str {
    match k {
        Int => "BIGINT",
        Bool => "BOOLEAN",
        Text => "TEXT",
        Bytes => "BYTEA",
    }
}

pub(crate) const GRANTS: Table = Table {
    name: "grants",
    columns: &[
        ("id", Text),
        ("client_id", Text),
        ("user_id", Text),
        ("scope", Text),
        ("created_at", Int),
        ("refresh_until", Int),
        ("refreshable", Bool),
        ("access_issued_at", Int),
        ("access_validity", Int),
        ("revoked_at", Int),
        ("refresh_hash", Bytes),
        ("access_hash", Bytes),
        ("pair_used", Bool),
        ("rotated_from", Bytes),
        ("rotated_at", Int),
        ("version", Int),
        ("slot", Int),
        ("generation", Int),
        ("older_access", Bytes),
        ("last_addr", Text),
    ],
    key: 1,
};

pub(crate) const THROTTLE: Table = Table {
    name: "throttle",
    columns: &[("key", Text), ("failures", Int), ("window_start", Int), ("locked_until", Int), ("subject", Text)],
    key: 1,
};

pub(crate) const SIGN_IN_ORIGINS: Table =
    Table { name: "sign_in_origins", columns: &[("name_key", Text), ("addr", Text), ("last_success", Int)], key: 2 };

pub(crate) const EVENTS: Table = Table {
    name: "events",
    columns: &[
        ("seq", Int),
        ("at", Int),
        ("kind", Text),
        ("identity", Text),
        ("client_id", Text),
        ("source", Text),
        ("request_id", Text),
        ("object", Text),
        ("detail", Text),
        ("hash", Bytes),
    ],
    key: 1,
};

/// Where the event log starts once its oldest events are archived: the
/// sequence number and hash of the last event archived (one row, `id` 1;
/// none before the first archive).
pub(crate) const EVENT_CHECKPOINT: Table =
    Table { name: "event_checkpoint", columns: &[("id", Int), ("seq", Int), ("hash", Bytes)], key: 1 };

/// A folder: its key, path, creation and object GUID (`0010_tree`).
pub(crate) const FOLDERS: Table =
    Table { name: "folders", columns: &[("path_key", Text), ("path", Text), ("created_at", Int), ("guid", Text)], key: 1 };

pub(crate) const FOLDER_RIGHTS: Table =
    Table { name: "folder_rights", columns: &[("path_key", Text), ("user_id", Text), ("rights", Int)], key: 2 };

pub(crate) const DATA_KEYS: Table =
    Table { name: "data_keys", columns: &[("id", Int), ("wrapped", Bytes), ("created_at", Int), ("key_name", Text)], key: 1 };

pub(crate) const VAULT_ENTRIES: Table = Table {
    name: "vault_entries",
    columns: &[("vault_id", Int), ("vault_type", Int), ("key_name", Text), ("key_id", Int), ("sealed", Bytes), ("created_at", Int)],
    key: 1,
};

pub(crate) const VAULT_OWNERS: Table =
    Table { name: "vault_owners", columns: &[("vault_id", Int), ("owner_key", Text), ("owner", Text)], key: 2 };

pub(crate) const ASSOCIATIONS: Table = Table {
    name: "associations",
    columns: &[("vault_id", Int), ("name", Text), ("value_type", Text), ("key_id", Int), ("sealed", Bytes), ("lookup", Bytes)],
    key: 2,
};

pub(crate) const MASTER_KEY_CHECK: Table =
    Table { name: "master_key_check", columns: &[("id", Int), ("digest", Bytes), ("recorded_at", Int)], key: 1 };

pub(crate) const JWT_ISSUERS: Table = Table {
    name: "jwt_issuers",
    columns: &[
        ("name", Text),
        ("issuer", Text),
        ("keys_kind", Text),
        ("keys_source", Text),
        ("audiences", Text),
        ("algorithms", Text),
        ("clock_skew", Int),
        ("max_lifetime", Int),
        ("created_at", Int),
    ],
    key: 1,
};

pub(crate) const MACHINE_MAPPINGS: Table = Table {
    name: "machine_mappings",
    columns: &[
        ("name", Text),
        ("kind", Text),
        ("issuer", Text),
        ("conditions", Text),
        ("identity_from", Text),
        ("ca_bundle", Text),
        ("max_scope", Text),
        ("created_at", Int),
    ],
    key: 1,
};

pub(crate) const MAPPING_CLIENTS: Table = Table { name: "mapping_clients", columns: &[("mapping", Text), ("client_id", Text)], key: 2 };

pub(crate) const MACHINE_USERS: Table = Table { name: "machine_users", columns: &[("user_id", Text), ("mapping", Text)], key: 1 };

pub(crate) const JWT_REPLAY: Table =
    Table { name: "jwt_replay", columns: &[("issuer", Text), ("replay_key", Text), ("expires_at", Int)], key: 2 };

pub(crate) const GROUPS: Table =
    Table { name: "groups", columns: &[("id", Text), ("name", Text), ("name_key", Text), ("created_at", Int)], key: 1 };

pub(crate) const GROUP_MEMBERS: Table = Table { name: "group_members", columns: &[("group_id", Text), ("user_id", Text)], key: 2 };

pub(crate) const GROUP_RIGHTS: Table =
    Table { name: "group_rights", columns: &[("path_key", Text), ("group_id", Text), ("rights", Int)], key: 2 };

pub(crate) const INTEGRATION_GROUPS: Table =
    Table { name: "integration_groups", columns: &[("client_id", Text), ("group_id", Text)], key: 2 };

pub(crate) const GROUP_OWNERS: Table = Table { name: "group_owners", columns: &[("group_id", Text), ("user_id", Text)], key: 2 };

pub(crate) const GROUP_TEAMS: Table =
    Table { name: "group_teams", columns: &[("group_id", Text), ("description", Text), ("products", Text)], key: 1 };

pub(crate) const OIDC_STATES: Table = Table {
    name: "oidc_states",
    columns: &[("state_hash", Bytes), ("binding_hash", Bytes), ("user_code", Text), ("expires_at", Int), ("used", Bool)],
    key: 1,
};

pub(crate) const CONSOLE_EPOCHS: Table = Table { name: "console_epochs", columns: &[("user_id", Text), ("epoch", Int)], key: 1 };

pub(crate) const CERT_AUTHORITIES: Table = Table {
    name: "cert_authorities",
    columns: &[
        ("name_key", Text),
        ("name", Text),
        ("dn", Text),
        ("algorithm", Text),
        ("subject", Text),
        ("cert_der", Bytes),
        ("key_name", Text),
        ("key_id", Int),
        ("key_sealed", Bytes),
        ("validity_days", Int),
        ("created_at", Int),
        ("manual_approval", Bool),
    ],
    key: 1,
};

pub(crate) const CERT_POLICIES: Table = Table { name: "cert_policies", columns: &[("path_key", Text), ("policy", Text)], key: 1 };

pub(crate) const CERTIFICATES: Table = Table {
    name: "certificates",
    columns: &[
        ("path_key", Text),
        ("ca_key", Text),
        ("cn", Text),
        ("sans", Text),
        ("serial", Text),
        ("thumbprint", Text),
        ("valid_from", Int),
        ("valid_to", Int),
        ("cert_vault_id", Int),
        ("key_vault_id", Int),
        ("csr_vault_id", Int),
        ("disabled", Bool),
        ("revoked", Bool),
        ("version", Int),
        ("created_at", Int),
        ("issued_at", Int),
        ("template", Text),
    ],
    key: 1,
};

pub(crate) const CERT_PENDING: Table = Table {
    name: "cert_pending",
    columns: &[
        ("path_key", Text),
        ("ca_key", Text),
        ("request", Text),
        ("renewal", Bool),
        ("requested_by", Text),
        ("requested_at", Int),
        ("rejected", Bool),
        ("status", Text),
        ("version", Int),
    ],
    key: 1,
};

pub(crate) const CERT_REVOCATIONS: Table = Table {
    name: "cert_revocations",
    columns: &[("ca_key", Text), ("serial", Text), ("revoked_at", Int), ("reason", Int), ("not_after", Int)],
    key: 2,
};

pub(crate) const CERT_FIELDS: Table = Table {
    name: "cert_fields",
    columns: &[
        ("guid", Text),
        ("name_key", Text),
        ("name", Text),
        ("kind", Int),
        ("allowed", Text),
        ("classes", Text),
        ("created_at", Int),
    ],
    key: 1,
};

pub(crate) const CERT_FIELD_VALUES: Table =
    Table { name: "cert_field_values", columns: &[("path_key", Text), ("field_guid", Text), ("vals", Text)], key: 2 };

/// Every table a store holds, parents before children. `schema_migrations`
/// is each database's own; `event_head` and the VaultID sequence are the
/// copier's `Counters`.
pub const TABLES: &[&Table] = &[
    &USERS,
    &INTEGRATIONS,
    &INTEGRATION_USERS,
    &DEVICE_CODES,
    &GRANTS,
    &THROTTLE,
    &SIGN_IN_ORIGINS,
    &EVENTS,
    &EVENT_CHECKPOINT,
    &FOLDERS,
    &FOLDER_RIGHTS,
    &DATA_KEYS,
    &VAULT_ENTRIES,
    &VAULT_OWNERS,
    &ASSOCIATIONS,
    &MASTER_KEY_CHECK,
    &JWT_ISSUERS,
    &MACHINE_MAPPINGS,
    &MAPPING_CLIENTS,
    &MACHINE_USERS,
    &JWT_REPLAY,
    &GROUPS,
    &GROUP_MEMBERS,
    &GROUP_RIGHTS,
    &INTEGRATION_GROUPS,
    &OIDC_STATES,
    &GROUP_OWNERS,
    &GROUP_TEAMS,
    &CONSOLE_EPOCHS,
    &CERT_AUTHORITIES,
    &CERT_POLICIES,
    &CERTIFICATES,
    &CERT_REVOCATIONS,
    &CERT_FIELDS,
    &CERT_FIELD_VALUES,
    &CERT_PENDING,
];
