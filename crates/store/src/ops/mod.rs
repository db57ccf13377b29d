//! What each store method does, written once for both backends.
//!
//! A method's body is an `async fn` over a [`Conn`]: the statements of
//! [`crate::sql`], their values from the [`crate::codec`] encoders, their
//! rows through its decoders. Each backend implements [`Conn`] for its
//! connection and runs these bodies inside its own transactions: SQLite on
//! its writer thread or a reader thread (where every call completes at once,
//! [`at_once`]), PostgreSQL on a pooled connection. What differs between the
//! backends is only their connections and transactions, PostgreSQL's group
//! commit of the two hot writes (`postgres::batch`), its one-statement vault
//! context, and the SQL texts `sql` gives per dialect.

pub(crate) mod admin;
pub(crate) mod auth;
pub(crate) mod certs;
pub(crate) mod events;
pub(crate) mod groups;
pub(crate) mod machine;
pub(crate) mod methods;
pub(crate) mod transfer;
pub(crate) mod tree;
pub(crate) mod vault;

use std::future::Future;
use std::task::{Context, Poll, Waker};

use crate::codec::{Cols, Value};
use crate::sql::Sql;
use crate::{StoreError, StoreResult};

/// What a job of a group commit (SQLite's writer, PostgreSQL's
/// `postgres::group`) answers once its batch has ended: its own outcome when
/// the batch committed (`Closed` if it never ran); when the commit failed, its
/// own failure, which says more than the batch's (and may have caused it),
/// else the batch's.
pub(crate) fn batch_answer<T>(own: Option<StoreResult<T>>, committed: &StoreResult<()>) -> StoreResult<T> {
    match (committed, own) {
        (Ok(()), own) => own.unwrap_or(Err(StoreError::Closed)),
        (Err(_), Some(Err(own))) => Err(own),
        (Err(e), _) => Err(e.clone()),
    }
}

/// A connection (or transaction) that runs the store's statements; errors
/// come back classified ([`crate::ErrorKind`]).
pub(crate) trait Conn {
    /// Runs a statement; the rows it changed.
    async fn execute(&self, sql: &Sql, params: &[Value<'_>]) -> StoreResult<u64>;

    /// Runs a query and hands `visit` its rows in order, until it answers
    /// `false` or the rows end.
    async fn rows<F>(&self, sql: &Sql, params: &[Value<'_>], visit: F) -> StoreResult<()>
    where
        F: FnMut(&mut Cols<'_>) -> StoreResult<bool> + Send;

    /// The event chain's head as this connection's transaction keeps it in
    /// memory, if it does (PostgreSQL's group commit: it locked the head
    /// once and moves it once, before its commit); [`events::append_event`]
    /// then places each event on it without reading or writing the head's row.
    fn kept_head(&self) -> Option<&KeptHead> {
        None
    }

    /// Every row, each decoded by `f`.
    async fn query<T, F>(&self, sql: &Sql, params: &[Value<'_>], mut f: F) -> StoreResult<Vec<T>>
    where
        T: Send,
        F: FnMut(&mut Cols<'_>) -> StoreResult<T> + Send,
    {
        let mut out = Vec::new();
        self.rows(sql, params, |r| {
            out.push(f(r)?);
            Ok(true)
        })
        .await?;
        Ok(out)
    }

    /// The first row, if any, decoded by `f`.
    async fn query_opt<T, F>(&self, sql: &Sql, params: &[Value<'_>], f: F) -> StoreResult<Option<T>>
    where
        T: Send,
        F: FnOnce(&mut Cols<'_>) -> StoreResult<T> + Send,
    {
        let (mut f, mut out) = (Some(f), None);
        self.rows(sql, params, |r| {
            if let Some(f) = f.take() {
                out = Some(f(r)?);
            }
            Ok(false)
        })
        .await?;
        Ok(out)
    }
}

/// The event chain's head (sequence number, hash), kept in memory by a
/// transaction that holds its lock (see [`Conn::kept_head`]).
#[derive(Debug)]
pub(crate) struct KeptHead(std::sync::Mutex<(i64, [u8; 32])>);

impl KeptHead {
    pub(crate) fn new(head: (i64, [u8; 32])) -> Self {
        KeptHead(std::sync::Mutex::new(head))
    }
    pub(crate) fn get(&self) -> (i64, [u8; 32]) {
        *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
    pub(crate) fn set(&self, head: (i64, [u8; 32])) {
        *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = head;
    }
}

/// The first row, which must exist.
pub(crate) async fn query_one<C: Conn, T, F>(c: &C, sql: &Sql, params: &[Value<'_>], f: F) -> StoreResult<T>
where
    T: Send,
    F: FnOnce(&mut Cols<'_>) -> StoreResult<T> + Send,
{
    c.query_opt(sql, params, f).await?.ok_or_else(|| StoreError::other("a statement that answers one row answered none"))
}

/// Whether the statement answers a row.
pub(crate) async fn exists<C: Conn>(c: &C, sql: &Sql, params: &[Value<'_>]) -> StoreResult<bool> {
    Ok(c.query_opt(sql, params, |_| Ok(())).await?.is_some())
}

/// The boolean a one-row statement answers (false for no row).
pub(crate) async fn flag<C: Conn>(c: &C, sql: &Sql, params: &[Value<'_>]) -> StoreResult<bool> {
    Ok(c.query_opt(sql, params, |r| r.bool()).await?.unwrap_or(false))
}

/// The integer a one-row statement answers.
pub(crate) async fn int<C: Conn>(c: &C, sql: &Sql, params: &[Value<'_>]) -> StoreResult<i64> {
    query_one(c, sql, params, |r| r.int()).await
}

/// Runs a body whose every await completes at once (SQLite's, on the thread
/// that owns the connection) to its end.
pub(crate) fn at_once<T>(body: impl Future<Output = StoreResult<T>>) -> StoreResult<T> {
    let mut body = std::pin::pin!(body);
    match body.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => out,
        Poll::Pending => Err(StoreError::other("a store call waited where it cannot")),
    }
}
