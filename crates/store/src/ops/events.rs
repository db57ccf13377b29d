//! The chained event log, and the store's upkeep.

use strongroom_core::event::{Event, EventKind, StoredEvent, chain_hash};
use strongroom_core::throttle::{ORIGIN_RETENTION_DAYS, Rule};
use strongroom_core::time::UnixTime;
use strongroom_core::vault::VaultId;

use super::auth::take_quota_slot;
use super::{Conn, query_one};
use crate::codec::{self, values};
use crate::sql;
use crate::{EventFilter, StoreResult};

/// Appends `e` to the chain inside the caller's transaction (which holds the
/// head's lock already, or takes it here); its sequence number.
pub(crate) async fn append_event<C: Conn>(c: &C, e: &Event) -> StoreResult<i64> {
    if let Some(kept) = c.kept_head() {
        let (seq, prev) = kept.get();
        let seq = seq + 1;
        let hash = chain_hash(&prev, seq, e);
        c.execute(&sql::INSERT_EVENT, &codec::event_row(seq, e, &hash)).await?;
        kept.set((seq, hash));
        return Ok(seq);
    }
    let (seq, prev) = query_one(c, &sql::EVENT_HEAD, &[], codec::head).await?;
    let seq = seq + 1;
    let hash = chain_hash(&prev, seq, e);
    c.execute(&sql::INSERT_EVENT, &codec::event_row(seq, e, &hash)).await?;
    c.execute(&sql::MOVE_HEAD, &values![seq, &hash]).await?;
    Ok(seq)
}

/// `write`, then `e` appended: `write`'s row count. Where the chain's head
/// is kept in memory (a PostgreSQL group commit) the event's place needs no
/// read, so both statements go to the server together, one round trip: a
/// `write` that fails fails the job, and the job's savepoint takes the event
/// with it. Elsewhere one after the other.
pub(crate) async fn with_event<C: Conn>(c: &C, write: impl Future<Output = StoreResult<u64>>, e: &Event) -> StoreResult<u64> {
    if c.kept_head().is_some() {
        let (written, appended) = tokio::join!(write, append_event(c, e));
        appended?;
        return written;
    }
    let written = write.await?;
    append_event(c, e).await?;
    Ok(written)
}

pub(crate) async fn events<C: Conn>(c: &C, f: &EventFilter) -> StoreResult<Vec<StoredEvent>> {
    let params = values![
        f.since,
        f.until,
        f.kind.as_deref(),
        f.identity.as_deref(),
        f.object.as_deref(),
        f.after_seq,
        i64::from(f.limit),
        f.before_seq,
        f.viewer.as_ref().map(|v| v.identity.as_str()),
        f.viewer.as_ref().map(|v| v.user_id.as_str()),
        f.component.as_deref(),
        i64::from(f.offset),
        f.detail.as_deref(),
        f.kinds.as_ref().map(|k| k.join(",")),
    ];
    let statement = if f.newest_first { &sql::EVENTS_NEWEST_FIRST } else { &sql::EVENTS };
    c.query(statement, &params, codec::event_with_folder).await
}

pub(crate) async fn event_head<C: Conn>(c: &C) -> StoreResult<(i64, [u8; 32])> {
    query_one(c, &sql::READ_EVENT_HEAD, &[], codec::head).await
}

pub(crate) async fn event_checkpoint<C: Conn>(c: &C) -> StoreResult<Option<(i64, [u8; 32])>> {
    c.query_opt(&sql::EVENT_CHECKPOINT, &[], codec::head).await
}

/// See [`crate::EventStore::event_cut`].
pub(crate) async fn event_cut<C: Conn>(c: &C, before: UnixTime) -> StoreResult<Option<(i64, [u8; 32])>> {
    c.query_opt(&sql::EVENT_CUT, &values![before], codec::head).await
}

/// See [`crate::EventStore::archive_events`].
pub(crate) async fn archive_events<C: Conn>(c: &C, from: i64, through: (i64, [u8; 32])) -> StoreResult<bool> {
    if through.0 <= from || c.execute(&sql::MOVE_CHECKPOINT, &values![through.0, &through.1, from]).await? != 1 {
        return Ok(false);
    }
    c.execute(&sql::DELETE_ARCHIVED, &values![from, through.0]).await?;
    Ok(true)
}

/// See [`crate::EventStore::append_client_event`]: the counter's slot
/// ([`take_quota_slot`]) and the event in one transaction.
pub(crate) async fn append_client_event<C: Conn>(c: &C, e: &Event, key: &str, rule: Rule) -> StoreResult<Result<(), UnixTime>> {
    if let Err(until) = take_quota_slot(c, key, rule, e.at).await? {
        return Ok(Err(until));
    }
    append_event(c, e).await?;
    Ok(Ok(()))
}

/// See [`crate::EventStore::purge_replays`].
pub(crate) async fn purge_replays<C: Conn>(c: &C, now: UnixTime) -> StoreResult<u64> {
    c.execute(&sql::PURGE_REPLAYS, &values![now]).await
}

/// See [`crate::EventStore::purge`].
pub(crate) async fn purge<C: Conn>(c: &C, before: UnixTime) -> StoreResult<u64> {
    let mut n = 0;
    for statement in sql::PURGE.iter() {
        n += c.execute(statement, &values![before]).await?;
    }
    let forgotten = before.plus_secs(-ORIGIN_RETENTION_DAYS * 86_400);
    Ok(n + c.execute(&sql::FORGET_ORIGINS, &values![forgotten]).await?)
}

/// An event that goes with `cause`, written in the same transaction: its
/// time, origin and actor, with a kind, object and detail of its own.
fn derived(cause: &Event, kind: EventKind, object: String, detail: String) -> Event {
    let mut e = cause.clone();
    e.kind = kind;
    e.object = object;
    e.detail = detail;
    e
}

/// The lockout event that goes with a failure `event` when `key` locks.
pub(crate) fn lockout_event(failure: &Event, key: &str) -> Event {
    derived(failure, EventKind::Lockout, key.to_owned(), "too many failures: locked".to_owned())
}

/// `event` noting how many grants a change of a user ended.
pub(crate) fn with_grants_ended(mut event: Event, ended: u64) -> Event {
    if ended > 0 {
        let note = format!("{ended} grant{} revoked", if ended == 1 { "" } else { "s" });
        event.detail = if event.detail.is_empty() { note } else { format!("{}; {note}", event.detail) };
    }
    event
}

/// The `vault.orphaned` event that goes with `cause` (a folder deletion)
/// having left entry `id` with no owner.
pub(crate) fn orphaned_event(cause: &Event, id: VaultId, detail: String) -> Event {
    derived(cause, EventKind::VaultOrphaned, id.to_string(), detail)
}

/// The `vault.deleted` event that goes with `cause` (an owner removal)
/// having left entry `id` with no owner.
pub(crate) fn deleted_event(cause: &Event, id: VaultId, detail: String) -> Event {
    derived(cause, EventKind::VaultDeleted, id.to_string(), detail)
}

/// The `grant.revoked` event that goes with `cause` (the deletion of a user
/// or an integration, or a change of an integration) ending grant `id`.
pub(crate) fn ended_grant_event(cause: &Event, id: &str) -> Event {
    let why = match cause.kind {
        EventKind::UserDeleted => "user deleted by an administrator",
        EventKind::IntegrationUpdated => "integration disabled, or its user taken off its allow-list, by an administrator",
        _ => "integration deleted by an administrator",
    };
    derived(cause, EventKind::GrantRevoked, id.to_owned(), why.to_owned())
}
