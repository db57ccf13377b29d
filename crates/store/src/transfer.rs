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

use strongroom_core::grant::Grant;
use strongroom_core::grant::device::DeviceAuthorization;
use strongroom_core::vault::VaultId;

use crate::codec::{self, Value};
use crate::schema;
use crate::{Store, StoreError, StoreFuture, StoreResult, StoredAssociation, VaultEntry};

pub use crate::schema::{Kind, TABLES, Table};

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

impl Cell {
    /// An order over cells of one column (NULL first), for sorting rows by key.
    pub fn sort_key(&self) -> (u8, i64, &[u8]) {
        match self {
            Cell::Null => (0, 0, &[]),
            Cell::Bool(b) => (1, i64::from(*b), &[]),
            Cell::Int(i) => (2, *i, &[]),
            Cell::Text(t) => (3, 0, t.as_bytes()),
            Cell::Bytes(b) => (4, 0, b),
        }
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

/// A value of the row codec as a cell.
fn cell(v: &Value<'_>) -> Cell {
    match v {
        Value::Null => Cell::Null,
        Value::Int(i) => Cell::Int(*i),
        Value::Bool(b) => Cell::Bool(*b),
        Value::Text(t) => Cell::Text(t.to_string()),
        Value::Bytes(b) => Cell::Bytes(b.to_vec()),
    }
}

fn row(values: &[Value<'_>]) -> Row {
    values.iter().map(cell).collect()
}

/// The row a grant with its pair is stored as, as the store itself writes
/// it (for bulk loads with [`Transfer::load`]: the benchmark's large store).
/// Its tokens name it; nothing else is stored for them.
pub fn grant_row(grant: &Grant) -> (&'static Table, Row) {
    (&schema::GRANTS, row(&codec::grant_row(grant)))
}

/// The row a device code is stored as, redeemed into no grant yet (see [`grant_row`]).
pub fn device_row(d: &DeviceAuthorization) -> (&'static Table, Row) {
    (&schema::DEVICE_CODES, row(&codec::device_row(d)))
}

/// The rows a vault entry and its owners are stored as (see [`grant_row`]).
pub fn entry_rows(entry: &VaultEntry) -> Vec<(&'static Table, Row)> {
    let mut out = vec![(&schema::VAULT_ENTRIES, row(&codec::entry_row(entry)))];
    out.extend(entry.owners.iter().map(|o| (&schema::VAULT_OWNERS, row(&codec::owner_row(entry.vault_id, o)))));
    out
}

/// The row an association of entry `id` is stored as (see [`grant_row`]).
pub fn association_row(id: VaultId, a: &StoredAssociation) -> (&'static Table, Row) {
    (&schema::ASSOCIATIONS, row(&codec::association_row(id, a)))
}

/// A cell of the wrong kind for its column.
pub(crate) fn mismatch(table: &Table, column: &str) -> StoreError {
    StoreError::corrupt(format!("{}.{column}: value of another type", table.name))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (table, column) for every column the migrations create and keep
    /// (a table dropped by a later migration takes its columns with it),
    /// read from their SQL.
    fn migrated_columns(sql: &str) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        let mut table: Option<String> = None;
        for line in sql.lines() {
            let t = line.trim();
            if let Some(rest) = t.strip_prefix("DROP TABLE ") {
                let dropped = rest.trim_end_matches(';').trim();
                out.retain(|(tb, _)| tb != dropped);
            } else if let Some(rest) = t.strip_prefix("CREATE TABLE ") {
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
            crate::sql::Sql::new(t.page_sql(true, 10)).postgres(),
            "SELECT vault_id, name, value_type, key_id, sealed, lookup FROM associations WHERE (vault_id, name) > ($1, $2) \
             ORDER BY vault_id, name LIMIT 10"
        );
    }
}
