//! Copying a whole store to another backend (`strongroom admin migrate-store`).
//!
//! [`TABLES`] names every table and its columns once, in dependency order,
//! with the primary key first; both backends implement [`Transfer`] over that
//! one list, so a row read from one is written to the other column for
//! column: ids, token hashes, wrapped keys, sealed values and event hashes
//! are copied as they are, never re-derived. Rows are read in pages ordered
//! by primary key (keyset paging), so a large store is never held in memory.

use std::fmt;
use std::sync::Arc;

use crate::{Store, StoreError, StoreFuture, StoreResult};

/// How a column is stored: SQLite keeps booleans as integers, PostgreSQL as
/// `BOOLEAN`; PostgreSQL's `INTEGER` columns are 32 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Int,
    Int32,
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

    pub(crate) fn key_list(&self) -> String {
        self.columns[..self.key].iter().map(|(c, _)| *c).collect::<Vec<_>>().join(", ")
    }

    /// `SELECT` of up to `limit` rows after the key given as parameters
    /// `p(1)..p(key)` (or from the start), in key order.
    pub(crate) fn page_sql(&self, after: bool, limit: u32, p: impl Fn(usize) -> String) -> String {
        let keys = self.key_list();
        let filter =
            if after { format!(" WHERE ({keys}) > ({})", (1..=self.key).map(p).collect::<Vec<_>>().join(", ")) } else { String::new() };
        format!("SELECT {} FROM {}{filter} ORDER BY {keys} LIMIT {limit}", self.column_list(), self.name)
    }

    pub(crate) fn insert_sql(&self, p: impl Fn(usize) -> String) -> String {
        let values = (1..=self.columns.len()).map(p).collect::<Vec<_>>().join(", ");
        format!("INSERT INTO {} ({}) VALUES ({values})", self.name, self.column_list())
    }
}

use Kind::{Bool, Bytes, Int, Int32, Text};

/// Every table a store holds, parents before children. `schema_migrations`
/// is the target's own; `event_head` and the VaultID sequence are
/// [`Counters`].
pub const TABLES: &[Table] = &[
    Table {
        name: "users",
        columns: &[
            ("id", Text),
            ("name", Text),
            ("name_key", Text),
            ("password_hash", Text),
            ("disabled", Bool),
            ("master_admin", Bool),
            ("created_at", Int),
        ],
        key: 1,
    },
    Table {
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
        ],
        key: 1,
    },
    Table { name: "integration_users", columns: &[("client_id", Text), ("user_id", Text)], key: 2 },
    Table {
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
    },
    Table {
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
        ],
        key: 1,
    },
    Table { name: "access_tokens", columns: &[("hash", Bytes), ("grant_id", Text), ("issued_at", Int), ("expires_at", Int)], key: 1 },
    Table { name: "refresh_tokens", columns: &[("hash", Bytes), ("grant_id", Text), ("issued_at", Int), ("spent_at", Int)], key: 1 },
    Table {
        name: "throttle",
        columns: &[("key", Text), ("failures", Int), ("window_start", Int), ("locked_until", Int), ("subject", Text)],
        key: 1,
    },
    Table { name: "sign_in_origins", columns: &[("name_key", Text), ("addr", Text), ("last_success", Int)], key: 2 },
    Table {
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
    },
    Table { name: "folders", columns: &[("path_key", Text), ("path", Text), ("created_at", Int)], key: 1 },
    Table { name: "folder_rights", columns: &[("path_key", Text), ("user_id", Text), ("rights", Int)], key: 2 },
    Table { name: "data_keys", columns: &[("id", Int), ("wrapped", Bytes), ("created_at", Int), ("key_name", Text)], key: 1 },
    Table {
        name: "vault_entries",
        columns: &[("vault_id", Int), ("vault_type", Int32), ("key_name", Text), ("key_id", Int), ("sealed", Bytes), ("created_at", Int)],
        key: 1,
    },
    Table { name: "vault_owners", columns: &[("vault_id", Int), ("owner_key", Text), ("owner", Text)], key: 2 },
    Table {
        name: "associations",
        columns: &[("vault_id", Int), ("name", Text), ("value_type", Text), ("key_id", Int), ("sealed", Bytes), ("lookup", Bytes)],
        key: 2,
    },
    Table { name: "master_key_check", columns: &[("id", Int32), ("digest", Bytes), ("recorded_at", Int)], key: 1 },
];

/// One stored value. `Debug` shows only its kind: cells hold password
/// hashes, token hashes and sealed values.
#[derive(Clone, PartialEq, Eq)]
pub enum Cell {
    Null,
    Int(i64),
    Bool(bool),
    Text(String),
    Bytes(Vec<u8>),
}

impl fmt::Debug for Cell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Cell::Null => "Null",
            Cell::Int(_) => "Int(..)",
            Cell::Bool(_) => "Bool(..)",
            Cell::Text(_) => "Text(..)",
            Cell::Bytes(_) => "Bytes(..)",
        })
    }
}

pub type Row = Vec<Cell>;

/// The counters outside the tables: the event chain's head and the next VaultID.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Counters {
    pub event_seq: i64,
    pub event_hash: [u8; 32],
    pub next_vault_id: i64,
}

impl fmt::Debug for Counters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Counters").field("event_seq", &self.event_seq).field("next_vault_id", &self.next_vault_id).finish_non_exhaustive()
    }
}

/// Raw rows in and out of a store, for copying it to another backend.
pub trait Transfer: Send + Sync + fmt::Debug {
    fn count(&self, table: &'static Table) -> StoreFuture<'_, u64>;
    /// Up to `limit` rows whose key is above `after` (the first key columns of the last row read), in key order.
    fn dump(&self, table: &'static Table, after: Option<Row>, limit: u32) -> StoreFuture<'_, Vec<Row>>;
    /// Inserts `rows` as they are, in one transaction.
    fn load(&self, table: &'static Table, rows: Vec<Row>) -> StoreFuture<'_, ()>;
    fn counters(&self) -> StoreFuture<'_, Counters>;
    /// Sets the event head and the VaultID sequence (after loading).
    fn set_counters(&self, counters: Counters) -> StoreFuture<'_, ()>;
}

/// Opens the store `url` names like [`crate::open`] (migrations applied),
/// with its [`Transfer`] side.
pub async fn open(url: &str) -> StoreResult<(Arc<dyn Store>, Arc<dyn Transfer>)> {
    match crate::sqlite_path(url)? {
        None => {
            let s = Arc::new(crate::postgres::PgStore::connect(url).await?);
            Ok((s.clone(), s))
        }
        Some(path) => {
            let s = Arc::new(crate::sqlite::SqliteStore::open(path)?);
            Ok((s.clone(), s))
        }
    }
}

/// A cell of the wrong kind for its column.
pub(crate) fn mismatch(table: &Table, column: &str) -> StoreError {
    StoreError::Corrupt(format!("{}.{column}: value of another type", table.name))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (table, column) for every column the migrations create, read from their SQL.
    fn migrated_columns(sql: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut table: Option<String> = None;
        for line in sql.lines() {
            let t = line.trim();
            if let Some(rest) = t.strip_prefix("CREATE TABLE ") {
                table = rest.split_whitespace().next().map(|n| n.trim_end_matches('(').to_owned());
            } else if t.starts_with(')') {
                table = None;
            } else if let Some(rest) = t.strip_prefix("ALTER TABLE ") {
                let words: Vec<&str> = rest.split_whitespace().collect();
                if words.get(1..3) == Some(&["ADD", "COLUMN"][..]) {
                    out.push((words[0].to_owned(), words[3].to_owned()));
                }
            } else if let Some(tb) = &table {
                let first = t.split_whitespace().next().unwrap_or("");
                if !first.is_empty() && !["PRIMARY", "UNIQUE", "FOREIGN", "CHECK", "--"].iter().any(|k| first.starts_with(k)) {
                    out.push((tb.clone(), first.to_owned()));
                }
            }
        }
        out
    }

    #[test]
    fn the_table_list_names_exactly_the_migrated_columns_of_both_dialects() {
        for (dialect, migrations) in [("sqlite", crate::sqlite::MIGRATIONS), ("postgres", crate::postgres::MIGRATIONS)] {
            let sql: String = migrations.iter().map(|m| m.sql).collect::<Vec<_>>().join("\n");
            let migrated = migrated_columns(&sql);
            assert!(migrated.len() > 50, "{dialect}: the parser found {} columns", migrated.len());
            for (table, column) in &migrated {
                if ["event_head", "vault_id_seq"].contains(&table.as_str()) {
                    continue; // Counters.
                }
                let t = TABLES.iter().find(|t| t.name == table).unwrap_or_else(|| panic!("{dialect}: table {table} is not copied"));
                assert!(t.columns.iter().any(|(c, _)| c == column), "{dialect}: {table}.{column} is not copied");
            }
            for t in TABLES {
                for (c, _) in t.columns {
                    assert!(migrated.iter().any(|(mt, mc)| mt == t.name && mc == c), "{dialect}: {}.{c} is not in the migrations", t.name);
                }
            }
        }
    }

    #[test]
    fn page_sql_pages_by_the_whole_key() {
        let t = TABLES.iter().find(|t| t.name == "associations").unwrap();
        assert_eq!(
            t.page_sql(true, 10, |k| format!("${k}")),
            "SELECT vault_id, name, value_type, key_id, sealed, lookup FROM associations WHERE (vault_id, name) > ($1, $2) \
             ORDER BY vault_id, name LIMIT 10"
        );
    }
}
