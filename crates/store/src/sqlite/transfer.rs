//! [`Transfer`] for SQLite: raw rows through a reader thread and the writer.

use rusqlite::types::{Value, ValueRef};
use rusqlite::{Connection, params_from_iter};

use super::SqliteStore;
use super::writer::backend;
use crate::transfer::{Cell, Counters, Kind, Row, Table, Transfer, mismatch};
use crate::{StoreError, StoreFuture, StoreResult};

fn placeholder(k: usize) -> String {
    format!("?{k}")
}

fn to_value(table: &Table, (column, kind): (&str, Kind), cell: Cell) -> StoreResult<Value> {
    Ok(match (kind, cell) {
        (_, Cell::Null) => Value::Null,
        (Kind::Int | Kind::Int32, Cell::Int(i)) => Value::Integer(i),
        (Kind::Bool, Cell::Bool(b)) => Value::Integer(i64::from(b)),
        (Kind::Text, Cell::Text(t)) => Value::Text(t),
        (Kind::Bytes, Cell::Bytes(b)) => Value::Blob(b),
        _ => return Err(mismatch(table, column)),
    })
}

fn from_ref(table: &Table, (column, kind): (&str, Kind), v: ValueRef<'_>) -> StoreResult<Cell> {
    Ok(match (kind, v) {
        (_, ValueRef::Null) => Cell::Null,
        (Kind::Int | Kind::Int32, ValueRef::Integer(i)) => Cell::Int(i),
        (Kind::Bool, ValueRef::Integer(i)) => Cell::Bool(i != 0),
        (Kind::Text, ValueRef::Text(t)) => {
            Cell::Text(String::from_utf8(t.to_vec()).map_err(|_| StoreError::Corrupt(format!("{}.{column}: not UTF-8", table.name)))?)
        }
        (Kind::Bytes, ValueRef::Blob(b)) => Cell::Bytes(b.to_vec()),
        _ => return Err(mismatch(table, column)),
    })
}

/// Fails unless the table has exactly the listed columns.
fn check_columns(c: &Connection, table: &Table) -> StoreResult<()> {
    let st = c.prepare(&format!("SELECT * FROM {}", table.name)).map_err(backend)?;
    let stored: Vec<&str> = st.column_names();
    let listed: Vec<&str> = table.columns.iter().map(|(c, _)| *c).collect();
    let mut a = stored.clone();
    let mut b = listed.clone();
    a.sort_unstable();
    b.sort_unstable();
    if a == b { Ok(()) } else { Err(StoreError::Corrupt(format!("{} has columns {stored:?}, the copier knows {listed:?}", table.name))) }
}

impl Transfer for SqliteStore {
    fn count(&self, table: &'static Table) -> StoreFuture<'_, u64> {
        Box::pin(self.read(move |c| {
            check_columns(c, table)?;
            let n: i64 = c.query_row(&format!("SELECT count(*) FROM {}", table.name), [], |r| r.get(0)).map_err(backend)?;
            Ok(u64::try_from(n).unwrap_or(0))
        }))
    }

    fn dump(&self, table: &'static Table, after: Option<Row>, limit: u32) -> StoreFuture<'_, Vec<Row>> {
        Box::pin(self.read(move |c| {
            let mut params = Vec::new();
            if let Some(key) = &after {
                for (cell, col) in key.iter().zip(table.columns) {
                    params.push(to_value(table, *col, cell.clone())?);
                }
            }
            let mut st = c.prepare(&table.page_sql(after.is_some(), limit, placeholder)).map_err(backend)?;
            let mut rows = st.query(params_from_iter(params)).map_err(backend)?;
            let mut out = Vec::new();
            while let Some(r) = rows.next().map_err(backend)? {
                let mut row = Vec::with_capacity(table.columns.len());
                for (i, col) in table.columns.iter().enumerate() {
                    row.push(from_ref(table, *col, r.get_ref(i).map_err(backend)?)?);
                }
                out.push(row);
            }
            Ok(out)
        }))
    }

    fn load(&self, table: &'static Table, rows: Vec<Row>) -> StoreFuture<'_, ()> {
        Box::pin(self.write(move |c| {
            let mut st = c.prepare_cached(&table.insert_sql(placeholder)).map_err(backend)?;
            for row in rows {
                if row.len() != table.columns.len() {
                    return Err(mismatch(table, "*"));
                }
                let values =
                    row.into_iter().zip(table.columns).map(|(cell, col)| to_value(table, *col, cell)).collect::<StoreResult<Vec<_>>>()?;
                st.execute(params_from_iter(values)).map_err(backend)?;
            }
            Ok(())
        }))
    }

    fn counters(&self) -> StoreFuture<'_, Counters> {
        Box::pin(self.read(|c| {
            let (seq, hash): (i64, Vec<u8>) =
                c.query_row("SELECT seq, hash FROM event_head WHERE id = 1", [], |r| Ok((r.get(0)?, r.get(1)?))).map_err(backend)?;
            let next: i64 = c.query_row("SELECT next FROM vault_id_seq WHERE id = 1", [], |r| r.get(0)).map_err(backend)?;
            Ok(Counters { event_seq: seq, event_hash: crate::stored_hash32(hash)?, next_vault_id: next })
        }))
    }

    fn set_counters(&self, k: Counters) -> StoreFuture<'_, ()> {
        Box::pin(self.write(move |c| {
            c.execute("UPDATE event_head SET seq = ?1, hash = ?2 WHERE id = 1", rusqlite::params![k.event_seq, &k.event_hash[..]])
                .map_err(backend)?;
            c.execute("UPDATE vault_id_seq SET next = ?1 WHERE id = 1", [k.next_vault_id]).map_err(backend)?;
            Ok(())
        }))
    }
}
