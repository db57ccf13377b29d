//! `/vedsdk/Credentials/*`: credential objects, the product's
//! way for anyone but a Master Admin to read a secret back.
//!
//! A credential is a folder of the `\VED` tree at its DN (under
//! `\VED\Policy`) that owns one vault entry of its class's private vault
//! type ([`strongroom_core::credential`]). The entry's data is the
//! credential (class, values, description, expiration, contacts) as JSON,
//! sealed like every vault entry (AES/XChaCha under the current data key,
//! associated data binding the entry). So the rights are the tree's,
//! inherited downwards and read now for the user, their groups or a
//! machine identity: Read on the credential to retrieve it, Create and
//! Write on its folder to create one, Write to update, Write and Delete to
//! delete, Rename (and Create on the new folder) to rename. Every read
//! appends a `credential.retrieved` event to the chain before it answers;
//! an event that cannot be written means no answer.
//!
//! Refusals are the `Config` result codes in a [`TreeError::Result`]
//! (pyvenafi reads them as `ResultCodes.Credential`): 7 insufficient
//! privileges, 400 no such credential (or one the caller may not see),
//! 401 it exists, 110/112 values the class needs or does not hold, 1004 an
//! update naming another class, 504 changed meanwhile, 1000 the sealed
//! data cannot be used.

use serde::{Deserialize, Serialize};

use strongroom_core::credential::{self, Class, Refusal};
use strongroom_core::event::EventKind;
use strongroom_core::grant::AccessContext;
use strongroom_core::tree::{self as ctree, result};
use strongroom_core::vault::crypto;
use strongroom_core::vault::{FolderPath, Rights, VaultId};
use strongroom_proto::SecretString;
use strongroom_proto::credentials::NameTypeValue;
use strongroom_store::{Checked, SealedItem, StoreError, VaultEntry, VaultFilter};

use super::Origin;
use super::tree::{self, TreeError};
use super::vault::Caller;
use crate::App;

fn refuse<T>(code: i32, text: impl Into<String>) -> Result<T, TreeError> {
    Err(TreeError::Result(code, text.into()))
}

fn absent<T>() -> Result<T, TreeError> {
    refuse(result::OBJECT_DOES_NOT_EXIST, "No credential at that path.")
}

fn denied<T>(what: &str) -> Result<T, TreeError> {
    refuse(result::INSUFFICIENT_PRIVILEGES, format!("Insufficient privileges: {what}."))
}

fn sealing_failed<T>() -> Result<T, TreeError> {
    refuse(credential::SECRET_STORE_FAILED, "The credential's sealed values cannot be used.")
}

impl From<Refusal> for TreeError {
    fn from(r: Refusal) -> Self {
        TreeError::Result(r.0, r.1)
    }
}

/// A credential's DN: a path under `\VED\Policy` (not the root itself).
pub fn credential_path(dn: &str) -> Result<FolderPath, TreeError> {
    let Ok(p) = FolderPath::parse(dn) else {
        return refuse(result::OBJECT_INVALID_NAME, "CredentialPath must be a DN under \\VED\\Policy.");
    };
    if !p.key().starts_with("\\ved\\policy\\") {
        return refuse(result::OBJECT_INVALID_CONTAINMENT, "Credentials live under \\VED\\Policy.");
    }
    Ok(p)
}

/// [`credential_path`] for a DN to be made (`Create`, `Rename`'s new DN): no
/// name a new folder may not have (`.`, `..`, invisible characters).
fn new_credential_path(dn: &str) -> Result<FolderPath, TreeError> {
    let p = credential_path(dn)?;
    if let Err(e) = p.check_new() {
        return refuse(result::OBJECT_INVALID_NAME, format!("CredentialPath: {e}."));
    }
    Ok(p)
}

/// The id of the entry that holds the credential at `dn`, if there is
/// one: an entry the folder owns whose vault type is a credential class's
/// (one light read per class, no entry read). The caller then reads it in
/// its context read, with the caller's rights as they are now.
pub async fn entry_id(app: &App, dn: &str) -> Result<Option<VaultId>, StoreError> {
    let Ok(p) = FolderPath::parse(dn) else { return Ok(None) };
    for class in Class::ALL {
        let filter = VaultFilter { vault_type: Some(class.vault_type()), owner_key: Some(p.key().to_owned()), orphans_only: false };
        if let Some(id) = app.store.vault_ids(filter).await?.into_iter().next() {
            return Ok(Some(id));
        }
    }
    Ok(None)
}

/// Whether folder `f` holds a credential (owns an entry of a credential class).
async fn is_credential(app: &App, f: &FolderPath) -> Result<bool, StoreError> {
    Ok(entry_id(app, f.as_str()).await?.is_some())
}

/// Whether `e` is a credential entry: its class.
pub fn class_of(e: &VaultEntry) -> Option<Class> {
    Class::from_vault_type(e.vault_type)
}

/// What a credential holds besides its class. Its values are
/// [`SecretString`]s: `Debug` never shows them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Details {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Milliseconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiration: Option<i64>,
    #[serde(default)]
    pub contact: Vec<String>,
    #[serde(default)]
    pub values: Vec<StoredValue>,
}

/// One value as sealed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredValue {
    pub name: String,
    #[serde(rename = "type")]
    pub value_type: String,
    pub value: SecretString,
}

impl From<StoredValue> for NameTypeValue {
    fn from(v: StoredValue) -> Self {
        NameTypeValue { name: v.name, value_type: v.value_type, value: v.value }
    }
}

/// The sealed payload: the class's friendly name (checked against the vault type on reading) and the details.
#[derive(Serialize, Deserialize)]
struct Sealed {
    class: String,
    #[serde(flatten)]
    details: Details,
}

/// What `Update` changes: each field given replaces the stored one.
#[derive(Clone, Debug, Default)]
pub struct Changes {
    /// The class the caller names (`FriendlyName`): must be the credential's.
    pub class: Option<String>,
    pub values: Option<Vec<NameTypeValue>>,
    pub description: Option<String>,
    pub expiration: Option<String>,
    pub contact: Option<Vec<String>>,
}

/// A credential's values checked against its class: canonical names,
/// `string` or `byte[]` types, bounded sizes. Values without a `Value`
/// (pyvenafi sends `"Value": null` for an optional one) never reach here.
pub fn check_values(class: Class, values: Vec<NameTypeValue>) -> Result<Vec<StoredValue>, TreeError> {
    let names: Vec<&str> = values.iter().map(|v| v.name.as_str()).collect();
    let canon = credential::check_names(class, &names)?;
    let mut out = Vec::with_capacity(values.len());
    for (v, name) in values.into_iter().zip(canon) {
        let t = v.value_type.trim();
        let value_type = if t.is_empty() || t.eq_ignore_ascii_case("string") {
            "string"
        } else if t.eq_ignore_ascii_case("byte[]") {
            "byte[]"
        } else {
            return refuse(credential::INVALID_ARGUMENT, format!("The value {name} has Type {t:?}: string or byte[]."));
        };
        if v.value.expose().chars().count() > credential::MAX_VALUE_CHARS {
            return refuse(credential::ATTRIBUTE_VALUE_TOO_LONG, format!("The value {name} is too long."));
        }
        out.push(StoredValue { name: name.to_owned(), value_type: value_type.to_owned(), value: v.value });
    }
    Ok(out)
}

fn check_text(what: &str, s: Option<String>) -> Result<Option<String>, TreeError> {
    match s {
        Some(t) if t.chars().count() > credential::MAX_TEXT_CHARS => {
            refuse(credential::ATTRIBUTE_VALUE_TOO_LONG, format!("{what} is longer than {} characters.", credential::MAX_TEXT_CHARS))
        }
        other => Ok(other),
    }
}

fn check_contacts(c: Vec<String>) -> Result<Vec<String>, TreeError> {
    if c.len() > credential::MAX_VALUES {
        return refuse(credential::INVALID_ARGUMENT, format!("At most {} contacts.", credential::MAX_VALUES));
    }
    for x in &c {
        check_text("A contact", Some(x.clone()))?;
    }
    Ok(c)
}

/// What `Create` is given.
#[derive(Clone, Debug)]
pub struct NewCredential {
    pub class: String,
    pub values: Vec<NameTypeValue>,
    pub description: Option<String>,
    pub expiration: Option<String>,
    pub contact: Vec<String>,
}

fn seal_details(class: Class, details: &Details, key: &crypto::Key, app: &App, id: VaultId, key_id: i64) -> Result<Vec<u8>, TreeError> {
    let plain = serde_json::to_vec(&Sealed { class: class.friendly_name().to_owned(), details: details.clone() })
        .map_err(|e| TreeError::Store(StoreError::other(format!("credential encoding: {e}"))))?;
    crypto::seal(key, &*app.rng, &crypto::aad_data(id, key_id), &plain).or_else(|_| sealing_failed())
}

async fn open_details(app: &App, e: &VaultEntry, class: Class) -> Result<Details, TreeError> {
    let Ok(key) = app.keyring.key(&*app.store, e.key_id).await else { return sealing_failed() };
    let Ok(plain) = crypto::open(&key, &crypto::aad_data(e.vault_id, e.key_id), &e.sealed) else { return sealing_failed() };
    match serde_json::from_slice::<Sealed>(&plain) {
        Ok(s) if Class::parse(&s.class) == Some(class) => Ok(s.details),
        _ => sealing_failed(),
    }
}

/// The credential the caller's context read found at `path`, if the caller
/// may know of it (any right on it, or a Master Admin); else 400, as for
/// one that does not exist.
fn found<'a>(c: &'a Caller, path: &FolderPath) -> Result<(&'a VaultEntry, Class), TreeError> {
    let Some(e) = c.entry.as_ref().filter(|e| e.owners.iter().any(|o| o.key() == path.key())) else { return absent() };
    let Some(class) = class_of(e) else { return absent() };
    if c.perms.effective(path).implied() == Rights::NONE {
        return absent();
    }
    Ok((e, class))
}

fn holds(c: &Caller, path: &FolderPath, needed: Rights) -> bool {
    c.perms.effective(path).implied().contains(needed)
}

/// `Credentials/Create`: Create and Write on the parent folder (or a
/// Master Admin). The folder at the DN is made first (`Config/Create`'s
/// rules: 401 if the DN is taken, 400 if the parent is missing), then the
/// sealed entry it owns; if that write is refused, the folder just made is
/// taken back.
pub async fn create(app: &App, c: &Caller, access: &AccessContext, origin: &Origin, dn: &str, new: NewCredential) -> Result<(), TreeError> {
    let path = new_credential_path(dn)?;
    let Some(class) = Class::parse(&new.class) else {
        let served: Vec<&str> = Class::ALL.iter().map(|c| c.friendly_name()).collect();
        return refuse(credential::INVALID_ARGUMENT, format!("FriendlyName must be one of {}.", served.join(", ")));
    };
    let details = Details {
        description: check_text("Description", new.description)?,
        expiration: match new.expiration {
            Some(e) => credential::parse_expiration(&e)?,
            None => None,
        },
        contact: check_contacts(new.contact)?,
        values: check_values(class, new.values)?,
    };
    let parent = ctree::parent_of(path.as_str()).and_then(|p| FolderPath::parse(&p).ok()).unwrap_or_else(FolderPath::policy_root);
    if !holds(c, &parent, Rights::CREATE.union(Rights::WRITE)) {
        return denied("creating a credential needs Create and Write on its folder");
    }
    if is_credential(app, &parent).await? {
        return refuse(result::OBJECT_INVALID_CONTAINMENT, "A credential is created in a folder, not in another credential.");
    }
    tree::create(app, access, origin, path.as_str(), ctree::class::POLICY).await?;
    let now = app.now();
    let name = app.keyring.default_name().to_owned();
    let stored = async {
        let (key_name, key_id, key) =
            app.keyring.current(&*app.store, &*app.rng, now, &name, &c.current_keys).await.or_else(|_| sealing_failed())?;
        let id = app.store.allocate_vault_id().await?;
        let sealed = seal_details(class, &details, &key, app, id, key_id)?;
        let event =
            c.event(app, EventKind::CredentialCreated, Some(id)).detail(format!("credential={} class={}", path, class.class_name()));
        let entry = VaultEntry {
            vault_id: id,
            vault_type: class.vault_type(),
            key_name,
            key_id,
            sealed,
            owners: vec![path.clone()],
            created_at: now,
        };
        match app.store.insert_entry(entry, c.writer(), event).await? {
            Checked::Done(true) => Ok(()),
            Checked::Done(false) => absent(),
            Checked::Denied => denied("creating a credential needs Create and Write on its folder"),
        }
    }
    .await;
    if stored.is_err() {
        // Best effort: the folder made above holds nothing; a failure here leaves an empty folder.
        if let Err(e) = tree::admin_for(app, access, origin).delete_folder(path.as_str(), false).await {
            tracing::warn!(error = %e, "an empty credential folder was left behind");
        }
    }
    stored
}

/// `Credentials/Retrieve`: Read on the credential (or a Master Admin).
/// The read is recorded (`credential.retrieved`) before the values are
/// answered.
pub async fn retrieve(app: &App, c: &Caller, dn: &str) -> Result<(Class, Details), TreeError> {
    let path = credential_path(dn)?;
    let (e, class) = found(c, &path)?;
    if !holds(c, &path, Rights::READ) {
        return denied("reading a credential needs Read on it");
    }
    let details = open_details(app, e, class).await?;
    let event = c.event(app, EventKind::CredentialRetrieved, Some(e.vault_id)).detail(format!(
        "credential={} class={} values={}",
        path,
        class.class_name(),
        details.values.len()
    ));
    app.store.append_event(event).await?;
    Ok((class, details))
}

/// `Credentials/Update`: Write on the credential. Each field given
/// replaces the stored one; the class cannot change (1004). One
/// conditional write: the sealed data is replaced only if it is still the
/// one read (504 otherwise, nothing written).
pub async fn update(app: &App, c: &Caller, dn: &str, changes: Changes) -> Result<(), TreeError> {
    let path = credential_path(dn)?;
    let (e, class) = found(c, &path)?;
    if !holds(c, &path, Rights::WRITE) {
        return denied("updating a credential needs Write on it");
    }
    if let Some(named) = &changes.class
        && Class::parse(named) != Some(class)
    {
        return refuse(credential::CREDENTIAL_TYPE_MISMATCH, format!("The credential is a {}.", class.class_name()));
    }
    let mut details = open_details(app, e, class).await?;
    if let Some(v) = changes.values {
        details.values = check_values(class, v)?;
    }
    if let Some(d) = changes.description {
        details.description = check_text("Description", Some(d))?;
    }
    if let Some(x) = changes.expiration {
        details.expiration = credential::parse_expiration(&x)?;
    }
    if let Some(ct) = changes.contact {
        details.contact = check_contacts(ct)?;
    }
    let (key_name, key_id, key) =
        app.keyring.current(&*app.store, &*app.rng, app.now(), &e.key_name, &c.current_keys).await.or_else(|_| sealing_failed())?;
    let sealed = seal_details(class, &details, &key, app, e.vault_id, key_id)?;
    let event =
        c.event(app, EventKind::CredentialUpdated, Some(e.vault_id)).detail(format!("credential={} class={}", path, class.class_name()));
    let old = SealedItem::Data { vault_id: e.vault_id, key_id: e.key_id, sealed: e.sealed.clone() };
    match app.store.rekey_entry(e.vault_id, key_name, vec![(old, key_id, sealed)], Some(c.writer()), event).await? {
        Checked::Done(true) => Ok(()),
        Checked::Done(false) => {
            refuse(credential::TRANSACTION_COLLISION, "The credential changed meanwhile; nothing was changed. Try again.")
        }
        Checked::Denied => denied("updating a credential needs Write on it"),
    }
}

/// `Credentials/Delete`: Write and Delete on the credential. The sealed
/// entry goes first (its last owner removed, one write with its events),
/// then the folder; a folder left by a failure between the two holds no
/// secret and is deleted by `Config/Delete`.
pub async fn delete(app: &App, c: &Caller, access: &AccessContext, origin: &Origin, dn: &str) -> Result<(), TreeError> {
    let path = credential_path(dn)?;
    let (e, class) = found(c, &path)?;
    if !holds(c, &path, Rights::WRITE.union(Rights::DELETE)) {
        return denied("deleting a credential needs Write and Delete on it");
    }
    // Refused before anything is removed: the folder could not go after its entry.
    let below = format!("{}\\", path.key());
    if app.store.folder_objects().await?.iter().any(|f| f.path.key().starts_with(&below)) {
        return refuse(result::OBJECT_HAS_CHILDREN, "The credential has folders below it; delete them first.");
    }
    let event =
        c.event(app, EventKind::CredentialDeleted, Some(e.vault_id)).detail(format!("credential={} class={}", path, class.class_name()));
    match app.store.remove_owner(Some(e.vault_id), path.clone(), c.writer(), event).await? {
        Checked::Done(_) => {}
        Checked::Denied => return denied("deleting a credential needs Write and Delete on it"),
    }
    // The rights were checked above (the tree's own check also wants View, which a credential's deleter need not hold).
    match tree::admin_for(app, access, origin).delete_folder(path.as_str(), false).await {
        Ok(_) | Err(crate::admin::AdminError::NotFound(_)) => Ok(()),
        Err(crate::admin::AdminError::Invalid(why)) => refuse(result::OBJECT_HAS_CHILDREN, why.replace("--recursive", "Recursive")),
        Err(e) => Err(e.into()),
    }
}

/// `Credentials/Rename`: `Config/RenameObject`'s rules (Rename on the
/// credential, Create on the new folder); the sealed entry moves with its
/// folder and keeps its id, so its ciphertext still opens.
pub async fn rename(app: &App, c: &Caller, access: &AccessContext, origin: &Origin, dn: &str, new_dn: &str) -> Result<(), TreeError> {
    let path = credential_path(dn)?;
    found(c, &path)?;
    let to = new_credential_path(new_dn)?;
    if !holds(c, &path, Rights::RENAME) {
        return denied("renaming a credential needs Rename on it");
    }
    tree::rename(app, access, origin, path.as_str(), to.as_str()).await
}

/// `Credentials/Enumerate`: the credentials in the folder `dn` (and below
/// it, `recursive`) whose name matches `pattern`, that the caller may see
/// (any right on them, or a Master Admin), by DN.
pub async fn enumerate(app: &App, c: &Caller, dn: &str, pattern: Option<&str>, recursive: bool) -> Result<Vec<(Class, String)>, TreeError> {
    let Ok(base) = FolderPath::parse(dn) else { return refuse(result::OBJECT_INVALID_NAME, "CredentialPath must be a DN.") };
    if !(base.key() == "\\ved\\policy" || base.key().starts_with("\\ved\\policy\\")) {
        return refuse(result::OBJECT_INVALID_CONTAINMENT, "Credentials live under \\VED\\Policy.");
    }
    let below = format!("{}\\", base.key());
    let mut out = Vec::new();
    for class in Class::ALL {
        let ids = app.store.vault_ids(VaultFilter { vault_type: Some(class.vault_type()), owner_key: None, orphans_only: false }).await?;
        if ids.is_empty() {
            continue;
        }
        for (_, owners) in app.store.owners_of(ids).await? {
            for o in owners {
                let Some(rest) = o.key().strip_prefix(&below) else { continue };
                if !recursive && rest.contains('\\') {
                    continue;
                }
                if let Some(p) = pattern
                    && !ctree::pattern_matches(p, ctree::name_of(o.as_str()))
                {
                    continue;
                }
                if c.perms.effective(&o).implied() == Rights::NONE {
                    continue;
                }
                out.push((class, o.as_str().to_owned()));
            }
        }
    }
    out.sort_by_key(|(_, dn)| dn.to_lowercase());
    Ok(out)
}
