//! Coalesced reads on PostgreSQL: the statement every request with a token
//! starts with (the access, refresh or vault context by the grant's slot),
//! and the few other reads many requests make at once (a device code's
//! context, an integration, a JWT issuer and its mappings, the entries with
//! an association), is the same statement with another key each time. One
//! reader task per store takes every such read waiting, runs the reads of
//! one statement as one statement over all their keys (the statement as a
//! `LATERAL` subquery of `unnest`, see [`lateral`]), and hands each caller
//! its rows, in the statement's own order. The database parses, plans and
//! starts an executor once per batch rather than once per request, and
//! wakes once for a pipeline of them, while each read is still one read of
//! what it would read alone.
//!
//! Under little load a read runs alone, as it would on a pooled connection:
//! the task is idle and takes it at once.

use std::collections::HashMap;
use std::sync::Arc;

use deadpool_postgres::{GenericClient, Object, Pool};
use futures_util::future::join_all;
use tokio::sync::{mpsc, oneshot};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::{checkout, classify, refs, release, spoiled};
use crate::codec::{Cols, Value};
use crate::ops::Conn;
use crate::sql::{self, Sql};
use crate::{StoreError, StoreResult};

/// Reads per batch at most.
const MAX_BATCH: usize = 128;
/// Reads waiting at most (callers wait for room beyond it).
const QUEUE: usize = 1024;

/// `sql` (PostgreSQL's form, with parameters `$1`…`$n` of the PostgreSQL
/// types `types`) for many keys at once: each key's rows, after the key's
/// index (from 1), in index order. `$k` becomes the array `$k::TYPE[]` of
/// the keys' `k`-th values.
fn lateral(sql: &str, types: &[&str]) -> String {
    let mut inner = String::with_capacity(sql.len() + 16);
    let mut rest = sql;
    while let Some(at) = rest.find('$') {
        inner.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let digits = after.find(|c: char| !c.is_ascii_digit()).unwrap_or(after.len());
        match after[..digits].parse::<usize>() {
            Ok(k) if (1..=types.len()).contains(&k) => inner.push_str(&format!("k.p{k}")),
            _ => inner.push_str(&rest[at..at + 1 + digits]),
        }
        rest = &after[digits..];
    }
    inner.push_str(rest);
    let arrays: Vec<String> = types.iter().enumerate().map(|(k, ty)| format!("${}::{ty}[]", k + 1)).collect();
    let names: Vec<String> = (1..=types.len()).map(|k| format!("p{k}")).collect();
    let within = trailing_order(&inner).map(|order| format!(", {order}")).unwrap_or_default();
    format!(
        "SELECT k.i, q.* FROM unnest({}) WITH ORDINALITY AS k({}, i) CROSS JOIN LATERAL ({inner}) q ORDER BY k.i{within}",
        arrays.join(", "),
        names.join(", ")
    )
}

/// A statement's own order, when it ends in one (`… ORDER BY m.name,
/// client_id`, outside any parentheses), as the order of the columns it
/// answers (`q.name, q.client_id`): a key's rows keep it in the batched
/// read, whose outer `ORDER BY` would otherwise leave them in any order.
/// Each column must be one the statement answers (PostgreSQL refuses the
/// batched statement otherwise).
fn trailing_order(sql: &str) -> Option<String> {
    let at = sql.rfind(" ORDER BY ")?;
    let list = &sql[at + " ORDER BY ".len()..];
    if list.contains(['(', ')']) {
        return None;
    }
    let columns: Vec<String> = list
        .split(',')
        .map(|c| {
            let c = c.trim();
            format!("q.{}", c.rsplit_once('.').map_or(c, |(_, column)| column))
        })
        .collect();
    Some(columns.join(", "))
}

/// The statements read many at once, with their parameters' types: the
/// contexts by a token's slot or a device code's hash, an integration (for
/// every grant), a JWT issuer and its mappings (the JWT grant), and the
/// entries with an association (`LookupByAssociation`). A statement that
/// answers many rows a key orders them itself ([`trailing_order`]).
fn coalesced() -> HashMap<&'static str, String> {
    [
        (&*sql::ACCESS_BY_SLOT, &["BIGINT"][..]),
        (&*sql::REFRESH_BY_SLOT, &["BIGINT"][..]),
        (&*super::store::VAULT_CONTEXT, &["BIGINT", "BIGINT"][..]),
        (&*sql::DEVICE_CONTEXT, &["BYTEA"][..]),
        (&*sql::INTEGRATION, &["TEXT"][..]),
        (&*sql::ALLOWED_USERS, &["TEXT"][..]),
        (&*sql::ALLOWED_GROUPS, &["TEXT"][..]),
        (&*sql::JWT_ISSUER_BY_ISS, &["TEXT"][..]),
        (&*sql::ISSUER_MAPPINGS_ROWS, &["TEXT"][..]),
        (&*sql::LOOKUP_BY_ASSOCIATION, &["TEXT"][..]),
        (&*sql::LOOKUP_BY_ASSOCIATION_VALUE, &["TEXT", "BYTEA"][..]),
    ]
    .into_iter()
    .map(|(s, types): (&'static Sql, &[&str])| (s.postgres(), lateral(s.postgres(), types)))
    .collect()
}

struct Job {
    sql: &'static str,
    params: Vec<Value<'static>>,
    reply: oneshot::Sender<StoreResult<Rows>>,
}

/// A read's rows, and where its columns start in them (after the index of
/// a batched read).
pub(super) struct Rows {
    pub(super) first: usize,
    pub(super) rows: Vec<Row>,
}

/// The queue to a store's reader task.
#[derive(Clone)]
pub(super) struct Reader {
    jobs: mpsc::Sender<Job>,
    /// Each coalesced statement, and its form for many keys.
    many: Arc<HashMap<&'static str, String>>,
}

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader").finish_non_exhaustive()
    }
}

impl Reader {
    /// Starts the reader task on the current tokio runtime.
    pub(super) fn spawn(pool: Pool) -> Reader {
        let (jobs, rx) = mpsc::channel(QUEUE);
        let many = Arc::new(coalesced());
        tokio::spawn(reader(pool, rx, many.clone()));
        Reader { jobs, many }
    }

    /// The rows of `sql` (a coalesced statement) with `params`.
    pub(super) async fn rows(&self, sql: &Sql, params: &[Value<'_>]) -> StoreResult<Rows> {
        let Some((&sql, _)) = self.many.get_key_value(sql.postgres()) else {
            return Err(StoreError::other("a read the reader does not coalesce"));
        };
        let (reply, rx) = oneshot::channel();
        let params = params.iter().map(|v| v.clone().into_owned()).collect();
        self.jobs.send(Job { sql, params, reply }).await.map_err(|_| StoreError::Closed)?;
        rx.await.map_err(|_| StoreError::Closed)?
    }
}

/// The store's shared read bodies on the reader: each statement one read,
/// coalesced with the others of its kind.
pub(crate) struct Coalescing<'a>(pub(super) &'a Reader);

impl Conn for Coalescing<'_> {
    async fn execute(&self, _: &Sql, _: &[Value<'_>]) -> StoreResult<u64> {
        Err(StoreError::other("the reader runs no writes"))
    }

    async fn rows<F>(&self, sql: &Sql, params: &[Value<'_>], mut visit: F) -> StoreResult<()>
    where
        F: FnMut(&mut Cols<'_>) -> StoreResult<bool> + Send,
    {
        let Rows { first, rows } = self.0.rows(sql, params).await?;
        for r in &rows {
            let mut cols = Cols::new(r);
            if !visit(cols.skip(first))? {
                break;
            }
        }
        Ok(())
    }
}

async fn reader(pool: Pool, mut rx: mpsc::Receiver<Job>, many: Arc<HashMap<&'static str, String>>) {
    let mut jobs = Vec::with_capacity(MAX_BATCH);
    // The reader keeps its connection, as the batch writer does.
    let mut conn: Option<Object> = None;
    while rx.recv_many(&mut jobs, MAX_BATCH).await > 0 {
        jobs.retain(|j| !j.reply.is_closed());
        if jobs.is_empty() {
            continue;
        }
        let client = match conn.take() {
            Some(c) if !c.is_closed() => c,
            _ => match checkout(&pool).await {
                Ok(c) => c,
                Err(e) => {
                    for job in jobs.drain(..) {
                        drop(job.reply.send(Err(e.clone())));
                    }
                    continue;
                }
            },
        };
        let out = run(&client, &many, &mut jobs).await;
        if spoiled(&out) {
            release(client, &out);
        } else {
            conn = Some(client);
        }
    }
}

/// Runs `jobs` on `client` (the reads of one statement as one, a read
/// alone as it is, all pipelined) and answers each; the first failure of
/// the connection, if any, so that it is not kept.
async fn run(client: &Object, many: &HashMap<&'static str, String>, jobs: &mut Vec<Job>) -> StoreResult<()> {
    let mut kinds: HashMap<&'static str, Vec<Job>> = HashMap::new();
    for job in jobs.drain(..) {
        kinds.entry(job.sql).or_default().push(job);
    }
    let outcomes = join_all(kinds.into_iter().map(|(sql, jobs)| async move {
        match many.get(sql) {
            Some(batched) if jobs.len() > 1 => {
                let out = together(client, batched, &jobs).await;
                answer_together(jobs, out)
            }
            _ => {
                let outs = join_all(jobs.iter().map(|j| alone(client, j.sql, &j.params))).await;
                let mut first = Ok(());
                for (job, out) in jobs.into_iter().zip(outs) {
                    if first.is_ok()
                        && let Err(e) = &out
                    {
                        first = Err(e.clone());
                    }
                    drop(job.reply.send(out.map(|rows| Rows { first: 0, rows })));
                }
                first
            }
        }
    }))
    .await;
    outcomes.into_iter().find(spoiled).unwrap_or(Ok(()))
}

async fn alone(client: &Object, sql: &str, params: &[Value<'_>]) -> StoreResult<Vec<Row>> {
    let st = client.prepare_cached(sql).await.map_err(classify)?;
    client.query(&st, &refs(params)).await.map_err(classify)
}

/// The reads of `jobs` (one statement, every job the same number of
/// parameters) as the one statement `batched` ([`lateral`]).
async fn together(client: &Object, batched: &str, jobs: &[Job]) -> StoreResult<Vec<Row>> {
    let width = jobs.first().map_or(0, |j| j.params.len());
    let mut columns: Vec<Vec<&Value<'static>>> = std::iter::repeat_with(|| Vec::with_capacity(jobs.len())).take(width).collect();
    for job in jobs {
        if job.params.len() != width {
            return Err(StoreError::other("reads of one statement with different parameters"));
        }
        for (column, v) in columns.iter_mut().zip(&job.params) {
            column.push(v);
        }
    }
    let st = client.prepare_cached(batched).await.map_err(classify)?;
    let arrays: Vec<&(dyn ToSql + Sync)> = columns.iter().map(|c| c as _).collect();
    client.query(&st, &arrays).await.map_err(classify)
}

/// Hands each job its rows of the batched answer `out` (by the index each
/// row starts with); the failure, to every job, if it failed.
fn answer_together(jobs: Vec<Job>, out: StoreResult<Vec<Row>>) -> StoreResult<()> {
    let each = out.and_then(|rows| {
        let mut each: Vec<Vec<Row>> = std::iter::repeat_with(Vec::new).take(jobs.len()).collect();
        for row in rows {
            let i: i64 = row.try_get(0).map_err(|e| StoreError::corrupt(format!("batched read index: {e}")))?;
            match usize::try_from(i).ok().and_then(|i| i.checked_sub(1)).and_then(|i| each.get_mut(i)) {
                Some(s) => s.push(row),
                None => return Err(StoreError::corrupt(format!("batched read index {i} of {}", jobs.len()))),
            }
        }
        Ok(each)
    });
    match each {
        Ok(each) => {
            for (job, rows) in jobs.into_iter().zip(each) {
                drop(job.reply.send(Ok(Rows { first: 1, rows })));
            }
            Ok(())
        }
        Err(e) => {
            for job in jobs {
                drop(job.reply.send(Err(e.clone())));
            }
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lateral_names_every_parameter_by_its_key_column() {
        let sql = lateral("SELECT a FROM t WHERE x = $1 AND y = $2::BIGINT AND z = $12", &["BIGINT", "TEXT"]);
        assert_eq!(
            sql,
            "SELECT k.i, q.* FROM unnest($1::BIGINT[], $2::TEXT[]) WITH ORDINALITY AS k(p1, p2, i) \
             CROSS JOIN LATERAL (SELECT a FROM t WHERE x = k.p1 AND y = k.p2::BIGINT AND z = $12) q ORDER BY k.i"
        );
    }

    #[test]
    fn a_statement_that_orders_its_rows_keeps_that_order_within_each_key() {
        let sql = lateral(
            "SELECT m.name, mc.client_id FROM m LEFT JOIN mc ON mc.m = m.name WHERE m.i = $1 ORDER BY m.name, mc.client_id",
            &["TEXT"],
        );
        assert!(sql.ends_with(") q ORDER BY k.i, q.name, q.client_id"), "{sql}");
        // An order inside parentheses is the subquery's, not the statement's.
        let sql = lateral("SELECT ARRAY(SELECT o FROM t WHERE t.k = $1 ORDER BY o) FROM u", &["BIGINT"]);
        assert!(sql.ends_with(") q ORDER BY k.i"), "{sql}");
    }

    #[test]
    fn every_coalesced_read_that_orders_its_rows_keeps_that_order() {
        for (single, many) in coalesced() {
            let tail = single.rsplit_once(" ORDER BY ").map(|(_, t)| t).unwrap_or_default();
            if !tail.is_empty() && !tail.contains(')') {
                assert!(many.contains("ORDER BY k.i, q."), "{many}");
            }
        }
    }

    #[test]
    fn the_coalesced_reads_keep_no_parameter_of_their_own() {
        for (single, many) in coalesced() {
            assert!(single.contains("$1"), "{single}");
            let inner = many.split("CROSS JOIN LATERAL").nth(1).unwrap_or_default();
            assert!(!inner.contains('$'), "every parameter is a key column: {inner}");
        }
    }
}
