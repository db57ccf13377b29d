//! Raw rows in and out of a store, for copying it to another backend
//! ([`crate::transfer`]).

use std::borrow::Cow;

use super::{Conn, int, query_one};
use crate::codec::{self, Cols, Value, values};
use crate::schema::{Kind, Table};
use crate::sql::{self, Sql};
use crate::transfer::{Cell, Counters, Row, mismatch};
use crate::{StoreError, StoreResult};

/// Fails unless the database's table has exactly the listed columns.
async fn check_columns<C: Conn>(c: &C, table: &Table) -> StoreResult<()> {
    let mut stored = c.query(&sql::COLUMNS_OF, &values![table.name], |r| r.text()).await?;
    let mut listed: Vec<String> = table.columns.iter().map(|(c, _)| (*c).to_owned()).collect();
    stored.sort_unstable();
    listed.sort_unstable();
    if stored == listed {
        Ok(())
    } else {
        Err(StoreError::corrupt(format!("{} has columns {stored:?}, the copier knows {listed:?}", table.name)))
    }
}

pub(crate) async fn count<C: Conn>(c: &C, table: &Table) -> StoreResult<u64> {
    check_columns(c, table).await?;
    let n = int(c, &Sql::new(format!("SELECT count(*) FROM {}", table.name)), &[]).await?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// A cell as bound to a statement.
fn value<'a>(table: &Table, (column, kind): (&str, Kind), cell: &'a Cell) -> StoreResult<Value<'a>> {
    Ok(match (kind, cell) {
        (_, Cell::Null) => Value::Null,
        (Kind::Int, Cell::Int(i)) => Value::Int(*i),
        (Kind::Bool, Cell::Bool(b)) => Value::Bool(*b),
        (Kind::Text, Cell::Text(t)) => Value::Text(Cow::Borrowed(t)),
        (Kind::Bytes, Cell::Bytes(b)) => Value::Bytes(Cow::Borrowed(b)),
        _ => return Err(mismatch(table, column)),
    })
}

/// A row read back as cells of the columns' kinds.
fn cells(table: &Table, r: &mut Cols<'_>) -> StoreResult<Row> {
    let mut row = Vec::with_capacity(table.columns.len());
    for (column, kind) in table.columns {
        let cell = match kind {
            Kind::Int => r.opt_int().map(|v| v.map(Cell::Int)),
            Kind::Bool => r.opt_bool().map(|v| v.map(Cell::Bool)),
            Kind::Text => r.opt_text().map(|v| v.map(Cell::Text)),
            Kind::Bytes => r.opt_blob().map(|v| v.map(|b| Cell::Bytes(b.into_owned()))),
        };
        row.push(cell.map_err(|_| mismatch(table, column))?.unwrap_or(Cell::Null));
    }
    Ok(row)
}

pub(crate) async fn dump<C: Conn>(c: &C, table: &Table, after: Option<&[Cell]>, limit: u32) -> StoreResult<Vec<Row>> {
    let params = match after {
        Some(key) => key.iter().zip(table.columns).map(|(cell, col)| value(table, *col, cell)).collect::<StoreResult<Vec<_>>>()?,
        None => Vec::new(),
    };
    c.query(&Sql::new(table.page_sql(after.is_some(), limit)), &params, |r| cells(table, r)).await
}

pub(crate) async fn load<C: Conn>(c: &C, table: &Table, rows: &[Row]) -> StoreResult<()> {
    let insert = Sql::new(table.insert());
    for row in rows {
        if row.len() != table.columns.len() {
            return Err(mismatch(table, "*"));
        }
        let values = row.iter().zip(table.columns).map(|(cell, col)| value(table, *col, cell)).collect::<StoreResult<Vec<_>>>()?;
        c.execute(&insert, codec::checked(table, &values)?).await?;
    }
    Ok(())
}

pub(crate) async fn counters<C: Conn>(c: &C) -> StoreResult<Counters> {
    let (event_seq, event_hash) = query_one(c, &sql::READ_EVENT_HEAD, &[], codec::head).await?;
    let next_vault_id = int(c, &sql::NEXT_VAULT_ID, &[]).await?;
    Ok(Counters { event_seq, event_hash, next_vault_id })
}

pub(crate) async fn set_counters<C: Conn>(c: &C, k: &Counters) -> StoreResult<()> {
    c.execute(&sql::MOVE_HEAD, &values![k.event_seq, &k.event_hash]).await?;
    c.execute(&sql::SET_NEXT_VAULT_ID, &values![k.next_vault_id.max(1)]).await.map(drop)
}
