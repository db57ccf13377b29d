//! [`Transfer`] for PostgreSQL: raw rows, typed per column.

use tokio_postgres::types::ToSql;

use super::{PgStore, get, pg};
use crate::transfer::{Cell, Counters, Kind, Row, Table, Transfer, mismatch};
use crate::{StoreError, StoreFuture, StoreResult};

fn placeholder(k: usize) -> String {
    format!("${k}")
}

type Param = Box<dyn ToSql + Sync + Send>;

fn to_param(table: &Table, (column, kind): (&str, Kind), cell: Cell) -> StoreResult<Param> {
    Ok(match (kind, cell) {
        (Kind::Int, Cell::Null) => Box::new(None::<i64>),
        (Kind::Int32, Cell::Null) => Box::new(None::<i32>),
        (Kind::Bool, Cell::Null) => Box::new(None::<bool>),
        (Kind::Text, Cell::Null) => Box::new(None::<String>),
        (Kind::Bytes, Cell::Null) => Box::new(None::<Vec<u8>>),
        (Kind::Int, Cell::Int(i)) => Box::new(i),
        (Kind::Int32, Cell::Int(i)) => {
            Box::new(i32::try_from(i).map_err(|_| StoreError::Corrupt(format!("{}.{column}: out of range", table.name)))?)
        }
        (Kind::Bool, Cell::Bool(b)) => Box::new(b),
        (Kind::Text, Cell::Text(t)) => Box::new(t),
        (Kind::Bytes, Cell::Bytes(b)) => Box::new(b),
        _ => return Err(mismatch(table, column)),
    })
}

fn from_row(table: &Table, r: &tokio_postgres::Row) -> StoreResult<Row> {
    let mut row = Vec::with_capacity(table.columns.len());
    for (i, (_, kind)) in table.columns.iter().enumerate() {
        let cell = match kind {
            Kind::Int => get::<Option<i64>>(r, i)?.map(Cell::Int),
            Kind::Int32 => get::<Option<i32>>(r, i)?.map(|v| Cell::Int(i64::from(v))),
            Kind::Bool => get::<Option<bool>>(r, i)?.map(Cell::Bool),
            Kind::Text => get::<Option<String>>(r, i)?.map(Cell::Text),
            Kind::Bytes => get::<Option<Vec<u8>>>(r, i)?.map(Cell::Bytes),
        };
        row.push(cell.unwrap_or(Cell::Null));
    }
    Ok(row)
}

fn refs(params: &[Param]) -> Vec<&(dyn ToSql + Sync)> {
    params.iter().map(|p| &**p as &(dyn ToSql + Sync)).collect()
}

impl Transfer for PgStore {
    fn count(&self, table: &'static Table) -> StoreFuture<'_, u64> {
        on_client!(self, |c| {
            let st = c.prepare(&format!("SELECT * FROM {}", table.name)).await.map_err(pg)?;
            let mut stored: Vec<&str> = st.columns().iter().map(|c| c.name()).collect();
            let mut listed: Vec<&str> = table.columns.iter().map(|(c, _)| *c).collect();
            stored.sort_unstable();
            listed.sort_unstable();
            if stored != listed {
                return Err(StoreError::Corrupt(format!("{} has columns {stored:?}, the copier knows {listed:?}", table.name)));
            }
            let r = c.query_one(&format!("SELECT count(*) FROM {}", table.name), &[]).await.map_err(pg)?;
            Ok(u64::try_from(get::<i64>(&r, 0)?).unwrap_or(0))
        })
    }

    fn dump(&self, table: &'static Table, after: Option<Row>, limit: u32) -> StoreFuture<'_, Vec<Row>> {
        on_client!(self, |c| {
            let mut params = Vec::new();
            if let Some(key) = &after {
                for (cell, col) in key.iter().zip(table.columns) {
                    params.push(to_param(table, *col, cell.clone())?);
                }
            }
            let rows = c.query(&table.page_sql(after.is_some(), limit, placeholder), &refs(&params)).await.map_err(pg)?;
            rows.iter().map(|r| from_row(table, r)).collect()
        })
    }

    fn load(&self, table: &'static Table, rows: Vec<Row>) -> StoreFuture<'_, ()> {
        in_tx!(self, |tx| {
            async {
                let st = tx.prepare(&table.insert_sql(placeholder)).await.map_err(pg)?;
                for row in rows {
                    if row.len() != table.columns.len() {
                        return Err(mismatch(table, "*"));
                    }
                    let params = row
                        .into_iter()
                        .zip(table.columns)
                        .map(|(cell, col)| to_param(table, *col, cell))
                        .collect::<StoreResult<Vec<_>>>()?;
                    tx.execute(&st, &refs(&params)).await.map_err(pg)?;
                }
                Ok(())
            }
            .await
        })
    }

    fn counters(&self) -> StoreFuture<'_, Counters> {
        on_client!(self, |c| {
            let head = c.query_one("SELECT seq, hash FROM event_head WHERE id = 1", &[]).await.map_err(pg)?;
            let seq = c.query_one("SELECT last_value, is_called FROM vault_id_seq", &[]).await.map_err(pg)?;
            let (last, called): (i64, bool) = (get(&seq, 0)?, get(&seq, 1)?);
            Ok(Counters {
                event_seq: get(&head, 0)?,
                event_hash: crate::stored_hash32(get(&head, 1)?)?,
                next_vault_id: if called { last + 1 } else { last },
            })
        })
    }

    fn set_counters(&self, k: Counters) -> StoreFuture<'_, ()> {
        in_tx!(self, |tx| {
            async {
                tx.execute("UPDATE event_head SET seq = $1, hash = $2 WHERE id = 1", &[&k.event_seq, &&k.event_hash[..]])
                    .await
                    .map_err(pg)?;
                // The next nextval() answers next_vault_id.
                tx.execute("SELECT setval('vault_id_seq', $1, false)", &[&k.next_vault_id.max(1)]).await.map_err(pg)?;
                Ok(())
            }
            .await
        })
    }
}
