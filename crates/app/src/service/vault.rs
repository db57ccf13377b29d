//! `/vedsdk/SecretStore/*`: the vault operations. Each takes the caller (from
//! the bearer token) and a parsed request, checks permissions on the owner
//! folders, seals or opens values with the key ring, and makes one store call
//! that writes the change and its event together.

use strongroom_core::event::EventKind;
use strongroom_core::vault::crypto::{self, CryptoError};
use strongroom_core::vault::value::{Value, ValueType};
use strongroom_core::vault::{FolderPath, ResultCode, Rights, VaultId};
use strongroom_store::{
    AddOwner, Checked, Found, PutAssociation, SealedItem, StoreError, StoredAssociation, VaultEntry, VaultFilter, Viewer,
};

use crate::App;
use strongroom_keyring::KeyRingError;

/// Largest secret (decoded `Base64Data`), bytes.
pub const MAX_DATA_BYTES: usize = 512 * 1024;

/// Why a vault call did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum VaultError {
    /// A non-zero `Result` with its `Error` text (safe to show).
    #[error("Result {}: {message}", code.code())]
    Refused { code: ResultCode, message: String },
    /// The store failed: HTTP 503 `temporarily_unavailable` when the failure
    /// is transient, else `Result` 22 (QueryError).
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl VaultError {
    /// The `Result` code answered (22, QueryError, for a store failure).
    pub fn code(&self) -> ResultCode {
        match self {
            VaultError::Refused { code, .. } => *code,
            VaultError::Store(_) => ResultCode::QueryError,
        }
    }

    pub fn params(message: impl Into<String>) -> Self {
        VaultError::Refused { code: ResultCode::InvalidParams, message: message.into() }
    }
    fn no_entry(id: VaultId) -> Self {
        VaultError::Refused { code: ResultCode::InvalidVaultId, message: format!("VaultID {id} does not exist.") }
    }
    fn denied() -> Self {
        VaultError::Refused { code: ResultCode::InsufficientPermissions, message: "Insufficient permissions.".into() }
    }
    fn crypto() -> Self {
        VaultError::Refused { code: ResultCode::CryptoFailure, message: "The stored data cannot be decrypted.".into() }
    }
    /// A `Keyname` that names no configured key, or one that cannot be used now (Result 21).
    fn invalid_key(e: KeyRingError) -> Self {
        match e {
            KeyRingError::Store(s) => s.into(),
            KeyRingError::Unknown(name) => {
                VaultError::Refused { code: ResultCode::InvalidKey, message: format!("No key named {name:?} is configured.") }
            }
            other => {
                log_key_failure(&other, "vault key cannot be used");
                VaultError::Refused { code: ResultCode::InvalidKey, message: "That key cannot be used now.".into() }
            }
        }
    }
}

/// Logs a key ring failure: as an error, unless its driver logged the cause
/// once already (a refused PIN), then at debug level.
fn log_key_failure(e: &KeyRingError, what: &str) {
    if matches!(e, KeyRingError::Driver { logged: true, .. }) {
        tracing::debug!(error = %e, "{what}");
    } else {
        tracing::error!(error = %e, "{what}");
    }
}

impl From<KeyRingError> for VaultError {
    fn from(e: KeyRingError) -> Self {
        match e {
            KeyRingError::Store(s) => s.into(),
            other => {
                log_key_failure(&other, "vault key ring failed");
                VaultError::crypto()
            }
        }
    }
}

impl From<CryptoError> for VaultError {
    fn from(_: CryptoError) -> Self {
        VaultError::crypto()
    }
}

pub type VaultResult<T> = Result<T, VaultError>;

pub use super::caller::Caller;

/// The vault's own questions of a caller.
impl Caller {
    fn require_master_admin(&self) -> VaultResult<()> {
        if self.perms.master_admin { Ok(()) } else { Err(VaultError::denied()) }
    }

    /// The entry the request names (the context read it), if the caller may
    /// know it exists: a Master Admin, or someone holding any right on one of
    /// its owners. To anyone else an entry that exists answers as one that
    /// does not (Result 8), so the Result tells nobody which VaultIDs exist.
    fn entry(&self, id: VaultId) -> VaultResult<&VaultEntry> {
        self.entry
            .as_ref()
            .filter(|e| e.vault_id == id)
            .filter(|e| self.perms.master_admin || e.owners.iter().any(|o| self.perms.effective(o) != Rights::NONE))
            .ok_or_else(|| VaultError::no_entry(id))
    }

    /// What of the event log this caller may read: everything for a Master
    /// Admin; else the events they acted in and those on entries they may read.
    pub fn viewer(&self) -> Option<Viewer> {
        (!self.perms.master_admin).then(|| Viewer { identity: self.user_id.identity(), user_id: self.user_id.clone() })
    }
}

/// A credential object's entry (`Credentials/*`) is read and changed only
/// through the credential calls: its data is the credential's sealed JSON,
/// and an association or a new type would make it unreadable to them.
/// Result 14, as the product answers `SecretStore/Retrieve` on one.
fn not_a_credential(e: &VaultEntry) -> VaultResult<()> {
    if strongroom_core::credential::Class::from_vault_type(e.vault_type).is_some() {
        return Err(VaultError::Refused {
            code: ResultCode::RetrieveSecretFailed,
            message: "The entry belongs to a credential object: use the Credentials calls.".into(),
        });
    }
    Ok(())
}

/// A write's outcome when the rights check it repeats failed.
fn checked<T>(c: Checked<T>) -> VaultResult<T> {
    match c {
        Checked::Done(t) => Ok(t),
        Checked::Denied => Err(VaultError::denied()),
    }
}

/// Checks the namespace the product's examples always send.
pub fn namespace(ns: Option<String>) -> VaultResult<()> {
    match ns {
        Some(n) if n.eq_ignore_ascii_case(strongroom_core::vault::NAMESPACE) => Ok(()),
        Some(_) => Err(VaultError::params("Namespace must be config.")),
        None => Err(VaultError::params("Namespace is required.")),
    }
}

fn folder(owner: Option<String>) -> VaultResult<FolderPath> {
    let owner = owner.ok_or_else(|| VaultError::params("Owner is required."))?;
    FolderPath::parse(&owner).map_err(|e| VaultError::params(format!("Owner: {e}.")))
}

fn no_folder() -> VaultError {
    VaultError::params("Owner: no such folder.")
}

fn describe(name: &str, t: ValueType) -> String {
    format!("Name={name:?} type={}", t.as_str())
}

pub struct AddRequest {
    pub vault_type: i32,
    /// `None`: the configured default key.
    pub key_name: Option<String>,
    pub data: Vec<u8>,
    pub owner: Option<String>,
}

impl std::fmt::Debug for AddRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AddRequest")
            .field("vault_type", &self.vault_type)
            .field("key_name", &self.key_name)
            .field("data", &format_args!("<{} bytes redacted>", self.data.len()))
            .field("owner", &self.owner)
            .finish()
    }
}

/// `Add`: Write on the owner, which must be an existing folder (Result 9
/// otherwise, checked before the rights, both by the write itself).
pub async fn add(app: &App, c: &Caller, req: AddRequest) -> VaultResult<VaultId> {
    let owner = folder(req.owner)?;
    let now = app.now();
    let name = req.key_name.as_deref().unwrap_or(app.keyring.default_name());
    let (key_name, key_id, key) =
        app.keyring.current(&*app.store, &*app.rng, now, name, &c.current_keys).await.map_err(VaultError::invalid_key)?;
    let id = app.store.allocate_vault_id().await?;
    let sealed = crypto::seal(&key, &*app.rng, &crypto::aad_data(id, key_id), &req.data)?;
    let event = c.event(app, EventKind::VaultAdded, Some(id)).detail(format!("owner={} type={}", owner, req.vault_type));
    let entry = VaultEntry { vault_id: id, vault_type: req.vault_type, key_name, key_id, sealed, owners: vec![owner], created_at: now };
    if checked(app.store.insert_entry(entry, c.writer(), event).await?)? { Ok(id) } else { Err(no_folder()) }
}

/// `Retrieve`: Master Admin only. Returns (data, VaultType). A certificate
/// object's private key (VenafiPS's `Export-VdcVaultObject` reads it so) is
/// a key export: its `certificate.key_exported` event is written before the
/// key is answered.
pub async fn retrieve(app: &App, c: &Caller, id: VaultId) -> VaultResult<(Vec<u8>, i32)> {
    c.require_master_admin()?;
    let e = c.entry(id)?;
    not_a_credential(e)?;
    let key = app.keyring.key(&*app.store, e.key_id).await?;
    let data = crypto::open(&key, &crypto::aad_data(id, e.key_id), &e.sealed)?;
    if let Some(event) = super::certificates::vault_key_export(app, c, e).await? {
        app.store.append_event(event).await?;
    }
    Ok((data, e.vault_type))
}

pub async fn associate(app: &App, c: &Caller, id: VaultId, name: String, value: Value) -> VaultResult<()> {
    let e = c.entry(id)?;
    if !c.perms.on_any(&e.owners, Rights::WRITE) {
        return Err(VaultError::denied());
    }
    not_a_credential(e)?;
    let t = value.value_type();
    let plain = value.to_bytes();
    let (_, key_id, key) = app.keyring.current(&*app.store, &*app.rng, app.now(), &e.key_name, &c.current_keys).await?;
    let sealed = crypto::seal(&key, &*app.rng, &crypto::aad_association(id, &name, t, key_id), &plain)?;
    let lookup = crypto::lookup_hash(&app.keyring.lookup, &name, t, &plain);
    let event = c.event(app, EventKind::VaultAssociated, Some(id)).detail(describe(&name, t));
    let stored = StoredAssociation { name, value_type: t, key_id, sealed, lookup };
    match checked(app.store.put_association(id, stored, c.writer(), event).await?)? {
        PutAssociation::Stored => Ok(()),
        PutAssociation::Identical => Err(VaultError::Refused {
            code: ResultCode::AssociationAlreadyExists,
            message: "An identical association already exists.".into(),
        }),
        PutAssociation::NoEntry => Err(VaultError::no_entry(id)),
    }
}

pub async fn dissociate(app: &App, c: &Caller, id: VaultId, name: Option<String>, value: Option<Value>) -> VaultResult<()> {
    let e = c.entry(id)?;
    if !c.perms.on_any(&e.owners, Rights::WRITE) {
        return Err(VaultError::denied());
    }
    let lookup = match (&name, &value) {
        (Some(n), Some(v)) => Some(crypto::lookup_hash(&app.keyring.lookup, n, v.value_type(), &v.to_bytes())),
        _ => None,
    };
    let detail = match (&name, &value) {
        (Some(n), Some(v)) => describe(n, v.value_type()),
        (Some(n), None) => format!("Name={n:?}"),
        (None, _) => "all associations".into(),
    };
    let event = c.event(app, EventKind::VaultDissociated, Some(id)).detail(detail);
    if checked(app.store.dissociate(id, name, lookup, c.writer(), event).await?)? == 0 {
        return Err(VaultError::Refused { code: ResultCode::DisassociateFailed, message: "No matching association.".into() });
    }
    Ok(())
}

/// Keeps the ids whose entry the caller may `needed` on some owner of;
/// the rest are left out silently, as the product does.
async fn visible(app: &App, c: &Caller, ids: Vec<VaultId>, needed: Rights) -> VaultResult<Vec<VaultId>> {
    if c.perms.master_admin {
        return Ok(ids);
    }
    let owners = app.store.owners_of(ids).await?;
    Ok(owners.into_iter().filter(|(_, o)| c.perms.on_any(o, needed)).map(|(id, _)| id).collect())
}

/// What `SecretStore/LookupByAssociation` looks for: association `name`'s
/// lookup hash of `value`, as stored beside the sealed value. The entries
/// come with the caller's context, in one read
/// ([`strongroom_store::VaultStore::vault_lookup`]).
pub fn association_lookup(app: &App, name: &str, value: &Value) -> [u8; 32] {
    crypto::lookup_hash(&app.keyring.lookup, name, value.value_type(), &value.to_bytes())
}

/// The entries of a lookup the caller may read (on some owner); the rest
/// are left out silently, as the product does.
pub fn readable(c: &Caller, found: Found) -> Vec<VaultId> {
    found.into_iter().filter(|(_, owners)| c.perms.on_any(owners, Rights::READ)).map(|(id, _)| id).collect()
}

fn open_association(key: &crypto::Key, id: VaultId, a: &StoredAssociation) -> VaultResult<Value> {
    let plain = crypto::open(key, &crypto::aad_association(id, &a.name, a.value_type, a.key_id), &a.sealed)?;
    Value::from_bytes(a.value_type, &plain).ok_or_else(VaultError::crypto)
}

pub async fn lookup_association(app: &App, c: &Caller, id: VaultId, name: &str) -> VaultResult<Value> {
    let e = c.entry(id)?;
    if !c.perms.on_any(&e.owners, Rights::READ) {
        return Err(VaultError::denied());
    }
    let a = app.store.associations(id).await?.into_iter().find(|a| a.name == name).ok_or_else(|| VaultError::Refused {
        code: ResultCode::AssociationLookupFailed,
        message: format!("VaultID {id} has no association named {name:?}."),
    })?;
    let key = app.keyring.key(&*app.store, a.key_id).await?;
    open_association(&key, id, &a)
}

/// `LookupAllAssociationsbyVaultid`: the docs require Write on an owner.
pub async fn all_associations(app: &App, c: &Caller, id: VaultId) -> VaultResult<Vec<(String, Value)>> {
    let e = c.entry(id)?;
    if !c.perms.on_any(&e.owners, Rights::WRITE) {
        return Err(VaultError::denied());
    }
    let mut out = Vec::new();
    for a in app.store.associations(id).await? {
        let key = app.keyring.key(&*app.store, a.key_id).await?;
        out.push((a.name.clone(), open_association(&key, id, &a)?));
    }
    Ok(out)
}

pub async fn lookup_by_owner(app: &App, c: &Caller, owner: Option<String>, vault_type: Option<i32>) -> VaultResult<Vec<VaultId>> {
    c.require_master_admin()?;
    let path = folder(owner)?;
    Ok(app.store.vault_ids(VaultFilter { vault_type, owner_key: Some(path.key().to_owned()), orphans_only: false }).await?)
}

pub async fn lookup_by_type(app: &App, c: &Caller, vault_type: i32) -> VaultResult<Vec<VaultId>> {
    let ids = app.store.vault_ids(VaultFilter { vault_type: Some(vault_type), ..Default::default() }).await?;
    visible(app, c, ids, Rights::READ).await
}

pub async fn orphans(app: &App, c: &Caller, vault_type: Option<i32>) -> VaultResult<Vec<VaultId>> {
    c.require_master_admin()?;
    Ok(app.store.vault_ids(VaultFilter { vault_type, owner_key: None, orphans_only: true }).await?)
}

/// `GET Lookup`: every entry the caller may read.
pub async fn lookup_all(app: &App, c: &Caller) -> VaultResult<Vec<VaultId>> {
    let ids = app.store.vault_ids(VaultFilter::default()).await?;
    visible(app, c, ids, Rights::READ).await
}

/// `OwnerAdd`: Write on the new owner and on an existing owner of the entry
/// (otherwise anyone could pull any entry into their own folder).
pub async fn owner_add(app: &App, c: &Caller, id: VaultId, owner: Option<String>) -> VaultResult<()> {
    let e = c.entry(id)?;
    let owner = folder(owner)?;
    if !c.perms.effective(&owner).contains(Rights::WRITE) || !c.perms.on_any(&e.owners, Rights::WRITE) {
        return Err(VaultError::denied());
    }
    not_a_credential(e)?;
    let event = c.event(app, EventKind::VaultOwnerAdded, Some(id)).detail(format!("owner={owner}"));
    match checked(app.store.add_owner(id, owner, c.writer(), event).await?)? {
        AddOwner::Added | AddOwner::AlreadyOwner => Ok(()),
        AddOwner::NoEntry => Err(VaultError::no_entry(id)),
        AddOwner::NoFolder => Err(no_folder()),
    }
}

/// `OwnerDelete`: Write on the owner. Without a VaultID the owner is removed
/// from every entry it owns; an entry that loses its last owner is deleted.
pub async fn owner_delete(app: &App, c: &Caller, id: Option<VaultId>, owner: Option<String>) -> VaultResult<()> {
    let owner = folder(owner)?;
    if let Some(id) = id {
        c.entry(id)?;
    }
    if !c.perms.effective(&owner).contains(Rights::WRITE) {
        return Err(VaultError::denied());
    }
    let event = c.event(app, EventKind::VaultOwnerRemoved, id).detail(format!("owner={owner}"));
    let removed = checked(app.store.remove_owner(id, owner, c.writer(), event).await?)?;
    if id.is_some() && removed.removed == 0 {
        return Err(VaultError::params("Owner is not an owner of that VaultID."));
    }
    Ok(())
}

pub async fn owner_lookup(c: &Caller, id: VaultId) -> VaultResult<Vec<String>> {
    c.require_master_admin()?;
    Ok(c.entry(id)?.owners.iter().map(|o| o.as_str().to_owned()).collect())
}

pub async fn mutate(app: &App, c: &Caller, id: VaultId, vault_type: i32) -> VaultResult<()> {
    c.require_master_admin()?;
    not_a_credential(c.entry(id)?)?;
    let event = c.event(app, EventKind::VaultMutated, Some(id)).detail(format!("type={vault_type}"));
    if checked(app.store.mutate_entry(id, vault_type, c.writer(), event).await?)? { Ok(()) } else { Err(VaultError::no_entry(id)) }
}

pub async fn keys_in_use(app: &App) -> VaultResult<Vec<String>> {
    Ok(app.store.key_names_in_use().await?.into_iter().map(|(name, _)| name).collect())
}

/// `RotateKey/{vaultid}?newkeyname=`: Write on an owner. Opens the entry's
/// data and associations (Result 11 if any fails: nothing is moved) and
/// seals them under the current data key of `new_name` (Result 21 if that
/// key is unknown or unusable), in one write.
pub async fn rotate_entry(app: &App, c: &Caller, id: VaultId, new_name: &str) -> VaultResult<String> {
    let e = c.entry(id)?;
    if !c.perms.on_any(&e.owners, Rights::WRITE) {
        return Err(VaultError::denied());
    }
    let now = app.now();
    let (name, new_id, new_key) =
        app.keyring.current(&*app.store, &*app.rng, now, new_name, &c.current_keys).await.map_err(VaultError::invalid_key)?;
    let data = SealedItem::Data { vault_id: id, key_id: e.key_id, sealed: e.sealed.clone() };
    let resealed = app.keyring.reseal_entry(&*app.store, &*app.rng, data, new_id, &new_key).await?.ok_or_else(VaultError::crypto)?;
    let event = c.event(app, EventKind::VaultResealed, Some(id)).detail(format!("key={name} data key {new_id}"));
    if checked(app.store.rekey_entry(id, name.clone(), resealed, Some(c.writer()), event).await?)? {
        Ok(name)
    } else {
        Err(VaultError::Refused {
            code: ResultCode::QueryError,
            message: "The entry changed meanwhile; nothing was changed. Try again.".into(),
        })
    }
}
