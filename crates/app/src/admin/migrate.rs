//! `strongroom admin migrate-store`: copies every table of one store into an
//! empty store of the other backend, then checks the copy.

use strongroom_store::transfer::{self, TABLES, Table, Transfer};

use super::AdminError;

/// Rows read and written per transaction.
const PAGE: u32 = 1000;

/// What was copied: rows per table, and the events in the verified chain.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Migrated {
    pub tables: Vec<(&'static str, u64)>,
    pub events: i64,
}

/// Copies the store at `from` into the empty store at `to` (created and
/// migrated if need be). The source's event chain is verified first; the
/// target must hold no rows at all. Afterwards every table's row count, the
/// event chain and its head are checked on the target. `progress` is told
/// each table's name and row count once it is copied.
pub async fn migrate_store(from: &str, to: &str, mut progress: impl FnMut(&str, u64)) -> Result<Migrated, AdminError> {
    if from == to {
        return Err(AdminError::Invalid("--from and --to name the same store".into()));
    }
    // Opening a SQLite path creates the file: a mistyped source would be
    // copied as an empty store.
    if let Some(path) = strongroom_store::sqlite_path(from)?
        && !path.exists()
    {
        return Err(AdminError::NotFound(format!("the source store {}", path.display())));
    }
    let (source, src) = transfer::open(from).await?;
    let (target, dst) = transfer::open(to).await?;
    let head = dst.counters().await?;
    for t in TABLES {
        let n = dst.count(t).await?;
        if n > 0 {
            return Err(AdminError::Invalid(format!(
                "the target store is not empty ({} holds {n} rows); migrate-store copies only into an empty store",
                t.name
            )));
        }
    }
    if head.event_seq != 0 {
        return Err(AdminError::Invalid("the target store is not empty (its event log has a head)".into()));
    }
    let events = super::verify_store_events(&*source).await.map_err(|e| AdminError::Invalid(format!("the source store: {e}")))?.events;
    let counters = src.counters().await?;
    let mut out = Migrated { tables: Vec::new(), events: 0 };
    for t in TABLES {
        let n = copy_table(&*src, &*dst, t).await?;
        progress(t.name, n);
        out.tables.push((t.name, n));
    }
    dst.set_counters(counters).await?;
    // The copy, checked on the target.
    for (t, (_, copied)) in TABLES.iter().zip(&out.tables) {
        let (at_source, at_target) = (src.count(t).await?, dst.count(t).await?);
        if at_target != *copied || at_source != *copied {
            return Err(AdminError::Invalid(format!(
                "{}: {at_source} rows in the source, {copied} copied, {at_target} in the target (was the source written to meanwhile?)",
                t.name
            )));
        }
    }
    out.events = super::verify_store_events(&*target).await.map_err(|e| AdminError::Invalid(format!("the target store: {e}")))?.events;
    if out.events != events || target.event_head().await? != source.event_head().await? {
        return Err(AdminError::Invalid("the target's event head differs from the source's".into()));
    }
    Ok(out)
}

async fn copy_table(src: &dyn Transfer, dst: &dyn Transfer, t: &'static Table) -> Result<u64, AdminError> {
    let mut after = None;
    let mut n = 0u64;
    loop {
        let rows = src.dump(t, after, PAGE).await?;
        let Some(last) = rows.last() else { break };
        after = Some(last[..t.key].to_vec());
        n += rows.len() as u64;
        let full = rows.len() == PAGE as usize;
        dst.load(t, rows).await?;
        if !full {
            break;
        }
    }
    Ok(n)
}
