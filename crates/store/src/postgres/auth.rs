//! The token service's request path on PostgreSQL: the context reads and
//! the conditional writes of device codes and grants. Each context is one
//! statement (one round trip); each write one transaction whose first
//! statement is conditional on the version read.

use strongroom_core::event::Event;
use strongroom_core::grant::device::{DeviceAuthorization, DeviceContext, DeviceState, PollRecord};
use strongroom_core::grant::refresh::RefreshContext;
use strongroom_core::grant::{AccessContext, Grant, GrantId};
use strongroom_core::identity::User;
use strongroom_core::integration::TokenOverrides;
use strongroom_core::throttle::{Admission, Counter, Rule, Slot};
use strongroom_core::time::UnixTime;
use strongroom_core::token::TokenHash;

use super::{
    PgStore, USER_COLS, append_event, counter_for_update, device_from_row, exec, get, grant_from_row, insert_grant, opt_grant_from_row, pg,
    query_one, query_opt, standing_from_row, time, user_from_row,
};
use crate::sql::{self, DEVICE_COL_COUNT, GRANT_COL_COUNT, STANDING_COL_COUNT};
use crate::{AuthStore, LoginContext, NewTokens, PairChange, StoreError, StoreFuture, device_state_parts, lockout_event};

/// Decodes the [`sql::ACCESS_CONTEXT`] row.
pub(super) fn access_from_row(r: &tokio_postgres::Row, access_hash: TokenHash) -> crate::StoreResult<AccessContext> {
    let o = GRANT_COL_COUNT;
    Ok(AccessContext {
        grant: grant_from_row(r, 0)?,
        token_hash: access_hash,
        token_issued_at: time(r, o)?,
        token_expires: time(r, o + 1)?,
        user_name: get(r, o + 2)?,
        master_admin: get(r, o + 3)?,
        standing: standing_from_row(r, o + 4)?,
    })
}

impl AuthStore for PgStore {
    fn access_context(&self, access_hash: TokenHash) -> StoreFuture<'_, Option<AccessContext>> {
        on_client!(self, |c| {
            let row = query_opt(&c, sql::ACCESS_CONTEXT.postgres(), &[&access_hash.as_bytes()]).await?;
            row.map(|r| access_from_row(&r, access_hash)).transpose()
        })
    }

    fn refresh_context(&self, refresh_hash: TokenHash) -> StoreFuture<'_, Option<RefreshContext>> {
        on_client!(self, |c| {
            let row = query_opt(&c, sql::REFRESH_CONTEXT.postgres(), &[&refresh_hash.as_bytes()]).await?;
            row.map(|r| {
                Ok(RefreshContext {
                    presented: refresh_hash,
                    grant: grant_from_row(&r, 0)?,
                    standing: standing_from_row(&r, GRANT_COL_COUNT)?,
                    retry_window: get(&r, GRANT_COL_COUNT + STANDING_COL_COUNT)?,
                })
            })
            .transpose()
        })
    }

    fn device_context(&self, code_hash: TokenHash) -> StoreFuture<'_, Option<DeviceContext>> {
        on_client!(self, |c| {
            let row = query_opt(&c, sql::DEVICE_CONTEXT.postgres(), &[&code_hash.as_bytes()]).await?;
            row.map(|r| {
                let o = DEVICE_COL_COUNT;
                Ok(DeviceContext {
                    device: device_from_row(&r)?,
                    device_flow_enabled: get::<Option<bool>>(&r, o)?.unwrap_or(false),
                    overrides: TokenOverrides {
                        access_validity: get(&r, o + 1)?,
                        grant_validity: get(&r, o + 2)?,
                        refreshable: get(&r, o + 3)?,
                        device_code_validity: get(&r, o + 4)?,
                        poll_interval: get(&r, o + 5)?,
                        retry_window: get(&r, o + 6)?,
                    },
                    standing: standing_from_row(&r, o + 7)?,
                    grant: opt_grant_from_row(&r, o + 7 + STANDING_COL_COUNT)?,
                })
            })
            .transpose()
        })
    }

    fn device_by_user_code(&self, user_code_hash: TokenHash) -> StoreFuture<'_, Option<DeviceAuthorization>> {
        on_client!(self, |c| {
            let row = query_opt(&c, sql::DEVICE_BY_USER_CODE.postgres(), &[&user_code_hash.as_bytes()]).await?;
            row.map(|r| device_from_row(&r)).transpose()
        })
    }

    fn redeem_device(&self, code_hash: TokenHash, version: i64, grant: Grant, tokens: NewTokens, event: Event) -> StoreFuture<'_, bool> {
        in_tx!(self, |tx| {
            async {
                if exec(&tx, sql::REDEEM_DEVICE.postgres(), &[&code_hash.as_bytes(), &version, &grant.id.as_str()]).await? != 1 {
                    return Ok(false);
                }
                insert_grant(&tx, &grant, &tokens).await?;
                append_event(&tx, &event).await?;
                Ok(true)
            }
            .await
        })
    }

    fn insert_grant(&self, grant: Grant, tokens: NewTokens, event: Event) -> StoreFuture<'_, ()> {
        in_tx!(self, |tx| {
            async {
                insert_grant(&tx, &grant, &tokens).await?;
                append_event(&tx, &event).await.map(drop)
            }
            .await
        })
    }

    fn advance_pair(&self, grant_id: GrantId, version: i64, change: PairChange, event: Event) -> StoreFuture<'_, bool> {
        // One statement in a group commit (`batch`).
        Box::pin(self.batch.advance_pair(grant_id, version, change, event))
    }

    fn mark_pair_used(&self, grant_id: GrantId, access_hash: TokenHash) -> StoreFuture<'_, ()> {
        on_client!(self, |c| {
            exec(&c, sql::MARK_PAIR_USED.postgres(), &[&grant_id.as_str(), &access_hash.as_bytes(), &true]).await.map(drop)
        })
    }

    fn revoke_grant(&self, grant_id: GrantId, at: UnixTime, event: Event) -> StoreFuture<'_, bool> {
        in_tx!(self, |tx| {
            async {
                if exec(&tx, sql::REVOKE_GRANT.postgres(), &[&at.millis(), &grant_id.as_str()]).await? != 1 {
                    return Ok(false);
                }
                // The access tokens die with the grant; refresh tokens stay as
                // tombstones so a late replay is still recognised.
                exec(&tx, "DELETE FROM access_tokens WHERE grant_id = $1", &[&grant_id.as_str()]).await?;
                append_event(&tx, &event).await?;
                Ok(true)
            }
            .await
        })
    }
    fn user_by_name(&self, name: String) -> StoreFuture<'_, Option<(User, String)>> {
        on_client!(self, |c| {
            let row = c
                .query_opt(&format!("SELECT {USER_COLS}, password_hash FROM users WHERE name_key = $1"), &[&name.to_lowercase()])
                .await
                .map_err(pg)?;
            row.map(|r| Ok((user_from_row(&r)?, get(&r, 5)?))).transpose()
        })
    }
    fn insert_device(&self, d: DeviceAuthorization, event: Event, quota: Option<(String, Rule)>) -> StoreFuture<'_, ()> {
        in_tx!(self, |tx| {
            async {
                if let Some((key, rule)) = &quota {
                    let Some(after) = counter_for_update(&tx, key).await?.count(*rule, event.at) else {
                        return Err(StoreError::QuotaExceeded);
                    };
                    put_counter(&tx, &Slot { key: key.clone(), subject: None, rule: *rule, reset_on_success: false }, &after).await?;
                }
                let (state, user) = device_state_parts(&d.state);
                tx.execute(
                    "DELETE FROM device_codes WHERE user_code_hash = $1 AND expires_at <= $2",
                    &[&d.user_code_hash.as_bytes(), &d.created_at.millis()],
                )
                .await
                .map_err(pg)?;
                tx.execute(
                    "INSERT INTO device_codes (code_hash, user_code_hash, client_id, scope, state, user_id, created_at, expires_at, interval_secs, \
                     last_poll_at, version) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
                    &[
                        &d.code_hash.as_bytes(),
                        &d.user_code_hash.as_bytes(),
                        &d.client_id,
                        &d.scope.to_string(),
                        &state,
                        &user,
                        &d.created_at.millis(),
                        &d.expires_at.millis(),
                        &d.interval_secs,
                        &d.last_poll_at.map(UnixTime::millis),
                        &d.version,
                    ],
                )
                .await
                .map_err(pg)?;
                append_event(&tx, &event).await.map(drop)
            }
            .await
        })
    }
    fn record_poll(&self, code_hash: TokenHash, version: i64, record: PollRecord) -> StoreFuture<'_, bool> {
        on_client!(self, |c| {
            let n = c
                .execute(
                    "UPDATE device_codes SET last_poll_at = $1, interval_secs = $2, version = version + 1 \
                     WHERE code_hash = $3 AND version = $4 AND state = 'pending'",
                    &[&record.last_poll_at.millis(), &record.interval_secs, &code_hash.as_bytes(), &version],
                )
                .await
                .map_err(pg)?;
            Ok(n == 1)
        })
    }
    fn decide_device(&self, code_hash: TokenHash, version: i64, decision: DeviceState, event: Event) -> StoreFuture<'_, bool> {
        in_tx!(self, |tx| {
            async {
                let (state, user) = device_state_parts(&decision);
                if !matches!(decision, DeviceState::Approved { .. } | DeviceState::Denied { .. }) {
                    return Err(StoreError::Corrupt(format!("a user cannot move a device code to {state}")));
                }
                let n = tx
                    .execute(
                        "UPDATE device_codes SET state = $1, user_id = $2, version = version + 1 \
                         WHERE code_hash = $3 AND version = $4 AND state = 'pending'",
                        &[&state, &user, &code_hash.as_bytes(), &version],
                    )
                    .await
                    .map_err(pg)?;
                if n == 1 {
                    append_event(&tx, &event).await?;
                }
                Ok(n == 1)
            }
            .await
        })
    }
    fn login_context(&self, name_key: String, addr: String) -> StoreFuture<'_, LoginContext> {
        on_client!(self, |c| {
            let r = query_one(&c, sql::LOGIN_CONTEXT.postgres(), &[&name_key, &addr]).await?;
            let user = match get::<Option<String>>(&r, 0)? {
                Some(_) => Some((user_from_row(&r)?, get::<String>(&r, 5)?)),
                None => None,
            };
            Ok(LoginContext { user, known_origin: get(&r, 6)? })
        })
    }
    fn begin_attempt(&self, slots: Vec<Slot>, now: UnixTime) -> StoreFuture<'_, Admission> {
        in_plain_tx!(self, |tx| {
            async {
                let mut taken = Vec::with_capacity(slots.len());
                for slot in in_key_order(&slots) {
                    match counter_for_update(&tx, &slot.key).await?.admit(slot.rule, now) {
                        Ok(after) => taken.push((slot, after)),
                        // Nothing was changed: the rows made at zero are as good as absent.
                        Err(refused) => return Ok(refused),
                    }
                }
                for (slot, after) in taken {
                    put_counter(&tx, slot, &after).await?;
                }
                Ok(Admission::Admitted)
            }
            .await
        })
    }
    fn attempt_failed(&self, slots: Vec<Slot>, event: Event) -> StoreFuture<'_, usize> {
        in_tx!(self, |tx| {
            async {
                append_event(&tx, &event).await?;
                let mut locked = 0;
                for slot in in_key_order(&slots) {
                    let before = counter_for_update(&tx, &slot.key).await?;
                    let after = before.failed(slot.rule, event.at);
                    if after != before {
                        put_counter(&tx, slot, &after).await?;
                        append_event(&tx, &lockout_event(&event, &slot.key)).await?;
                        locked += 1;
                    }
                }
                Ok(locked)
            }
            .await
        })
    }
    fn attempt_succeeded(&self, slots: Vec<Slot>, origin: Option<(String, String)>, now: UnixTime) -> StoreFuture<'_, bool> {
        in_plain_tx!(self, |tx| {
            async {
                let mut after = Vec::with_capacity(slots.len());
                for slot in in_key_order(&slots) {
                    let counter = counter_for_update(&tx, &slot.key).await?;
                    if counter.is_locked(now) {
                        return Ok(false);
                    }
                    after.push((slot, counter.succeeded(slot.reset_on_success)));
                }
                for (slot, counter) in after {
                    put_counter(&tx, slot, &counter).await?;
                }
                if let Some((name_key, addr)) = &origin {
                    exec(&tx, sql::REMEMBER_ORIGIN.postgres(), &[name_key, addr, &now.millis()]).await?;
                }
                Ok(true)
            }
            .await
        })
    }
}

/// `slots` sorted by key: the order [`counter_for_update`] locks them in.
fn in_key_order(slots: &[Slot]) -> Vec<&Slot> {
    let mut v: Vec<&Slot> = slots.iter().collect();
    v.sort_by(|a, b| a.key.cmp(&b.key));
    v
}

/// Writes `slot`'s counter.
async fn put_counter(c: &impl deadpool_postgres::GenericClient, slot: &Slot, counter: &Counter) -> crate::StoreResult<()> {
    exec(
        c,
        sql::PUT_COUNTER.postgres(),
        &[
            &slot.key,
            &i64::from(counter.failures),
            &counter.window_start.millis(),
            &counter.locked_until.map(UnixTime::millis),
            &slot.subject,
        ],
    )
    .await
    .map(drop)
}
