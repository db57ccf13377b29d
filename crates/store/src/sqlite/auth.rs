//! The token service's request path on SQLite: the context reads and the
//! conditional writes of device codes and grants.

use rusqlite::{OptionalExtension, params};

use strongroom_core::event::Event;
use strongroom_core::grant::device::{DeviceAuthorization, DeviceContext, DeviceState, PollRecord};
use strongroom_core::grant::refresh::RefreshContext;
use strongroom_core::grant::{AccessContext, Grant, GrantId};
use strongroom_core::identity::User;
use strongroom_core::integration::TokenOverrides;
use strongroom_core::throttle::{Admission, Counter, Rule, Slot};
use strongroom_core::time::UnixTime;
use strongroom_core::token::TokenHash;

use super::writer::backend;
use super::{
    SqliteStore, USER_COLS, access_from_row, append_event_tx, counter_of, device_from_row, exec, grant_from_row, insert_grant_tx,
    insert_tokens, is_unique_violation, opt_grant_from_row, standing_from_row, user_from_row,
};
use crate::sql::{self, DEVICE_COL_COUNT, GRANT_COL_COUNT, STANDING_COL_COUNT};
use crate::{AuthStore, LoginContext, NewTokens, PairChange, StoreError, StoreFuture, device_state_parts, lockout_event};

impl AuthStore for SqliteStore {
    fn access_context(&self, access_hash: TokenHash) -> StoreFuture<'_, Option<AccessContext>> {
        Box::pin(self.read(move |c| {
            let mut st = c.prepare_cached(sql::ACCESS_CONTEXT.sqlite()).map_err(backend)?;
            st.query_row([access_hash.as_bytes()], |r| access_from_row(r, access_hash)).optional().map_err(backend)
        }))
    }

    fn refresh_context(&self, refresh_hash: TokenHash) -> StoreFuture<'_, Option<RefreshContext>> {
        Box::pin(self.read(move |c| {
            let mut st = c.prepare_cached(sql::REFRESH_CONTEXT.sqlite()).map_err(backend)?;
            st.query_row([refresh_hash.as_bytes()], |r| {
                Ok(RefreshContext {
                    presented: refresh_hash,
                    grant: grant_from_row(r, 0)?,
                    standing: standing_from_row(r, GRANT_COL_COUNT)?,
                    retry_window: r.get(GRANT_COL_COUNT + STANDING_COL_COUNT)?,
                })
            })
            .optional()
            .map_err(backend)
        }))
    }

    fn device_context(&self, code_hash: TokenHash) -> StoreFuture<'_, Option<DeviceContext>> {
        Box::pin(self.read(move |c| {
            let mut st = c.prepare_cached(sql::DEVICE_CONTEXT.sqlite()).map_err(backend)?;
            st.query_row([code_hash.as_bytes()], |r| {
                let o = DEVICE_COL_COUNT;
                Ok(DeviceContext {
                    device: device_from_row(r)?,
                    device_flow_enabled: r.get::<_, Option<bool>>(o)?.unwrap_or(false),
                    overrides: TokenOverrides {
                        access_validity: r.get(o + 1)?,
                        grant_validity: r.get(o + 2)?,
                        refreshable: r.get(o + 3)?,
                        device_code_validity: r.get(o + 4)?,
                        poll_interval: r.get(o + 5)?,
                        retry_window: r.get(o + 6)?,
                    },
                    standing: standing_from_row(r, o + 7)?,
                    grant: opt_grant_from_row(r, o + 7 + STANDING_COL_COUNT)?,
                })
            })
            .optional()
            .map_err(backend)
        }))
    }

    fn device_by_user_code(&self, user_code_hash: TokenHash) -> StoreFuture<'_, Option<DeviceAuthorization>> {
        Box::pin(self.read(move |c| {
            let mut st = c.prepare_cached(sql::DEVICE_BY_USER_CODE.sqlite()).map_err(backend)?;
            st.query_row([user_code_hash.as_bytes()], device_from_row).optional().map_err(backend)
        }))
    }

    fn redeem_device(&self, code_hash: TokenHash, version: i64, grant: Grant, tokens: NewTokens, event: Event) -> StoreFuture<'_, bool> {
        Box::pin(self.write(move |c| {
            if exec(c, sql::REDEEM_DEVICE.sqlite(), params![code_hash.as_bytes(), version, grant.id.as_str()])? != 1 {
                return Ok(false);
            }
            insert_grant_tx(c, &grant, &tokens)?;
            append_event_tx(c, &event)?;
            Ok(true)
        }))
    }

    fn insert_grant(&self, grant: Grant, tokens: NewTokens, event: Event) -> StoreFuture<'_, ()> {
        Box::pin(self.write(move |c| {
            insert_grant_tx(c, &grant, &tokens)?;
            append_event_tx(c, &event).map(drop)
        }))
    }

    fn advance_pair(&self, grant_id: GrantId, version: i64, change: PairChange, event: Event) -> StoreFuture<'_, bool> {
        Box::pin(self.write(move |c| {
            let p = &change.pair;
            let now = change.tokens.issued_at.millis();
            let n = exec(
                c,
                sql::ADVANCE_PAIR.sqlite(),
                params![
                    grant_id.as_str(),
                    version,
                    p.refresh.as_ref().map(TokenHash::as_bytes),
                    p.access.as_ref().map(TokenHash::as_bytes),
                    p.used,
                    p.rotated_from.as_ref().map(|(h, _)| h.as_bytes()),
                    p.rotated_from.map(|(_, at)| at.millis()),
                    now
                ],
            )?;
            if n != 1 {
                return Ok(false);
            }
            if let Some(retired) = &change.retire_access {
                exec(c, sql::RETIRE_ACCESS.sqlite(), [retired.as_bytes()])?;
            }
            insert_tokens(c, grant_id.as_str(), &change.tokens)?;
            append_event_tx(c, &event)?;
            Ok(true)
        }))
    }

    fn mark_pair_used(&self, grant_id: GrantId, access_hash: TokenHash) -> StoreFuture<'_, ()> {
        Box::pin(
            self.write(move |c| exec(c, sql::MARK_PAIR_USED.sqlite(), params![grant_id.as_str(), access_hash.as_bytes(), true]).map(drop)),
        )
    }

    fn revoke_grant(&self, grant_id: GrantId, at: UnixTime, event: Event) -> StoreFuture<'_, bool> {
        Box::pin(self.write(move |c| {
            if exec(c, sql::REVOKE_GRANT.sqlite(), params![at.millis(), grant_id.as_str()])? != 1 {
                return Ok(false);
            }
            // The access tokens die with the grant; refresh tokens stay as
            // tombstones so a late replay is still recognised.
            exec(c, "DELETE FROM access_tokens WHERE grant_id = ?1", [grant_id.as_str()])?;
            append_event_tx(c, &event)?;
            Ok(true)
        }))
    }
    fn user_by_name(&self, name: String) -> StoreFuture<'_, Option<(User, String)>> {
        Box::pin(self.read(move |c| {
            c.query_row(&format!("SELECT {USER_COLS}, password_hash FROM users WHERE name_key = ?1"), [name.to_lowercase()], |r| {
                Ok((user_from_row(r)?, r.get::<_, String>(5)?))
            })
            .optional()
            .map_err(backend)
        }))
    }
    fn insert_device(&self, d: DeviceAuthorization, event: Event, quota: Option<(String, Rule)>) -> StoreFuture<'_, ()> {
        Box::pin(self.write(move |c| {
            if let Some((key, rule)) = &quota {
                let Some(after) = counter_of(c, key)?.count(*rule, event.at) else {
                    return Err(StoreError::QuotaExceeded);
                };
                let slot = Slot { key: key.clone(), subject: None, rule: *rule, reset_on_success: false };
                put_counter(c, &slot, &after)?;
            }
            let (state, user) = device_state_parts(&d.state);
            // A user code of a code that has expired may be reused.
            c.execute(
                "DELETE FROM device_codes WHERE user_code_hash = ?1 AND expires_at <= ?2",
                params![d.user_code_hash.as_bytes(), d.created_at.millis()],
            )
            .map_err(backend)?;
            let r = c.execute(
                "INSERT INTO device_codes (code_hash, user_code_hash, client_id, scope, state, user_id, created_at, expires_at, interval_secs, \
                 last_poll_at, version) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                params![
                    d.code_hash.as_bytes(),
                    d.user_code_hash.as_bytes(),
                    d.client_id,
                    d.scope.to_string(),
                    state,
                    user,
                    d.created_at.millis(),
                    d.expires_at.millis(),
                    d.interval_secs,
                    d.last_poll_at.map(UnixTime::millis),
                    d.version
                ],
            );
            match r {
                Err(e) if is_unique_violation(&e) => Err(StoreError::Conflict),
                Err(e) => Err(backend(e)),
                Ok(_) => append_event_tx(c, &event).map(drop),
            }
        }))
    }
    fn record_poll(&self, code_hash: TokenHash, version: i64, record: PollRecord) -> StoreFuture<'_, bool> {
        Box::pin(self.write(move |c| {
            let n = c
                .execute(
                    "UPDATE device_codes SET last_poll_at = ?1, interval_secs = ?2, version = version + 1 \
                     WHERE code_hash = ?3 AND version = ?4 AND state = 'pending'",
                    params![record.last_poll_at.millis(), record.interval_secs, code_hash.as_bytes(), version],
                )
                .map_err(backend)?;
            Ok(n == 1)
        }))
    }
    fn decide_device(&self, code_hash: TokenHash, version: i64, decision: DeviceState, event: Event) -> StoreFuture<'_, bool> {
        Box::pin(self.write(move |c| {
            let (state, user) = device_state_parts(&decision);
            if !matches!(decision, DeviceState::Approved { .. } | DeviceState::Denied { .. }) {
                return Err(StoreError::Corrupt(format!("a user cannot move a device code to {state}")));
            }
            let n = c
                .execute(
                    "UPDATE device_codes SET state = ?1, user_id = ?2, version = version + 1 \
                     WHERE code_hash = ?3 AND version = ?4 AND state = 'pending'",
                    params![state, user, code_hash.as_bytes(), version],
                )
                .map_err(backend)?;
            if n == 1 {
                append_event_tx(c, &event)?;
            }
            Ok(n == 1)
        }))
    }
    fn login_context(&self, name_key: String, addr: String) -> StoreFuture<'_, LoginContext> {
        Box::pin(self.read(move |c| {
            let mut st = c.prepare_cached(sql::LOGIN_CONTEXT.sqlite()).map_err(backend)?;
            st.query_row(params![name_key, addr], |r| {
                let user = match r.get::<_, Option<String>>(0)? {
                    Some(_) => Some((user_from_row(r)?, r.get::<_, String>(5)?)),
                    None => None,
                };
                Ok(LoginContext { user, known_origin: r.get(6)? })
            })
            .map_err(backend)
        }))
    }
    fn begin_attempt(&self, slots: Vec<Slot>, now: UnixTime) -> StoreFuture<'_, Admission> {
        Box::pin(self.write(move |c| {
            let mut taken = Vec::with_capacity(slots.len());
            for slot in &slots {
                match counter_of(c, &slot.key)?.admit(slot.rule, now) {
                    Ok(after) => taken.push(after),
                    Err(refused) => return Ok(refused),
                }
            }
            for (slot, after) in slots.iter().zip(taken) {
                put_counter(c, slot, &after)?;
            }
            Ok(Admission::Admitted)
        }))
    }
    fn attempt_failed(&self, slots: Vec<Slot>, event: Event) -> StoreFuture<'_, usize> {
        Box::pin(self.write(move |c| {
            append_event_tx(c, &event)?;
            let mut locked = 0;
            for slot in &slots {
                let before = counter_of(c, &slot.key)?;
                let after = before.failed(slot.rule, event.at);
                if after != before {
                    put_counter(c, slot, &after)?;
                    append_event_tx(c, &lockout_event(&event, &slot.key))?;
                    locked += 1;
                }
            }
            Ok(locked)
        }))
    }
    fn attempt_succeeded(&self, slots: Vec<Slot>, origin: Option<(String, String)>, now: UnixTime) -> StoreFuture<'_, bool> {
        Box::pin(self.write(move |c| {
            let mut after = Vec::with_capacity(slots.len());
            for slot in &slots {
                let counter = counter_of(c, &slot.key)?;
                if counter.is_locked(now) {
                    return Ok(false);
                }
                after.push(counter.succeeded(slot.reset_on_success));
            }
            for (slot, counter) in slots.iter().zip(after) {
                put_counter(c, slot, &counter)?;
            }
            if let Some((name_key, addr)) = &origin {
                exec(c, sql::REMEMBER_ORIGIN.sqlite(), params![name_key, addr, now.millis()])?;
            }
            Ok(true)
        }))
    }
}

/// Writes `slot`'s counter.
fn put_counter(c: &rusqlite::Connection, slot: &Slot, counter: &Counter) -> crate::StoreResult<()> {
    exec(
        c,
        sql::PUT_COUNTER.sqlite(),
        params![
            slot.key,
            i64::from(counter.failures),
            counter.window_start.millis(),
            counter.locked_until.map(UnixTime::millis),
            slot.subject
        ],
    )
    .map(drop)
}
