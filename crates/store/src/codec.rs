//! The row codec: every domain type as the store's columns, written once
//! for both backends.
//!
//! A statement's parameters are a list of [`Value`]s, which each driver
//! binds its own way (`sqlite` keeps booleans as integers; `postgres` binds
//! a value as the type the server inferred for the parameter). A result row
//! is read through [`Row`], the one accessor each driver implements, by a
//! [`Cols`] cursor that walks its columns in order. Encoders here give a
//! type's whole table row in [`crate::schema`] order (so an `INSERT` is
//! [`crate::schema::Table::insert`] and a `SELECT` names
//! [`crate::schema::Table::cols`]); decoders read it back in the same order.
//! Nothing here knows which database it talks to.

use std::borrow::Cow;

use strongroom_core::event::{Event, EventKind, StoredEvent};
use strongroom_core::grant::device::{DeviceAuthorization, DeviceContext, DeviceState};
use strongroom_core::grant::{AccessContext, Grant, GrantId, OlderAccess, Pair, Standing};
use strongroom_core::identity::{Group, GroupId, User, UserId};
use strongroom_core::integration::{AllowedUsers, GrantTypes, Integration, TokenOverrides};
use strongroom_core::machine::{Algorithm, CertField, Condition, JwtIssuer, KeySource, Mapping, MappingRule};
use strongroom_core::scope::Scope;
use strongroom_core::throttle::{Counter, Slot};
use strongroom_core::time::UnixTime;
use strongroom_core::token::TokenHash;
use strongroom_core::tree::ObjectGuid;
use strongroom_core::vault::value::ValueType;
use strongroom_core::vault::{FolderPath, Rights, VaultId};

use crate::schema::{self, Table};
use crate::{DataKeyRecord, SealedItem, StoreError, StoreResult, StoredAssociation, VaultEntry};

/// One value bound to a statement or read from a row.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum Value<'a> {
    Null,
    Int(i64),
    Bool(bool),
    Text(Cow<'a, str>),
    Bytes(Cow<'a, [u8]>),
}

impl Value<'_> {
    /// The value, owning what it borrowed.
    pub(crate) fn into_owned(self) -> Value<'static> {
        match self {
            Value::Null => Value::Null,
            Value::Int(v) => Value::Int(v),
            Value::Bool(b) => Value::Bool(b),
            Value::Text(t) => Value::Text(Cow::Owned(t.into_owned())),
            Value::Bytes(b) => Value::Bytes(Cow::Owned(b.into_owned())),
        }
    }
}

/// Values hold password hashes, token hashes and sealed data: `Debug` shows only their kind.
impl std::fmt::Debug for Value<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Value::Null => "Null",
            Value::Int(_) => "Int(..)",
            Value::Bool(_) => "Bool(..)",
            Value::Text(_) => "Text(..)",
            Value::Bytes(_) => "Bytes(..)",
        })
    }
}

impl<'a> From<&'a str> for Value<'a> {
    fn from(s: &'a str) -> Self {
        Value::Text(Cow::Borrowed(s))
    }
}

impl<'a> From<&'a String> for Value<'a> {
    fn from(s: &'a String) -> Self {
        Value::Text(Cow::Borrowed(s))
    }
}

impl From<String> for Value<'_> {
    fn from(s: String) -> Self {
        Value::Text(Cow::Owned(s))
    }
}

impl<'a> From<&'a [u8]> for Value<'a> {
    fn from(b: &'a [u8]) -> Self {
        Value::Bytes(Cow::Borrowed(b))
    }
}

impl<'a> From<&'a Vec<u8>> for Value<'a> {
    fn from(b: &'a Vec<u8>) -> Self {
        Value::Bytes(Cow::Borrowed(b))
    }
}

impl From<Vec<u8>> for Value<'_> {
    fn from(b: Vec<u8>) -> Self {
        Value::Bytes(Cow::Owned(b))
    }
}

impl<'a> From<&'a [u8; 32]> for Value<'a> {
    fn from(b: &'a [u8; 32]) -> Self {
        Value::Bytes(Cow::Borrowed(b))
    }
}

impl<'a> From<&'a TokenHash> for Value<'a> {
    fn from(h: &'a TokenHash) -> Self {
        Value::Bytes(Cow::Borrowed(h.as_bytes()))
    }
}

impl From<i64> for Value<'_> {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}

impl From<i32> for Value<'_> {
    fn from(v: i32) -> Self {
        Value::Int(i64::from(v))
    }
}

impl From<u32> for Value<'_> {
    fn from(v: u32) -> Self {
        Value::Int(i64::from(v))
    }
}

impl From<bool> for Value<'_> {
    fn from(v: bool) -> Self {
        Value::Bool(v)
    }
}

impl From<UnixTime> for Value<'_> {
    fn from(t: UnixTime) -> Self {
        Value::Int(t.millis())
    }
}

impl From<VaultId> for Value<'_> {
    fn from(id: VaultId) -> Self {
        Value::Int(id.0)
    }
}

impl<'a, T: Into<Value<'a>>> From<Option<T>> for Value<'a> {
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::Null, Into::into)
    }
}

/// `[a, b, …]` as a statement's values.
macro_rules! values {
    ($($v:expr),* $(,)?) => {
        [$($crate::codec::Value::from($v)),*]
    };
}
pub(crate) use values;

/// One result row, as a driver hands it over.
pub(crate) trait Row {
    /// Column `i`. SQLite answers booleans as integers.
    fn value(&self, i: usize) -> StoreResult<Value<'_>>;
}

/// The columns of a row, read in order.
pub(crate) struct Cols<'r> {
    row: &'r dyn Row,
    next: usize,
}

fn wrong(i: usize, expected: &str) -> StoreError {
    StoreError::corrupt(format!("column {i}: expected {expected}"))
}

impl<'r> Cols<'r> {
    pub(crate) fn new(row: &'r dyn Row) -> Cols<'r> {
        Cols { row, next: 0 }
    }

    fn take(&mut self) -> StoreResult<(usize, Value<'r>)> {
        let i = self.next;
        self.next += 1;
        Ok((i, self.row.value(i)?))
    }

    /// The index of the next column.
    pub(crate) fn position(&self) -> usize {
        self.next
    }

    /// Passes over `n` columns.
    pub(crate) fn skip(&mut self, n: usize) -> &mut Self {
        self.next += n;
        self
    }

    /// Whether the next column is NULL (it is not taken).
    pub(crate) fn next_is_null(&self) -> StoreResult<bool> {
        Ok(matches!(self.row.value(self.next)?, Value::Null))
    }

    pub(crate) fn opt_int(&mut self) -> StoreResult<Option<i64>> {
        match self.take()? {
            (_, Value::Null) => Ok(None),
            (_, Value::Int(v)) => Ok(Some(v)),
            (i, _) => Err(wrong(i, "an integer")),
        }
    }

    pub(crate) fn int(&mut self) -> StoreResult<i64> {
        let i = self.next;
        self.opt_int()?.ok_or_else(|| wrong(i, "an integer, not NULL"))
    }

    pub(crate) fn int32(&mut self) -> StoreResult<i32> {
        let i = self.next;
        i32::try_from(self.int()?).map_err(|_| wrong(i, "a 32-bit integer"))
    }

    pub(crate) fn opt_bool(&mut self) -> StoreResult<Option<bool>> {
        match self.take()? {
            (_, Value::Null) => Ok(None),
            (_, Value::Bool(b)) => Ok(Some(b)),
            (_, Value::Int(v)) => Ok(Some(v != 0)),
            (i, _) => Err(wrong(i, "a boolean")),
        }
    }

    pub(crate) fn bool(&mut self) -> StoreResult<bool> {
        let i = self.next;
        self.opt_bool()?.ok_or_else(|| wrong(i, "a boolean, not NULL"))
    }

    pub(crate) fn opt_str(&mut self) -> StoreResult<Option<Cow<'r, str>>> {
        match self.take()? {
            (_, Value::Null) => Ok(None),
            (_, Value::Text(t)) => Ok(Some(t)),
            (i, _) => Err(wrong(i, "text")),
        }
    }

    pub(crate) fn opt_text(&mut self) -> StoreResult<Option<String>> {
        Ok(self.opt_str()?.map(Cow::into_owned))
    }

    pub(crate) fn text(&mut self) -> StoreResult<String> {
        let i = self.next;
        self.opt_text()?.ok_or_else(|| wrong(i, "text, not NULL"))
    }

    pub(crate) fn opt_blob(&mut self) -> StoreResult<Option<Cow<'r, [u8]>>> {
        match self.take()? {
            (_, Value::Null) => Ok(None),
            (_, Value::Bytes(b)) => Ok(Some(b)),
            (i, _) => Err(wrong(i, "bytes")),
        }
    }

    pub(crate) fn bytes(&mut self) -> StoreResult<Vec<u8>> {
        let i = self.next;
        Ok(self.opt_blob()?.ok_or_else(|| wrong(i, "bytes, not NULL"))?.into_owned())
    }

    pub(crate) fn opt_hash(&mut self) -> StoreResult<Option<TokenHash>> {
        let i = self.next;
        self.opt_blob()?.map(|b| TokenHash::from_slice(&b).ok_or_else(|| wrong(i, "a 32-byte hash"))).transpose()
    }

    pub(crate) fn hash(&mut self) -> StoreResult<TokenHash> {
        let i = self.next;
        self.opt_hash()?.ok_or_else(|| wrong(i, "a hash, not NULL"))
    }

    pub(crate) fn hash32(&mut self) -> StoreResult<[u8; 32]> {
        let i = self.next;
        let b = self.opt_blob()?.ok_or_else(|| wrong(i, "a hash, not NULL"))?;
        <[u8; 32]>::try_from(&*b).map_err(|_| wrong(i, "a 32-byte hash"))
    }

    pub(crate) fn time(&mut self) -> StoreResult<UnixTime> {
        Ok(UnixTime::from_millis(self.int()?))
    }

    pub(crate) fn opt_time(&mut self) -> StoreResult<Option<UnixTime>> {
        Ok(self.opt_int()?.map(UnixTime::from_millis))
    }

    pub(crate) fn scope(&mut self) -> StoreResult<Scope> {
        let i = self.next;
        self.opt_scope()?.ok_or_else(|| wrong(i, "a scope, not NULL"))
    }

    pub(crate) fn opt_scope(&mut self) -> StoreResult<Option<Scope>> {
        let i = self.next;
        self.opt_str()?.map(|s| Scope::parse(&s).map_err(|e| StoreError::corrupt(format!("column {i}: stored scope: {e}")))).transpose()
    }

    pub(crate) fn folder(&mut self) -> StoreResult<FolderPath> {
        stored_folder(&self.text()?)
    }

    pub(crate) fn rights(&mut self) -> StoreResult<Rights> {
        Ok(rights(self.int()?))
    }
}

/// Rights as stored (an integer of bits; unknown bits are dropped).
pub(crate) fn rights(bits: i64) -> Rights {
    Rights::from_bits(u32::try_from(bits).unwrap_or(0))
}

/// A folder path read back.
pub(crate) fn stored_folder(path: &str) -> StoreResult<FolderPath> {
    FolderPath::parse(path).map_err(|e| StoreError::corrupt(format!("stored folder path: {e}")))
}

/// A value type read back.
fn stored_value_type(s: &str) -> StoreResult<ValueType> {
    ValueType::parse(s).ok_or_else(|| StoreError::corrupt(format!("stored value type {s:?}")))
}

// ------------------------------------------------------------------ decoders

/// A user row ([`schema::USERS`]) and its password hash.
pub(crate) fn user_and_hash(c: &mut Cols<'_>) -> StoreResult<(User, String)> {
    let id = UserId::from_stored(c.text()?);
    let name = c.text()?;
    c.skip(1); // name_key
    let hash = c.text()?;
    let user = User { id, name, disabled: c.bool()?, master_admin: c.bool()?, created_at: c.time()?, signed_in_at: c.opt_time()? };
    Ok((user, hash))
}

/// A group row ([`schema::GROUPS`]).
pub(crate) fn group(c: &mut Cols<'_>) -> StoreResult<Group> {
    let id = GroupId::from_stored(c.text()?);
    let name = c.text()?;
    c.skip(1); // name_key
    Ok(Group { id, name, created_at: c.time()? })
}

/// A user row ([`schema::USERS`]).
pub(crate) fn user(c: &mut Cols<'_>) -> StoreResult<User> {
    user_and_hash(c).map(|(u, _)| u)
}

/// A grant row ([`schema::GRANTS`]).
pub(crate) fn grant(c: &mut Cols<'_>) -> StoreResult<Grant> {
    let id = GrantId::from_stored(c.text()?);
    let client_id = c.text()?;
    let user_id = UserId::from_stored(c.text()?);
    let scope = c.scope()?;
    let created_at = c.time()?;
    let refresh_until = c.time()?;
    let refreshable = c.bool()?;
    let access_issued_at = c.time()?;
    let access_validity = c.int()?;
    let revoked_at = c.opt_time()?;
    let refresh = c.opt_hash()?;
    let access = c.opt_hash()?;
    let used = c.bool()?;
    let rotated_from = match (c.opt_hash()?, c.opt_time()?) {
        (Some(h), Some(at)) => Some((h, at)),
        _ => None,
    };
    let version = c.int()?;
    // Every grant has its slot since migration 0014 ended those born
    // before locators: a NULL one is corrupt.
    let slot = c.int()?;
    let i = c.position();
    let generation = u32::try_from(c.int()?).map_err(|_| wrong(i, "a pair generation"))?;
    let older_access = c.opt_blob()?.map_or(Ok(Vec::new()), |b| older_access(&b))?;
    let last_addr = c.opt_text()?;
    Ok(Grant {
        id,
        slot,
        client_id,
        user_id,
        scope,
        created_at,
        refresh_until,
        refreshable,
        access_issued_at,
        access_validity,
        revoked_at,
        pair: Pair { generation, refresh, access, used, rotated_from },
        older_access,
        version,
        last_addr,
    })
}

/// Bytes of one entry of a grant's `older_access`: generation (4), hash
/// (32), issued and expiry (8 each), big-endian.
const OLDER_ACCESS_ENTRY: usize = 52;

/// A grant's earlier access tokens, as stored ([`older_access_bytes`]).
fn older_access(b: &[u8]) -> StoreResult<Vec<OlderAccess>> {
    let bad = || StoreError::corrupt(format!("grants.older_access: {} bytes, not entries of {OLDER_ACCESS_ENTRY}", b.len()));
    if !b.len().is_multiple_of(OLDER_ACCESS_ENTRY) {
        return Err(bad());
    }
    let entry = |e: &[u8]| -> Option<OlderAccess> {
        let int = |r: std::ops::Range<usize>| e.get(r).and_then(|x| <[u8; 8]>::try_from(x).ok()).map(i64::from_be_bytes);
        Some(OlderAccess {
            generation: u32::from_be_bytes(e.get(..4)?.try_into().ok()?),
            hash: TokenHash::from_slice(e.get(4..36)?)?,
            issued_at: UnixTime::from_millis(int(36..44)?),
            expires: UnixTime::from_millis(int(44..52)?),
        })
    };
    b.chunks_exact(OLDER_ACCESS_ENTRY).map(|e| entry(e).ok_or_else(bad)).collect()
}

/// A grant's earlier access tokens as one value (NULL when there are none).
pub(crate) fn older_access_bytes(ring: &[OlderAccess]) -> Option<Vec<u8>> {
    (!ring.is_empty()).then(|| {
        let mut out = Vec::with_capacity(ring.len() * OLDER_ACCESS_ENTRY);
        for o in ring {
            out.extend_from_slice(&o.generation.to_be_bytes());
            out.extend_from_slice(o.hash.as_bytes());
            out.extend_from_slice(&o.issued_at.millis().to_be_bytes());
            out.extend_from_slice(&o.expires.millis().to_be_bytes());
        }
        out
    })
}

/// A left-joined grant row: `None` (its columns passed over) when absent.
pub(crate) fn opt_grant(c: &mut Cols<'_>) -> StoreResult<Option<Grant>> {
    if c.next_is_null()? {
        c.skip(schema::GRANTS.columns.len());
        return Ok(None);
    }
    grant(c).map(Some)
}

/// The standing columns of [`crate::sql::standing_cols`].
pub(crate) fn standing(c: &mut Cols<'_>) -> StoreResult<Standing> {
    Ok(Standing {
        integration_found: c.bool()?,
        integration_disabled: c.opt_bool()?.unwrap_or(false),
        max_scope: c.opt_scope()?.unwrap_or_default(),
        user_found: c.bool()?,
        user_disabled: c.opt_bool()?.unwrap_or(false),
        user_allowed: c.opt_bool()?.unwrap_or(false),
    })
}

/// A row of [`crate::sql::located_cols`], for the token `presented` whose
/// locator names the row's grant and pair `generation`: `None` unless the
/// grant keeps a working access token of that generation with that hash.
pub(crate) fn located_access(c: &mut Cols<'_>, presented: TokenHash, generation: u32) -> StoreResult<Option<AccessContext>> {
    let grant = grant(c)?;
    let (user_name, master_admin) = (c.text()?, c.bool()?);
    Ok(AccessContext::located(grant, presented, generation, user_name, master_admin, standing(c)?))
}

/// A device-code row ([`schema::DEVICE_CODES`]).
pub(crate) fn device(c: &mut Cols<'_>) -> StoreResult<DeviceAuthorization> {
    let code_hash = c.hash()?;
    let user_code_hash = c.hash()?;
    let client_id = c.text()?;
    let scope = c.scope()?;
    let state = device_state(&c.text()?, c.opt_text()?)?;
    let d = DeviceAuthorization {
        code_hash,
        user_code_hash,
        client_id,
        scope,
        state,
        created_at: c.time()?,
        expires_at: c.time()?,
        interval_secs: c.int()?,
        last_poll_at: c.opt_time()?,
        version: c.int()?,
    };
    c.skip(1); // grant_id: the context joins the grant itself.
    Ok(d)
}

/// A row of [`crate::sql::DEVICE_CONTEXT`].
pub(crate) fn device_context(c: &mut Cols<'_>) -> StoreResult<DeviceContext> {
    Ok(DeviceContext {
        device: device(c)?,
        device_flow_enabled: c.opt_bool()?.unwrap_or(false),
        overrides: TokenOverrides {
            access_validity: c.opt_int()?,
            grant_validity: c.opt_int()?,
            refreshable: c.opt_bool()?,
            device_code_validity: c.opt_int()?,
            poll_interval: c.opt_int()?,
            retry_window: c.opt_int()?,
        },
        standing: standing(c)?,
        grant: opt_grant(c)?,
    })
}

/// Device states as stored: (state name, user id).
pub(crate) fn device_state_parts(s: &DeviceState) -> (&'static str, Option<&str>) {
    (s.name(), s.user().map(UserId::as_str))
}

fn device_state(state: &str, user: Option<String>) -> StoreResult<DeviceState> {
    let user_id = |u: Option<String>| u.map(UserId::from_stored).ok_or_else(|| StoreError::corrupt("device code without user"));
    Ok(match state {
        "pending" => DeviceState::Pending,
        "approved" => DeviceState::Approved { user_id: user_id(user)? },
        "denied" => DeviceState::Denied { user_id: user_id(user)? },
        "redeemed" => DeviceState::Redeemed { user_id: user_id(user)? },
        other => return Err(StoreError::corrupt(format!("unknown device state {other:?}"))),
    })
}

/// An integration row ([`schema::INTEGRATIONS`]); its allowed users are read separately.
pub(crate) fn integration(c: &mut Cols<'_>) -> StoreResult<Integration> {
    let client_id = c.text()?;
    let name = c.text()?;
    let max_scope = c.scope()?;
    let allowed_users = if c.bool()? { AllowedUsers::Everyone } else { AllowedUsers::Only(Vec::new()) };
    let grant_types = GrantTypes { device: c.bool()?, password: c.bool()? };
    let (access_validity, grant_validity, refreshable) = (c.opt_int()?, c.opt_int()?, c.opt_bool()?);
    let (device_code_validity, poll_interval) = (c.opt_int()?, c.opt_int()?);
    let disabled = c.bool()?;
    c.skip(1); // created_at
    let retry_window = c.opt_int()?;
    let version = c.int()?;
    Ok(Integration {
        client_id,
        name,
        max_scope,
        allowed_users,
        allowed_groups: Vec::new(),
        grant_types,
        overrides: TokenOverrides { access_validity, grant_validity, refreshable, device_code_validity, poll_interval, retry_window },
        disabled,
        version,
    })
}

/// A throttle row ([`schema::THROTTLE`]).
pub(crate) fn counter(c: &mut Cols<'_>) -> StoreResult<Counter> {
    c.skip(1); // key
    let failures = u32::try_from(c.int()?).unwrap_or(u32::MAX);
    let counter = Counter { failures, window_start: c.time()?, locked_until: c.opt_time()? };
    c.skip(1); // subject
    Ok(counter)
}

/// An event row ([`schema::EVENTS`]).
pub(crate) fn event(c: &mut Cols<'_>) -> StoreResult<StoredEvent> {
    let seq = c.int()?;
    let at = c.time()?;
    let kind = c.text()?;
    let kind = EventKind::parse(&kind).ok_or_else(|| StoreError::corrupt(format!("event kind {kind:?}")))?;
    let event = Event {
        at,
        kind,
        identity: c.text()?,
        client_id: c.text()?,
        source: c.text()?,
        request_id: c.text()?,
        object: c.text()?,
        detail: c.text()?,
    };
    Ok(StoredEvent { seq, event, hash: c.hash32()?, folder: None })
}

/// An event as [`sql::EVENTS`] reads it: [`event`], then its entry's folder.
pub(crate) fn event_with_folder(c: &mut Cols<'_>) -> StoreResult<StoredEvent> {
    let mut e = event(c)?;
    e.folder = c.opt_text()?;
    Ok(e)
}

/// The event chain's head: `seq, hash`.
pub(crate) fn head(c: &mut Cols<'_>) -> StoreResult<(i64, [u8; 32])> {
    Ok((c.int()?, c.hash32()?))
}

/// A data-key row ([`schema::DATA_KEYS`]).
pub(crate) fn data_key(c: &mut Cols<'_>) -> StoreResult<DataKeyRecord> {
    Ok(DataKeyRecord { id: c.int()?, wrapped: c.bytes()?, created_at: c.time()?, key_name: c.text()? })
}

/// A vault-entry row ([`schema::VAULT_ENTRIES`]), without its owners.
pub(crate) fn entry(c: &mut Cols<'_>) -> StoreResult<VaultEntry> {
    Ok(VaultEntry {
        vault_id: VaultId(c.int()?),
        vault_type: c.int32()?,
        key_name: c.text()?,
        key_id: c.int()?,
        sealed: c.bytes()?,
        owners: Vec::new(),
        created_at: c.time()?,
    })
}

/// An association row ([`schema::ASSOCIATIONS`]): its entry and the association.
pub(crate) fn association(c: &mut Cols<'_>) -> StoreResult<(VaultId, StoredAssociation)> {
    let id = VaultId(c.int()?);
    let name = c.text()?;
    let value_type = stored_value_type(&c.text()?)?;
    Ok((id, StoredAssociation { name, value_type, key_id: c.int()?, sealed: c.bytes()?, lookup: c.hash32()? }))
}

/// `vault_id, key_id, sealed` of an entry.
pub(crate) fn sealed_data(c: &mut Cols<'_>) -> StoreResult<SealedItem> {
    Ok(SealedItem::Data { vault_id: VaultId(c.int()?), key_id: c.int()?, sealed: c.bytes()? })
}

/// An association row ([`schema::ASSOCIATIONS`]) as an item to re-seal.
pub(crate) fn sealed_association(c: &mut Cols<'_>) -> StoreResult<SealedItem> {
    let (vault_id, a) = association(c)?;
    Ok(SealedItem::Association { vault_id, name: a.name, value_type: a.value_type, key_id: a.key_id, sealed: a.sealed })
}

/// Rows of (entry, owner) ordered by entry, grouped into each entry's owners.
pub(crate) fn group_owners(rows: Vec<(VaultId, Option<String>)>) -> StoreResult<Vec<(VaultId, Vec<FolderPath>)>> {
    let mut out: Vec<(VaultId, Vec<FolderPath>)> = Vec::new();
    for (id, owner) in rows {
        if out.last().is_none_or(|(last, _)| *last != id) {
            out.push((id, Vec::new()));
        }
        if let (Some(o), Some((_, owners))) = (owner, out.last_mut()) {
            owners.push(stored_folder(&o)?);
        }
    }
    Ok(out)
}

// ------------------------------------------------------------------ encoders

/// A grant's row ([`schema::GRANTS`]).
pub(crate) fn grant_row(g: &Grant) -> [Value<'_>; 20] {
    let p = &g.pair;
    values![
        g.id.as_str(),
        g.client_id.as_str(),
        g.user_id.as_str(),
        g.scope.to_string(),
        g.created_at,
        g.refresh_until,
        g.refreshable,
        g.access_issued_at,
        g.access_validity,
        g.revoked_at,
        p.refresh.as_ref(),
        p.access.as_ref(),
        p.used,
        p.rotated_from.as_ref().map(|(h, _)| h),
        p.rotated_from.map(|(_, at)| at),
        g.version,
        g.slot,
        p.generation,
        older_access_bytes(&g.older_access),
        g.last_addr.as_deref(),
    ]
}

/// A user's row ([`schema::USERS`]).
pub(crate) fn user_row<'a>(u: &'a User, password_hash: &'a str) -> [Value<'a>; 8] {
    values![u.id.as_str(), u.name.as_str(), u.name.to_lowercase(), password_hash, u.disabled, u.master_admin, u.created_at, u.signed_in_at]
}

/// An integration's row ([`schema::INTEGRATIONS`]), created at `created_at`.
/// Its `version` is the one it was read at: an insert writes it as it is,
/// an update only over a row still at it (and moves it on).
pub(crate) fn integration_row(i: &Integration, created_at: UnixTime) -> [Value<'_>; 15] {
    let o = &i.overrides;
    values![
        i.client_id.as_str(),
        i.name.as_str(),
        i.max_scope.to_string(),
        i.allowed_users == AllowedUsers::Everyone,
        i.grant_types.device,
        i.grant_types.password,
        o.access_validity,
        o.grant_validity,
        o.refreshable,
        o.device_code_validity,
        o.poll_interval,
        i.disabled,
        created_at,
        o.retry_window,
        i.version,
    ]
}

/// A device code's row ([`schema::DEVICE_CODES`]), redeemed into no grant yet.
pub(crate) fn device_row(d: &DeviceAuthorization) -> [Value<'_>; 12] {
    let (state, user) = device_state_parts(&d.state);
    values![
        &d.code_hash,
        &d.user_code_hash,
        d.client_id.as_str(),
        d.scope.to_string(),
        state,
        user,
        d.created_at,
        d.expires_at,
        d.interval_secs,
        d.last_poll_at,
        d.version,
        Option::<&str>::None,
    ]
}

/// A throttle row ([`schema::THROTTLE`]) for `slot`.
pub(crate) fn counter_row<'a>(slot: &'a Slot, counter: &Counter) -> [Value<'a>; 5] {
    values![slot.key.as_str(), counter.failures, counter.window_start, counter.locked_until, slot.subject.as_deref()]
}

/// An event's row ([`schema::EVENTS`]) at `seq` with chain hash `hash`.
pub(crate) fn event_row<'a>(seq: i64, e: &'a Event, hash: &'a [u8; 32]) -> [Value<'a>; 10] {
    values![
        seq,
        e.at,
        e.kind.as_str(),
        e.identity.as_str(),
        e.client_id.as_str(),
        e.source.as_str(),
        e.request_id.as_str(),
        e.object.as_str(),
        e.detail.as_str(),
        hash,
    ]
}

/// A data key's row ([`schema::DATA_KEYS`]).
pub(crate) fn data_key_row(k: &DataKeyRecord) -> [Value<'_>; 4] {
    values![k.id, &k.wrapped, k.created_at, k.key_name.as_str()]
}

/// An entry's row ([`schema::VAULT_ENTRIES`]).
pub(crate) fn entry_row(e: &VaultEntry) -> [Value<'_>; 6] {
    values![e.vault_id, e.vault_type, e.key_name.as_str(), e.key_id, &e.sealed, e.created_at]
}

/// An owner's row ([`schema::VAULT_OWNERS`]).
pub(crate) fn owner_row(id: VaultId, owner: &FolderPath) -> [Value<'_>; 3] {
    values![id, owner.key(), owner.as_str()]
}

/// An association's row ([`schema::ASSOCIATIONS`]).
pub(crate) fn association_row(id: VaultId, a: &StoredAssociation) -> [Value<'_>; 6] {
    values![id, a.name.as_str(), a.value_type.as_str(), a.key_id, &a.sealed, &a.lookup]
}

/// A group's row ([`schema::GROUPS`]).
pub(crate) fn group_row(g: &Group) -> [Value<'_>; 4] {
    values![g.id.as_str(), g.name.as_str(), g.name.to_lowercase(), g.created_at]
}

/// A folder's row ([`schema::FOLDERS`]).
pub(crate) fn folder_row<'a>(f: &'a FolderPath, created_at: UnixTime, guid: &'a ObjectGuid) -> [Value<'a>; 4] {
    values![f.key(), f.as_str(), created_at, guid.as_str()]
}

/// The values of `table`'s row `row`, checked against its length.
pub(crate) fn checked<'a>(table: &Table, row: &'a [Value<'a>]) -> StoreResult<&'a [Value<'a>]> {
    if row.len() == table.columns.len() {
        Ok(row)
    } else {
        Err(StoreError::other(format!("{}: a row of {} values", table.name, row.len())))
    }
}

// ------------------------------------------------------------------ machines

/// A JWT issuer's row ([`schema::JWT_ISSUERS`]).
pub(crate) fn jwt_issuer_row(j: &JwtIssuer) -> [Value<'_>; 9] {
    values![
        j.name.as_str(),
        j.issuer.as_str(),
        j.keys.kind(),
        j.keys.location(),
        j.audiences.join("\n"),
        Algorithm::list(&j.algorithms),
        j.clock_skew,
        j.max_lifetime,
        j.created_at,
    ]
}

/// A JWT issuer row ([`schema::JWT_ISSUERS`]).
pub(crate) fn jwt_issuer(c: &mut Cols<'_>) -> StoreResult<JwtIssuer> {
    let name = c.text()?;
    let issuer = c.text()?;
    let (kind, location) = (c.text()?, c.text()?);
    let keys = KeySource::from_parts(&kind, location).ok_or_else(|| StoreError::corrupt(format!("stored key source kind {kind:?}")))?;
    let audiences = c.text()?.lines().filter(|l| !l.is_empty()).map(str::to_owned).collect();
    let algorithms = Algorithm::parse_list(&c.text()?).map_err(StoreError::corrupt)?;
    Ok(JwtIssuer { name, issuer, keys, audiences, algorithms, clock_skew: c.int()?, max_lifetime: c.int()?, created_at: c.time()? })
}

/// A mapping's row ([`schema::MACHINE_MAPPINGS`]); its client ids are rows of `mapping_clients`.
pub(crate) fn mapping_row(m: &Mapping) -> [Value<'_>; 8] {
    let (issuer, conditions, from, ca): (Option<&str>, String, &str, Option<&str>) = match &m.rule {
        MappingRule::Jwt { issuer, conditions, identity_claim } => {
            (Some(issuer.as_str()), Condition::encode(conditions), identity_claim.as_str(), None)
        }
        MappingRule::Cert { ca_bundle, field } => (None, String::new(), field.as_str(), Some(ca_bundle.as_str())),
    };
    values![m.name.as_str(), m.kind(), issuer, conditions, from, ca, m.max_scope.to_string(), m.created_at]
}

/// A mapping row ([`schema::MACHINE_MAPPINGS`]) followed by one of its client ids (or NULL).
pub(crate) fn mapping_and_client(c: &mut Cols<'_>) -> StoreResult<(Mapping, Option<String>)> {
    let name = c.text()?;
    let kind = c.text()?;
    let issuer = c.opt_text()?;
    let conditions = c.text()?;
    let from = c.text()?;
    let ca = c.opt_text()?;
    let max_scope = c.scope()?;
    let created_at = c.time()?;
    let rule = match (kind.as_str(), issuer, ca) {
        ("jwt", Some(issuer), _) => {
            MappingRule::Jwt { issuer, conditions: Condition::decode(&conditions).map_err(StoreError::corrupt)?, identity_claim: from }
        }
        ("cert", _, Some(ca_bundle)) => MappingRule::Cert {
            ca_bundle,
            field: CertField::parse(&from).ok_or_else(|| StoreError::corrupt(format!("stored certificate field {from:?}")))?,
        },
        _ => return Err(StoreError::corrupt(format!("stored mapping {name:?} of kind {kind:?}"))),
    };
    let client = c.opt_text()?;
    Ok((Mapping { name, rule, client_ids: Vec::new(), max_scope, created_at }, client))
}

/// Mappings with their client ids, from rows of [`mapping_and_client`] in mapping order.
pub(crate) fn mappings(rows: Vec<(Mapping, Option<String>)>) -> Vec<Mapping> {
    let mut out: Vec<Mapping> = Vec::new();
    for (m, client) in rows {
        match out.last_mut() {
            Some(last) if last.name == m.name => last.client_ids.extend(client),
            _ => {
                let mut m = m;
                m.client_ids.extend(client);
                out.push(m);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row held in memory, as a driver would answer it.
    struct Mem(Vec<Value<'static>>);

    impl Row for Mem {
        fn value(&self, i: usize) -> StoreResult<Value<'_>> {
            self.0.get(i).cloned().ok_or_else(|| StoreError::corrupt(format!("no column {i}")))
        }
    }

    fn owned(v: &[Value<'_>]) -> Mem {
        Mem(v
            .iter()
            .map(|v| match v {
                Value::Text(t) => Value::Text(Cow::Owned(t.to_string())),
                Value::Bytes(b) => Value::Bytes(Cow::Owned(b.to_vec())),
                Value::Null => Value::Null,
                Value::Int(i) => Value::Int(*i),
                // As SQLite answers them.
                Value::Bool(b) => Value::Int(i64::from(*b)),
            })
            .collect())
    }

    #[test]
    fn every_encoder_writes_its_whole_table_row() {
        assert_eq!(grant_row(&sample_grant()).len(), schema::GRANTS.columns.len());
        assert_eq!(user_row(&sample_user(), "h").len(), schema::USERS.columns.len());
        assert_eq!(counter_row(&slot(), &Counter::default()).len(), schema::THROTTLE.columns.len());
        let guid = ObjectGuid::from_stored(strongroom_core::tree::POLICY_GUID.to_owned());
        assert_eq!(
            folder_row(&FolderPath::parse("\\VED\\Policy").unwrap(), UnixTime::from_secs(1), &guid).len(),
            schema::FOLDERS.columns.len()
        );
    }

    fn sample_grant() -> Grant {
        Grant {
            id: GrantId::from_stored("g1".into()),
            client_id: "c".into(),
            user_id: UserId::from_stored("u1".into()),
            scope: Scope::parse("restricted:manage").unwrap(),
            created_at: UnixTime::from_secs(10),
            refresh_until: UnixTime::from_secs(1000),
            refreshable: true,
            access_issued_at: UnixTime::from_secs(10),
            access_validity: 3600,
            revoked_at: None,
            slot: 77,
            pair: Pair {
                generation: 9,
                refresh: Some(TokenHash([2; 32])),
                access: Some(TokenHash([1; 32])),
                used: true,
                rotated_from: Some((TokenHash([3; 32]), UnixTime::from_secs(9))),
            },
            older_access: (1..=4)
                .map(|i| OlderAccess {
                    generation: 9 - i,
                    hash: TokenHash([10 + i as u8; 32]),
                    issued_at: UnixTime::from_secs(i64::from(i)),
                    expires: UnixTime::from_secs(100 + i64::from(i)),
                })
                .collect(),
            version: 12,
            last_addr: Some("192.0.2.7".into()),
        }
    }

    fn sample_user() -> User {
        User {
            id: UserId::from_stored("u1".into()),
            name: "Ann".into(),
            disabled: false,
            master_admin: true,
            created_at: UnixTime::from_secs(5),
            signed_in_at: Some(UnixTime::from_secs(7)),
        }
    }

    fn slot() -> Slot {
        Slot {
            key: "k".into(),
            subject: Some("ann".into()),
            rule: strongroom_core::throttle::Rule::ADDRESS_DEVICE_STARTS,
            reset_on_success: false,
        }
    }

    #[test]
    fn a_grant_and_a_user_read_back_as_written() {
        let mut g = sample_grant();
        assert_eq!(grant(&mut Cols::new(&owned(&grant_row(&g)))).unwrap(), g);
        // A grant's first pair: generation 0, nothing kept.
        (g.pair.generation, g.older_access) = (0, Vec::new());
        let mut row = grant_row(&g);
        assert_eq!(row[row.len() - 2], Value::Null, "no earlier access tokens: NULL, not an empty value");
        assert_eq!(grant(&mut Cols::new(&owned(&row))).unwrap(), g);
        // No grant lacks a slot since migration 0014: a NULL one is corrupt.
        row[row.len() - 4] = Value::Null;
        assert_eq!(grant(&mut Cols::new(&owned(&row))).unwrap_err().kind(), crate::ErrorKind::Corrupt);
        let u = sample_user();
        assert_eq!(user_and_hash(&mut Cols::new(&owned(&user_row(&u, "phc")))).unwrap(), (u, "phc".to_owned()));
    }

    #[test]
    fn a_wrong_or_missing_column_is_corrupt_and_names_the_column() {
        let row = Mem(vec![Value::Int(1), Value::Text("x".into())]);
        let mut c = Cols::new(&row);
        assert_eq!(c.int().unwrap(), 1);
        let e = c.int().unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Corrupt);
        assert!(e.to_string().contains("column 1"), "{e}");
        let short = Mem(vec![Value::Bytes(vec![1; 31].into())]);
        assert!(Cols::new(&short).hash().unwrap_err().to_string().contains("32-byte"));
    }

    #[test]
    fn a_damaged_ring_of_earlier_access_tokens_is_corrupt() {
        let g = sample_grant();
        let mut row = grant_row(&g).to_vec();
        let older = row.len() - 2;
        if let Value::Bytes(b) = &mut row[older] {
            b.to_mut().pop();
        }
        let e = grant(&mut Cols::new(&owned(&row))).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Corrupt);
        assert!(e.to_string().contains("older_access"), "{e}");
    }

    #[test]
    fn values_do_not_show_what_they_hold() {
        let v = Value::from("$argon2id$secret");
        assert_eq!(format!("{v:?}"), "Text(..)");
    }
}
