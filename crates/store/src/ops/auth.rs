//! The token service's request path: the context reads and the conditional
//! writes of device codes and grants, and the guessing limits' counters.

use strongroom_core::event::Event;
use strongroom_core::grant::device::{DeviceAuthorization, DeviceContext, DeviceState, PollRecord};
use strongroom_core::grant::refresh::RefreshContext;
use strongroom_core::grant::{AccessContext, Grant, GrantId};
use strongroom_core::identity::{User, UserId};
use strongroom_core::throttle::{Admission, Counter, Rule, Slot};
use strongroom_core::time::UnixTime;
use strongroom_core::token::{Presented, TokenHash};

use super::events::{append_event, lockout_event, with_event};
use super::{Conn, query_one};
use crate::codec::{self, values};
use crate::sql;
use crate::{LoginContext, PairChange, StoreError, StoreResult};

/// The access context of `token`, by its grant's slot: `None` unless the
/// grant keeps that token.
pub(crate) async fn access_context<C: Conn>(c: &C, token: Presented) -> StoreResult<Option<AccessContext>> {
    let at = token.at;
    Ok(c.query_opt(&sql::ACCESS_BY_SLOT, &values![at.slot], |r| codec::located_access(r, token.hash, at.generation)).await?.flatten())
}

/// The refresh context of `token`, by its grant's slot (whatever the token's
/// generation: the decision tells a spent one from a forged one).
pub(crate) async fn refresh_context<C: Conn>(c: &C, token: Presented) -> StoreResult<Option<RefreshContext>> {
    let read = |r: &mut codec::Cols<'_>| {
        Ok(RefreshContext { presented: token, grant: codec::grant(r)?, standing: codec::standing(r)?, retry_window: r.opt_int()? })
    };
    c.query_opt(&sql::REFRESH_BY_SLOT, &values![token.at.slot], read).await
}

pub(crate) async fn device_context<C: Conn>(c: &C, code_hash: TokenHash) -> StoreResult<Option<DeviceContext>> {
    c.query_opt(&sql::DEVICE_CONTEXT, &values![&code_hash], codec::device_context).await
}

pub(crate) async fn device_by_user_code<C: Conn>(c: &C, user_code_hash: TokenHash) -> StoreResult<Option<DeviceAuthorization>> {
    c.query_opt(&sql::DEVICE_BY_USER_CODE, &values![&user_code_hash], codec::device).await
}

/// See [`crate::AuthStore::insert_device`].
pub(crate) async fn insert_device<C: Conn>(
    c: &C,
    d: &DeviceAuthorization,
    event: &Event,
    quota: Option<&(String, Rule)>,
) -> StoreResult<()> {
    if let Some((key, rule)) = quota
        && take_quota_slot(c, key, *rule, event.at).await?.is_err()
    {
        return Err(StoreError::QuotaExceeded);
    }
    c.execute(&sql::FREE_USER_CODE, &values![&d.user_code_hash, d.created_at]).await?;
    c.execute(&sql::INSERT_DEVICE, &codec::device_row(d)).await?;
    append_event(c, event).await.map(drop)
}

pub(crate) async fn record_poll<C: Conn>(c: &C, code_hash: TokenHash, version: i64, record: PollRecord) -> StoreResult<bool> {
    Ok(c.execute(&sql::RECORD_POLL, &values![record.last_poll_at, record.interval_secs, &code_hash, version]).await? == 1)
}

pub(crate) async fn decide_device<C: Conn>(
    c: &C,
    code_hash: TokenHash,
    version: i64,
    decision: &DeviceState,
    event: &Event,
) -> StoreResult<bool> {
    let (state, user) = codec::device_state_parts(decision);
    if !matches!(decision, DeviceState::Approved { .. } | DeviceState::Denied { .. }) {
        return Err(StoreError::other(format!("a user cannot move a device code to {state}")));
    }
    let n = c.execute(&sql::DECIDE_DEVICE, &values![state, user, &code_hash, version]).await?;
    if n == 1 {
        append_event(c, event).await?;
    }
    Ok(n == 1)
}

pub(crate) async fn redeem_device<C: Conn>(c: &C, code_hash: TokenHash, version: i64, grant: &Grant, event: &Event) -> StoreResult<bool> {
    if c.execute(&sql::REDEEM_DEVICE, &values![&code_hash, version, grant.id.as_str()]).await? != 1 {
        return Ok(false);
    }
    insert_grant(c, grant, event).await?;
    Ok(true)
}

/// A grant with its first pair, and its event: one row (the tokens name
/// the grant; nothing is stored per token).
pub(crate) async fn insert_grant<C: Conn>(c: &C, g: &Grant, event: &Event) -> StoreResult<()> {
    with_event(c, c.execute(&sql::INSERT_GRANT, &codec::grant_row(g)), event).await.map(drop)
}

/// The values of [`sql::ADVANCE_PAIR`] (`?1`-`?11`).
pub(crate) fn advance_pair_values<'a>(grant_id: &'a GrantId, version: i64, change: &'a PairChange) -> [codec::Value<'a>; 11] {
    let s = &change.state;
    let p = &s.pair;
    values![
        grant_id.as_str(),
        version,
        p.refresh.as_ref(),
        p.access.as_ref(),
        p.used,
        p.rotated_from.as_ref().map(|(h, _)| h),
        p.rotated_from.map(|(_, at)| at),
        s.access_issued_at,
        p.generation,
        codec::older_access_bytes(&s.older_access),
        change.last_addr.as_deref(),
    ]
}

/// See [`crate::AuthStore::advance_pair`] (PostgreSQL's is one statement in `postgres::batch`).
pub(crate) async fn advance_pair<C: Conn>(
    c: &C,
    grant_id: &GrantId,
    version: i64,
    change: &PairChange,
    event: &Event,
) -> StoreResult<bool> {
    if c.execute(&sql::ADVANCE_PAIR, &advance_pair_values(grant_id, version, change)).await? != 1 {
        return Ok(false);
    }
    append_event(c, event).await?;
    Ok(true)
}

pub(crate) async fn mark_pair_used<C: Conn>(c: &C, grant_id: &GrantId, access_hash: TokenHash) -> StoreResult<()> {
    c.execute(&sql::MARK_PAIR_USED, &values![grant_id.as_str(), &access_hash, true]).await.map(drop)
}

pub(crate) async fn revoke_grant<C: Conn>(c: &C, grant_id: &GrantId, at: UnixTime, event: &Event) -> StoreResult<bool> {
    // Its tokens stop working by `revoked_at`, which every use reads: none
    // is stored anywhere else.
    if c.execute(&sql::REVOKE_GRANT, &values![at, grant_id.as_str()]).await? != 1 {
        return Ok(false);
    }
    append_event(c, event).await?;
    Ok(true)
}

pub(crate) async fn user_by_name<C: Conn>(c: &C, name: &str) -> StoreResult<Option<(User, String)>> {
    c.query_opt(&sql::USER_BY_NAME, &values![name.to_lowercase()], codec::user_and_hash).await
}

pub(crate) async fn login_context<C: Conn>(c: &C, name_key: &str, addr: &str) -> StoreResult<LoginContext> {
    query_one(c, &sql::LOGIN_CONTEXT, &values![name_key, addr], |r| {
        let user = if r.next_is_null()? {
            r.skip(crate::schema::USERS.columns.len());
            None
        } else {
            Some(codec::user_and_hash(r)?)
        };
        Ok(LoginContext { user, known_origin: r.bool()? })
    })
    .await
}

/// Counter `key`, locked for this transaction (created at zero if absent,
/// so that there is a row to lock).
/// Takes one slot of quota counter `key` under `rule` at `at` (a start of
/// the device flow, a client's event), in the caller's transaction: the
/// writer is serialised there (PostgreSQL takes the chain's head first,
/// SQLite has one writer), so parallel takers cannot outrun the count.
/// `Err(until)`, and nothing written, when the counter is full: there is
/// room again at `until`, the end of its window.
pub(crate) async fn take_quota_slot<C: Conn>(c: &C, key: &str, rule: Rule, at: UnixTime) -> StoreResult<Result<(), UnixTime>> {
    let current = counter(c, key).await?;
    let Some(after) = current.count(rule, at) else { return Ok(Err(current.window_start.plus_secs(rule.window_secs))) };
    put_counter(c, &Slot { key: key.to_owned(), subject: None, rule, reset_on_success: false }, &after).await?;
    Ok(Ok(()))
}

async fn counter<C: Conn>(c: &C, key: &str) -> StoreResult<Counter> {
    c.execute(&sql::ZERO_COUNTER, &values![key]).await?;
    query_one(c, &sql::COUNTER, &values![key], codec::counter).await
}

/// The counters of `slots`, in their order, locked in key order: two
/// transactions that lock several never wait on each other.
async fn counters<C: Conn>(c: &C, slots: &[Slot]) -> StoreResult<Vec<Counter>> {
    let mut order: Vec<usize> = (0..slots.len()).collect();
    order.sort_by(|&a, &b| slots[a].key.cmp(&slots[b].key));
    let mut out = vec![Counter::default(); slots.len()];
    for i in order {
        if let (Some(slot), Some(place)) = (slots.get(i), out.get_mut(i)) {
            *place = counter(c, &slot.key).await?;
        }
    }
    Ok(out)
}

/// Writes `slot`'s counter.
async fn put_counter<C: Conn>(c: &C, slot: &Slot, counter: &Counter) -> StoreResult<()> {
    c.execute(&sql::PUT_COUNTER, &codec::counter_row(slot, counter)).await.map(drop)
}

/// See [`crate::AuthStore::begin_attempt`].
pub(crate) async fn begin_attempt<C: Conn>(c: &C, slots: &[Slot], now: UnixTime) -> StoreResult<Admission> {
    let mut taken = Vec::with_capacity(slots.len());
    for (slot, counter) in slots.iter().zip(counters(c, slots).await?) {
        match counter.admit(slot.rule, now) {
            Ok(after) => taken.push((slot, after)),
            // Nothing was changed: counters made at zero are as good as absent.
            Err(refused) => return Ok(refused),
        }
    }
    for (slot, after) in taken {
        put_counter(c, slot, &after).await?;
    }
    Ok(Admission::Admitted)
}

/// See [`crate::AuthStore::attempt_failed`].
pub(crate) async fn attempt_failed<C: Conn>(c: &C, slots: &[Slot], event: &Event) -> StoreResult<usize> {
    append_event(c, event).await?;
    let mut locked = 0;
    for (slot, before) in slots.iter().zip(counters(c, slots).await?) {
        let after = before.failed(slot.rule, event.at);
        if after != before {
            put_counter(c, slot, &after).await?;
            append_event(c, &lockout_event(event, &slot.key)).await?;
            locked += 1;
        }
    }
    Ok(locked)
}

/// See [`crate::AuthStore::attempt_succeeded`].
pub(crate) async fn attempt_succeeded<C: Conn>(
    c: &C,
    slots: &[Slot],
    origin: Option<&(String, String)>,
    signed_in: Option<&(UserId, Event)>,
    now: UnixTime,
) -> StoreResult<bool> {
    let mut after = Vec::with_capacity(slots.len());
    for (slot, counter) in slots.iter().zip(counters(c, slots).await?) {
        if counter.is_locked(now) {
            return Ok(false);
        }
        after.push((slot, counter.succeeded(slot.reset_on_success)));
    }
    for (slot, counter) in after {
        put_counter(c, slot, &counter).await?;
    }
    if let Some((name_key, addr)) = origin {
        c.execute(&sql::REMEMBER_ORIGIN, &values![name_key.as_str(), addr.as_str(), now]).await?;
    }
    if let Some((user, event)) = signed_in {
        c.execute(&sql::STAMP_SIGN_IN, &values![user.as_str(), now]).await?;
        append_event(c, event).await?;
    }
    Ok(true)
}
