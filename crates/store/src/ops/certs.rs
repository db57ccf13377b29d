//! Certificates: issuing CAs, folder policies, certificate
//! objects and their revocations. An issuance is one transaction: the
//! object's folder (made if need be), the DN's current certificate, key and
//! CSR entries archived, the new ones written with their owner, the DN's one
//! row replaced, its events appended. Every write that appends events is
//! serialised by the chain's head (SQLite's one writer; PostgreSQL's row
//! lock on `event_head`), so concurrent issuances on one DN leave exactly
//! one current certificate and every other one archived.

use std::fmt;

use strongroom_core::event::Event;
use strongroom_core::time::UnixTime;
use strongroom_core::tree::ObjectGuid;
use strongroom_core::vault::{FolderPath, Rights, VaultId};

use super::events::append_event;
use super::{Conn, flag};
use crate::codec::{self, Cols, values};
use crate::sql;
use crate::{Checked, StoreFuture, StoreResult, VaultEntry, Writer};

/// An issuing CA as stored. `key_sealed` is its PKCS#8 private key sealed
/// under data key `key_id` of named key `key_name` (or, with `key_id` 0, the
/// label of its key in the token of `key_name`); `Debug` leaves it out.
/// `cert_der` is the CA's certificate (DER) followed by the certificates
/// above it up to the root, each DER (none for a root); it is empty for an
/// intermediate CA whose certificate is not installed yet.
#[derive(Clone, PartialEq, Eq)]
pub struct CaRecord {
    pub name: String,
    pub dn: String,
    /// `p256`, `p384`, `rsa2048`, …
    pub algorithm: String,
    /// The subject as given (`CN=…, O=…`).
    pub subject: String,
    pub cert_der: Vec<u8>,
    pub key_name: String,
    pub key_id: i64,
    pub key_sealed: Vec<u8>,
    /// The default validity of the certificates it issues.
    pub validity_days: i64,
    pub created_at: UnixTime,
    /// The CA template's `Manual Approval`: what it would issue waits for an approver.
    pub manual_approval: bool,
}

impl fmt::Debug for CaRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CaRecord")
            .field("name", &self.name)
            .field("dn", &self.dn)
            .field("algorithm", &self.algorithm)
            .finish_non_exhaustive()
    }
}

/// A certificate object: its folder (path and GUID) and its current certificate's facts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertRecord {
    pub path: FolderPath,
    pub guid: ObjectGuid,
    /// The issuing CA's name key (lower case).
    pub ca_key: String,
    pub cn: String,
    /// JSON: `{"DNS":[…],"IP":[…],"Email":[…],"URI":[…]}`.
    pub sans: String,
    /// Upper-case hex.
    pub serial: String,
    /// SHA-1 of the DER, upper-case hex.
    pub thumbprint: String,
    pub valid_from: i64,
    pub valid_to: i64,
    pub cert_vault_id: VaultId,
    pub key_vault_id: Option<VaultId>,
    pub csr_vault_id: Option<VaultId>,
    pub disabled: bool,
    pub revoked: bool,
    pub version: i64,
    pub created_at: UnixTime,
    pub issued_at: UnixTime,
    /// JSON of the attributes an object made with `Config/Create` was given
    /// (`strongroom_core::cert::Template`); empty for one made by a Request.
    pub template: String,
}

impl CertRecord {
    /// Whether the object holds a certificate: one made with `Config/Create` holds none
    /// (empty serial and thumbprint) until its first enrollment.
    pub fn issued(&self) -> bool {
        !self.thumbprint.is_empty()
    }

    /// The current certificate's vault id, if it has one.
    pub fn cert_id(&self) -> Option<VaultId> {
        self.issued().then_some(self.cert_vault_id)
    }
}

/// A certificate object made without a certificate (`Config/Create`): its row (empty serial and
/// thumbprint, its attributes in `template`) and its folder, made in one write when `by` (if
/// any) holds Create on `parent` then.
#[derive(Clone, Debug)]
pub struct NewObject {
    pub record: CertRecord,
    /// The object's folder and those above it, top first (see [`Issuance::lineage`]).
    pub lineage: Vec<(FolderPath, ObjectGuid)>,
    pub by: Option<Writer>,
    pub parent: FolderPath,
}

/// One issuance: the object's row, the entries (certificate, key, CSR)
/// owned by its folder, and who asks (their `need` re-checked on
/// `policy_folder` in the write's own transaction; `None`: the CLI).
#[derive(Clone, Debug)]
pub struct Issuance {
    pub record: CertRecord,
    /// The object's folder and those above it, top first, each with the GUID it gets if it is
    /// made here (a folder that exists keeps its own).
    pub lineage: Vec<(FolderPath, ObjectGuid)>,
    pub entries: Vec<VaultEntry>,
    pub by: Option<Writer>,
    pub need: Rights,
    pub policy_folder: FolderPath,
    /// The object's custom field values, written in the same transaction.
    pub fields: FieldValues,
}

/// A custom field's definition (`Metadata/*`): `guid` with braces, `name` its label, `kind` the
/// product's type (1 text, 2 list), `allowed` a list's values, `classes` the classes it applies to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertField {
    pub guid: String,
    pub name: String,
    pub kind: i64,
    pub allowed: Vec<String>,
    pub classes: Vec<String>,
    pub created_at: UnixTime,
}

/// Values of custom fields written to an object: each field's GUID with its values (none: the
/// field is cleared); with `replace`, every other field's values are cleared first. A field no
/// longer defined when the write runs is left out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldValues {
    pub replace: bool,
    pub values: Vec<(String, Vec<String>)>,
}

/// A request waiting for approval (or rejected): see `cert_pending` in migration 0018.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingRecord {
    /// The certificate object's folder (and GUID).
    pub path: FolderPath,
    pub guid: ObjectGuid,
    /// The CA it is to be issued by (name key).
    pub ca_key: String,
    /// The request as given (JSON; the application's).
    pub request: String,
    pub renewal: bool,
    /// Who asked, as the log names them.
    pub requested_by: String,
    pub requested_at: UnixTime,
    pub rejected: bool,
    /// The product's `Status`: `Pending workflow resolution …`, or the rejection's reason.
    pub status: String,
    /// Moves on with every change: approvals and rejections are conditional on it.
    pub version: i64,
}

/// A request set waiting for approval instead of issued: the object's folder (made if need
/// be) and a row with no certificate (`placeholder`, written only if the DN has none), the
/// waiting request (replacing one there), and who asks (`need` re-checked on `policy_folder`).
#[derive(Clone, Debug)]
pub struct Parking {
    pub placeholder: CertRecord,
    pub lineage: Vec<(FolderPath, ObjectGuid)>,
    pub pending: PendingRecord,
    pub by: Option<Writer>,
    pub need: Rights,
    pub policy_folder: FolderPath,
}

/// What becomes of a waiting or rejected request (see [`CertStore::settle_pending`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PendingChange {
    /// Rejected with this status (the reason): `InError`.
    Reject(String),
    /// A rejected request waits again, with this status (`Certificates/Retry`).
    Retry(String),
    /// Gone (`Certificates/Reset`): the object is as before the request.
    Cancel,
}

/// A revoked serial of a CA.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Revocation {
    pub ca_key: String,
    pub serial: String,
    pub revoked_at: i64,
    pub reason: i64,
    /// The certificate's end: the row leaves the CRL after it.
    pub not_after: i64,
}

/// What a certificate request (a Request, a Renew, an approval) is decided on, read in one call
/// and one snapshot ([`CertStore::request_context`]).
#[derive(Clone, Debug, Default)]
pub struct RequestContext {
    /// Whether the policy folder exists (`\VED\Policy` always does).
    pub folder_exists: bool,
    /// Whether the policy folder is itself a certificate object (no policy folder then).
    pub folder_is_certificate: bool,
    /// The own policies of the policy folder and of the folders above it: (folder key, JSON),
    /// top first.
    pub policies: Vec<(String, String)>,
    /// Every CA.
    pub cas: Vec<CaRecord>,
    /// The certificate object at the DN, if any.
    pub existing: Option<CertRecord>,
    /// Whether a folder that is no certificate object is at the DN.
    pub folder_at_dn: bool,
    /// Every custom field's definition.
    pub fields: Vec<CertField>,
    /// The DN's request waiting for approval (or rejected), if any.
    pub pending: Option<PendingRecord>,
}

/// A certificate object with what is read of it to answer for it (`Retrieve`), in one call and
/// one snapshot ([`CertStore::object_context`]).
#[derive(Clone, Debug)]
pub struct ObjectContext {
    pub record: CertRecord,
    /// Its request waiting for approval (or rejected), if any.
    pub pending: Option<PendingRecord>,
    /// Its vault entries, current and archived, oldest first.
    pub entries: Vec<VaultEntry>,
    /// Every CA (its chain is its CA's).
    pub cas: Vec<CaRecord>,
}

/// The store's side of certificates.
pub trait CertStore: Send + Sync + fmt::Debug {
    /// See [`ObjectContext`]: the object at folder key `key`, if there is one.
    fn object_context(&self, key: String) -> StoreFuture<'_, Option<ObjectContext>>;
    /// See [`RequestContext`]: for the object at `object` under the policy folder `folder`.
    fn request_context(&self, folder: FolderPath, object: FolderPath) -> StoreFuture<'_, RequestContext>;
    fn cert_authorities(&self) -> StoreFuture<'_, Vec<CaRecord>>;
    /// Adds a CA and makes its folder, with those above it that are missing (`lineage`, top first) (`false`: the name is taken; nothing written).
    fn insert_ca(&self, ca: CaRecord, lineage: Vec<(FolderPath, ObjectGuid)>, event: Event) -> StoreFuture<'_, bool>;
    /// Replaces CA `name_key`'s certificates (`cert_der`) when they are still
    /// `old` (`false`: no such CA, or its certificates changed meanwhile; nothing written).
    fn set_ca_certificate(&self, name_key: String, old: Vec<u8>, new: Vec<u8>, event: Event) -> StoreFuture<'_, bool>;
    /// Every folder's policy: (folder key, JSON).
    fn cert_policies(&self) -> StoreFuture<'_, Vec<(String, String)>>;
    /// Sets (or with `None` clears) a folder's policy; `false`: no such folder.
    fn set_cert_policy(&self, folder: FolderPath, policy: Option<String>, event: Event) -> StoreFuture<'_, bool>;
    /// Replaces a folder's policy when it is still `old` (`None`: it has none) by `new` (`None`:
    /// none), with `event`: one conditional write. `None`: no such folder; `Some(false)`: its
    /// policy changed meanwhile; nothing written either way.
    fn replace_cert_policy(
        &self,
        folder: FolderPath,
        old: Option<String>,
        new: Option<String>,
        event: Event,
    ) -> StoreFuture<'_, Option<bool>>;
    fn certificates(&self) -> StoreFuture<'_, Vec<CertRecord>>;
    /// The certificate object at folder key `key`.
    fn certificate(&self, key: String) -> StoreFuture<'_, Option<CertRecord>>;
    /// See [`Issuance`] and the module's text.
    fn issue_certificate(&self, issue: Issuance, events: Vec<Event>) -> StoreFuture<'_, Checked<()>>;
    /// See [`NewObject`]. `Done(false)`: something is at that DN already (nothing written).
    fn create_certificate_object(&self, object: NewObject, event: Event) -> StoreFuture<'_, Checked<bool>>;
    /// Records a revocation (once per serial) and marks the object (disabled too with `disable`), when
    /// `by` (if any) holds Revoke on the object now. `Done(false)`: the serial was revoked already.
    fn revoke_certificate(
        &self,
        key: String,
        r: Revocation,
        disable: bool,
        by: Option<Writer>,
        event: Event,
    ) -> StoreFuture<'_, Checked<bool>>;
    /// A CA's revocations whose certificates end after `now`.
    fn revocations(&self, ca_key: String, now: i64) -> StoreFuture<'_, Vec<Revocation>>;
    /// Deletes every CA's revocations of certificates that ended before `before` (the janitor's,
    /// long after they left the CRL); how many. One statement: replicas' runs race harmlessly.
    fn purge_revocations(&self, before: i64) -> StoreFuture<'_, u64>;
    /// `false`: no such object.
    fn set_certificate_disabled(&self, key: String, disabled: bool, by: Option<Writer>, event: Event) -> StoreFuture<'_, Checked<bool>>;
    /// The vault entries owned by folder key `key` (current and archived), oldest first.
    fn cert_entries(&self, path: FolderPath) -> StoreFuture<'_, Vec<VaultEntry>>;
    /// Deletes the object: its row, its entries (current and archived) and its folder (unless folders lie below it).
    fn delete_certificate(&self, key: String, by: Option<Writer>, event: Event) -> StoreFuture<'_, Checked<bool>>;
    /// Every custom field's definition, by name.
    fn cert_fields(&self) -> StoreFuture<'_, Vec<CertField>>;
    /// Defines a field (`false`: its GUID or its name, in any case, is taken; nothing written).
    fn insert_cert_field(&self, field: CertField, event: Event) -> StoreFuture<'_, bool>;
    /// Removes the field named `name` (any case) and every object's values of it (`false`: no such field).
    fn delete_cert_field(&self, name: String, event: Event) -> StoreFuture<'_, bool>;
    /// Object `key`'s custom field values: (field GUID, values), by GUID.
    fn cert_field_values(&self, key: String) -> StoreFuture<'_, Vec<(String, Vec<String>)>>;
    /// Writes object `key`'s values (`Metadata/Set`) when `by` (if any) holds Write on it now.
    /// `Done(false)`: no such object (nothing written).
    fn set_cert_field_values(&self, key: String, values: FieldValues, by: Option<Writer>, event: Event) -> StoreFuture<'_, Checked<bool>>;
    /// Sets CA `name_key`'s `Manual Approval` (`false`: no such CA).
    fn set_ca_manual_approval(&self, name_key: String, on: bool, event: Event) -> StoreFuture<'_, bool>;
    /// Every waiting or rejected request, oldest first.
    fn pending_certificates(&self) -> StoreFuture<'_, Vec<PendingRecord>>;
    /// The waiting or rejected request of the object at folder key `key`.
    fn pending_certificate(&self, key: String) -> StoreFuture<'_, Option<PendingRecord>>;
    /// See [`Parking`].
    fn park_certificate(&self, park: Parking, events: Vec<Event>) -> StoreFuture<'_, Checked<()>>;
    /// An approval: the issuance of [`CertStore::issue_certificate`], conditional on the
    /// object's request still waiting at `version` (one statement, its row count checked, then
    /// the issuance in the same transaction). `Done(false)`: it was approved, rejected,
    /// reset or replaced meanwhile; nothing written.
    fn approve_certificate(&self, issue: Issuance, version: i64, events: Vec<Event>) -> StoreFuture<'_, Checked<bool>>;
    /// Changes the request of the object at `key` still at `version` (`Done(false)`: it changed
    /// meanwhile; nothing written), when `by` (if any) holds `need` on the object.
    fn settle_pending(
        &self,
        key: String,
        version: i64,
        change: PendingChange,
        by: Option<Writer>,
        need: Rights,
        event: Event,
    ) -> StoreFuture<'_, Checked<bool>>;
}

fn json_list(text: &str) -> StoreResult<Vec<String>> {
    strongroom_core::cert::fields::decode_list(text).ok_or_else(|| crate::StoreError::other("a stored list that is not one"))
}

fn list_json(list: &[String]) -> StoreResult<String> {
    Ok(strongroom_core::cert::fields::encode_list(list))
}

fn field(r: &mut Cols<'_>) -> StoreResult<CertField> {
    Ok(CertField {
        guid: r.text()?,
        name: {
            r.text()?; // name_key
            r.text()?
        },
        kind: r.int()?,
        allowed: json_list(&r.text()?)?,
        classes: json_list(&r.text()?)?,
        created_at: r.time()?,
    })
}

/// Writes `v` to object `key` (see [`FieldValues`]).
async fn write_field_values<C: Conn>(c: &C, key: &str, v: &FieldValues) -> StoreResult<()> {
    if v.replace {
        c.execute(&sql::CLEAR_CERT_FIELD_VALUES, &values![key]).await?;
    }
    for (guid, vals) in &v.values {
        if vals.is_empty() {
            c.execute(&sql::CLEAR_CERT_FIELD_VALUE, &values![key, guid.as_str()]).await?;
        } else {
            c.execute(&sql::SET_CERT_FIELD_VALUE, &values![key, guid.as_str(), list_json(vals)?]).await?;
        }
    }
    Ok(())
}

pub(crate) async fn cert_fields<C: Conn>(c: &C) -> StoreResult<Vec<CertField>> {
    c.query(&sql::CERT_FIELDS, &[], field).await
}

pub(crate) async fn insert_cert_field<C: Conn>(c: &C, f: &CertField, event: &Event) -> StoreResult<bool> {
    let row = values![
        f.guid.as_str(),
        f.name.to_lowercase(),
        f.name.as_str(),
        f.kind,
        list_json(&f.allowed)?,
        list_json(&f.classes)?,
        f.created_at,
    ];
    if c.execute(&sql::INSERT_CERT_FIELD, &row).await? == 0 {
        return Ok(false);
    }
    append_event(c, event).await?;
    Ok(true)
}

pub(crate) async fn delete_cert_field<C: Conn>(c: &C, name: &str, event: &Event) -> StoreResult<bool> {
    let key = name.to_lowercase();
    c.execute(&sql::DELETE_FIELD_VALUES, &values![key.as_str()]).await?;
    if c.execute(&sql::DELETE_CERT_FIELD, &values![key.as_str()]).await? == 0 {
        return Ok(false);
    }
    append_event(c, event).await?;
    Ok(true)
}

pub(crate) async fn cert_field_values<C: Conn>(c: &C, key: &str) -> StoreResult<Vec<(String, Vec<String>)>> {
    let rows = c.query(&sql::CERT_FIELD_VALUES, &values![key], |r| Ok((r.text()?, r.text()?))).await?;
    rows.into_iter().map(|(g, v)| Ok((g, json_list(&v)?))).collect()
}

pub(crate) async fn set_cert_field_values<C: Conn>(
    c: &C,
    key: &str,
    v: &FieldValues,
    by: Option<&Writer>,
    event: &Event,
) -> StoreResult<Checked<bool>> {
    if !may_hold(c, by, key, Rights::WRITE).await? {
        return Ok(Checked::Denied);
    }
    if !super::exists(c, &sql::CERTIFICATE_EXISTS, &values![key]).await? {
        return Ok(Checked::Done(false));
    }
    write_field_values(c, key, v).await?;
    append_event(c, event).await?;
    Ok(Checked::Done(true))
}

fn pending(r: &mut Cols<'_>) -> StoreResult<PendingRecord> {
    Ok(PendingRecord {
        path: r.folder()?,
        guid: ObjectGuid::from_stored(r.text()?),
        ca_key: r.text()?,
        request: r.text()?,
        renewal: r.bool()?,
        requested_by: r.text()?,
        requested_at: r.time()?,
        rejected: r.bool()?,
        status: r.text()?,
        version: r.int()?,
    })
}

fn ca(r: &mut Cols<'_>) -> StoreResult<CaRecord> {
    Ok(CaRecord {
        name: {
            r.text()?; // name_key
            r.text()?
        },
        dn: r.text()?,
        algorithm: r.text()?,
        subject: r.text()?,
        cert_der: r.bytes()?,
        key_name: r.text()?,
        key_id: r.int()?,
        key_sealed: r.bytes()?,
        validity_days: r.int()?,
        created_at: r.time()?,
        manual_approval: r.bool()?,
    })
}

fn cert(r: &mut Cols<'_>) -> StoreResult<CertRecord> {
    Ok(CertRecord {
        path: r.folder()?,
        guid: ObjectGuid::from_stored(r.text()?),
        ca_key: r.text()?,
        cn: r.text()?,
        sans: r.text()?,
        serial: r.text()?,
        thumbprint: r.text()?,
        valid_from: r.int()?,
        valid_to: r.int()?,
        cert_vault_id: VaultId(r.int()?),
        key_vault_id: r.opt_int()?.map(VaultId),
        csr_vault_id: r.opt_int()?.map(VaultId),
        disabled: r.bool()?,
        revoked: r.bool()?,
        version: r.int()?,
        created_at: r.time()?,
        issued_at: r.time()?,
        template: r.text()?,
    })
}

fn cert_row(r: &CertRecord) -> [codec::Value<'_>; 17] {
    values![
        r.path.key(),
        r.ca_key.as_str(),
        r.cn.as_str(),
        r.sans.as_str(),
        r.serial.as_str(),
        r.thumbprint.as_str(),
        r.valid_from,
        r.valid_to,
        r.cert_vault_id,
        r.key_vault_id,
        r.csr_vault_id,
        r.disabled,
        r.revoked,
        r.version,
        r.created_at,
        r.issued_at,
        r.template.as_str(),
    ]
}

async fn may_hold<C: Conn>(c: &C, by: Option<&Writer>, key: &str, need: Rights) -> StoreResult<bool> {
    let Some(by) = by else { return Ok(true) };
    flag(c, &sql::MAY_HOLD, &values![by.grant_id.as_str(), by.user_id.as_str(), key, i64::from(need.bits())]).await
}

pub(crate) async fn request_context<C: Conn>(c: &C, folder: &FolderPath, object: &FolderPath) -> StoreResult<RequestContext> {
    let lineage: Vec<FolderPath> = folder.lineage();
    let mut policies: Vec<(String, String)> =
        cert_policies(c).await?.into_iter().filter(|(k, _)| lineage.iter().any(|f| f.key() == k)).collect();
    policies.sort_by_key(|(k, _)| lineage.iter().position(|f| f.key() == k));
    let existing = certificate(c, object.key()).await?;
    Ok(RequestContext {
        folder_exists: folder.key() == "\\ved\\policy" || super::vault::folder_exists(c, folder.key()).await?,
        folder_is_certificate: certificate(c, folder.key()).await?.is_some(),
        policies,
        cas: cert_authorities(c).await?,
        folder_at_dn: existing.is_none() && super::vault::folder_exists(c, object.key()).await?,
        existing,
        fields: cert_fields(c).await?,
        pending: pending_certificate(c, object.key()).await?,
    })
}

pub(crate) async fn object_context<C: Conn>(c: &C, key: &str) -> StoreResult<Option<ObjectContext>> {
    let Some(record) = certificate(c, key).await? else { return Ok(None) };
    Ok(Some(ObjectContext {
        pending: pending_certificate(c, key).await?,
        entries: cert_entries(c, &record.path).await?,
        cas: cert_authorities(c).await?,
        record,
    }))
}

pub(crate) async fn cert_authorities<C: Conn>(c: &C) -> StoreResult<Vec<CaRecord>> {
    c.query(&sql::CAS, &[], ca).await
}

pub(crate) async fn insert_ca<C: Conn>(c: &C, ca: &CaRecord, lineage: &[(FolderPath, ObjectGuid)], event: &Event) -> StoreResult<bool> {
    let row = values![
        ca.name.to_lowercase(),
        ca.name.as_str(),
        ca.dn.as_str(),
        ca.algorithm.as_str(),
        ca.subject.as_str(),
        &ca.cert_der,
        ca.key_name.as_str(),
        ca.key_id,
        &ca.key_sealed,
        ca.validity_days,
        ca.created_at,
        ca.manual_approval,
    ];
    if c.execute(&sql::INSERT_CA, &row).await? == 0 {
        return Ok(false);
    }
    for (f, g) in lineage {
        c.execute(&sql::CREATE_FOLDER, &codec::folder_row(f, ca.created_at, g)).await?;
    }
    append_event(c, event).await?;
    Ok(true)
}

pub(crate) async fn set_ca_certificate<C: Conn>(c: &C, name_key: &str, old: &[u8], new: &[u8], event: &Event) -> StoreResult<bool> {
    if c.execute(&sql::SET_CA_CERT, &values![name_key, new, old]).await? == 0 {
        return Ok(false);
    }
    append_event(c, event).await?;
    Ok(true)
}

pub(crate) async fn cert_policies<C: Conn>(c: &C) -> StoreResult<Vec<(String, String)>> {
    c.query(&sql::CERT_POLICIES, &[], |r| Ok((r.text()?, r.text()?))).await
}

pub(crate) async fn set_cert_policy<C: Conn>(c: &C, folder: &FolderPath, policy: Option<&str>, event: &Event) -> StoreResult<bool> {
    if !super::vault::folder_exists(c, folder.key()).await? {
        return Ok(false);
    }
    match policy {
        Some(p) => c.execute(&sql::SET_CERT_POLICY, &values![folder.key(), p]).await?,
        None => c.execute(&sql::CLEAR_CERT_POLICY, &values![folder.key()]).await?,
    };
    append_event(c, event).await?;
    Ok(true)
}

pub(crate) async fn replace_cert_policy<C: Conn>(
    c: &C,
    folder: &FolderPath,
    old: Option<&str>,
    new: Option<&str>,
    event: &Event,
) -> StoreResult<Option<bool>> {
    if !super::vault::folder_exists(c, folder.key()).await? {
        return Ok(None);
    }
    let changed = match (old, new) {
        (Some(o), Some(n)) => c.execute(&sql::REPLACE_CERT_POLICY, &values![folder.key(), n, o]).await?,
        (None, Some(n)) => c.execute(&sql::ADD_CERT_POLICY, &values![folder.key(), n]).await?,
        (Some(o), None) => c.execute(&sql::DROP_CERT_POLICY, &values![folder.key(), o]).await?,
        (None, None) => return Ok(Some(true)),
    };
    if changed != 1 {
        return Ok(Some(false));
    }
    append_event(c, event).await?;
    Ok(Some(true))
}

pub(crate) async fn certificates<C: Conn>(c: &C) -> StoreResult<Vec<CertRecord>> {
    c.query(&sql::CERTIFICATES, &[], cert).await
}

pub(crate) async fn certificate<C: Conn>(c: &C, key: &str) -> StoreResult<Option<CertRecord>> {
    c.query_opt(&sql::CERTIFICATE, &values![key], cert).await
}

pub(crate) async fn issue_certificate<C: Conn>(c: &C, issue: &Issuance, events: &[Event]) -> StoreResult<Checked<()>> {
    if !may_hold(c, issue.by.as_ref(), issue.policy_folder.key(), issue.need).await? {
        return Ok(Checked::Denied);
    }
    issue_body(c, issue, events).await?;
    Ok(Checked::Done(()))
}

async fn issue_body<C: Conn>(c: &C, issue: &Issuance, events: &[Event]) -> StoreResult<()> {
    let r = &issue.record;
    for (f, g) in &issue.lineage {
        c.execute(&sql::CREATE_FOLDER, &codec::folder_row(f, r.issued_at, g)).await?;
    }
    c.execute(&sql::ARCHIVE_CERT_ENTRIES, &values![r.path.key()]).await?;
    for e in &issue.entries {
        c.execute(&sql::INSERT_ENTRY, &codec::entry_row(e)).await?;
        for o in &e.owners {
            c.execute(&sql::INSERT_OWNER, &codec::owner_row(e.vault_id, o)).await?;
        }
    }
    c.execute(&sql::UPSERT_CERTIFICATE, &cert_row(r)).await?;
    write_field_values(c, r.path.key(), &issue.fields).await?;
    // An issuance settles whatever request waited at the DN (approved, or superseded by one
    // issued without approval).
    c.execute(&sql::CLEAR_PENDING, &values![r.path.key()]).await?;
    for e in events {
        append_event(c, e).await?;
    }
    Ok(())
}

pub(crate) async fn set_ca_manual_approval<C: Conn>(c: &C, name_key: &str, on: bool, event: &Event) -> StoreResult<bool> {
    if c.execute(&sql::SET_CA_APPROVAL, &values![name_key, on]).await? == 0 {
        return Ok(false);
    }
    append_event(c, event).await?;
    Ok(true)
}

pub(crate) async fn pending_certificates<C: Conn>(c: &C) -> StoreResult<Vec<PendingRecord>> {
    c.query(&sql::PENDING_CERTS, &[], pending).await
}

pub(crate) async fn pending_certificate<C: Conn>(c: &C, key: &str) -> StoreResult<Option<PendingRecord>> {
    c.query_opt(&sql::PENDING_CERT, &values![key], pending).await
}

pub(crate) async fn park_certificate<C: Conn>(c: &C, p: &Parking, events: &[Event]) -> StoreResult<Checked<()>> {
    if !may_hold(c, p.by.as_ref(), p.policy_folder.key(), p.need).await? {
        return Ok(Checked::Denied);
    }
    let r = &p.placeholder;
    for (f, g) in &p.lineage {
        c.execute(&sql::CREATE_FOLDER, &codec::folder_row(f, r.created_at, g)).await?;
    }
    c.execute(&sql::INSERT_CERT_PLACEHOLDER, &cert_row(r)).await?;
    let w = &p.pending;
    let row = values![
        r.path.key(),
        w.ca_key.as_str(),
        w.request.as_str(),
        w.renewal,
        w.requested_by.as_str(),
        w.requested_at,
        w.rejected,
        w.status.as_str(),
        w.version,
    ];
    c.execute(&sql::UPSERT_PENDING, &row).await?;
    for e in events {
        append_event(c, e).await?;
    }
    Ok(Checked::Done(()))
}

pub(crate) async fn approve_certificate<C: Conn>(c: &C, issue: &Issuance, version: i64, events: &[Event]) -> StoreResult<Checked<bool>> {
    if !may_hold(c, issue.by.as_ref(), issue.policy_folder.key(), issue.need).await? {
        return Ok(Checked::Denied);
    }
    // The one conditional write: waiting → issued. A second approval finds no row.
    if c.execute(&sql::TAKE_PENDING, &values![issue.record.path.key(), version]).await? == 0 {
        return Ok(Checked::Done(false));
    }
    issue_body(c, issue, events).await?;
    Ok(Checked::Done(true))
}

pub(crate) async fn settle_pending<C: Conn>(
    c: &C,
    key: &str,
    version: i64,
    change: &PendingChange,
    by: Option<&Writer>,
    need: Rights,
    event: &Event,
) -> StoreResult<Checked<bool>> {
    if !may_hold(c, by, key, need).await? {
        return Ok(Checked::Denied);
    }
    let n = match change {
        PendingChange::Reject(status) => c.execute(&sql::SET_PENDING, &values![key, version, true, status.as_str()]).await?,
        PendingChange::Retry(status) => c.execute(&sql::SET_PENDING, &values![key, version, false, status.as_str()]).await?,
        PendingChange::Cancel => {
            // Reset: gone whatever its version (the caller saw it).
            c.execute(&sql::CLEAR_PENDING, &values![key]).await?
        }
    };
    if n == 0 {
        return Ok(Checked::Done(false));
    }
    append_event(c, event).await?;
    Ok(Checked::Done(true))
}

pub(crate) async fn create_certificate_object<C: Conn>(c: &C, o: &NewObject, event: &Event) -> StoreResult<Checked<bool>> {
    if !may_hold(c, o.by.as_ref(), o.parent.key(), Rights::CREATE).await? {
        return Ok(Checked::Denied);
    }
    let r = &o.record;
    let Some(((last, guid), above)) = o.lineage.split_last() else {
        return Err(crate::StoreError::other("a certificate object without a folder"));
    };
    for (f, g) in above {
        c.execute(&sql::CREATE_FOLDER, &codec::folder_row(f, r.created_at, g)).await?;
    }
    // The object's own folder: made here, or something is there already.
    if c.execute(&sql::CREATE_FOLDER, &codec::folder_row(last, r.created_at, guid)).await? == 0 {
        return Ok(Checked::Done(false));
    }
    // A row (and field values) left by a folder deleted without it is replaced.
    c.execute(&sql::UPSERT_CERTIFICATE, &cert_row(r)).await?;
    c.execute(&sql::CLEAR_CERT_FIELD_VALUES, &values![r.path.key()]).await?;
    append_event(c, event).await?;
    Ok(Checked::Done(true))
}

pub(crate) async fn revoke_certificate<C: Conn>(
    c: &C,
    key: &str,
    r: &Revocation,
    disable: bool,
    by: Option<&Writer>,
    event: &Event,
) -> StoreResult<Checked<bool>> {
    if !may_hold(c, by, key, Rights::REVOKE).await? {
        return Ok(Checked::Denied);
    }
    let row = values![r.ca_key.as_str(), r.serial.as_str(), r.revoked_at, r.reason, r.not_after];
    let new = c.execute(&sql::INSERT_REVOCATION, &row).await? == 1;
    let marked = c.execute(&sql::MARK_REVOKED, &values![key, true, disable, r.serial.as_str()]).await?;
    if new || marked > 0 {
        append_event(c, event).await?;
    }
    Ok(Checked::Done(new))
}

pub(crate) async fn revocations<C: Conn>(c: &C, ca_key: &str, now: i64) -> StoreResult<Vec<Revocation>> {
    c.query(&sql::REVOCATIONS, &values![ca_key, now], |r| {
        Ok(Revocation { ca_key: r.text()?, serial: r.text()?, revoked_at: r.int()?, reason: r.int()?, not_after: r.int()? })
    })
    .await
}

pub(crate) async fn purge_revocations<C: Conn>(c: &C, before: i64) -> StoreResult<u64> {
    c.execute(&sql::PURGE_REVOCATIONS, &values![before]).await
}

pub(crate) async fn set_certificate_disabled<C: Conn>(
    c: &C,
    key: &str,
    disabled: bool,
    by: Option<&Writer>,
    event: &Event,
) -> StoreResult<Checked<bool>> {
    if !may_hold(c, by, key, Rights::WRITE).await? {
        return Ok(Checked::Denied);
    }
    if c.execute(&sql::SET_CERT_DISABLED, &values![key, disabled]).await? == 0 {
        return Ok(Checked::Done(false));
    }
    append_event(c, event).await?;
    Ok(Checked::Done(true))
}

pub(crate) async fn cert_entries<C: Conn>(c: &C, path: &FolderPath) -> StoreResult<Vec<VaultEntry>> {
    let mut out = c.query(&sql::CERT_ENTRIES, &values![path.key()], codec::entry).await?;
    for e in &mut out {
        e.owners = vec![path.clone()];
    }
    Ok(out)
}

pub(crate) async fn delete_certificate<C: Conn>(c: &C, key: &str, by: Option<&Writer>, event: &Event) -> StoreResult<Checked<bool>> {
    if !may_hold(c, by, key, Rights::DELETE).await? {
        return Ok(Checked::Denied);
    }
    if c.execute(&sql::DELETE_CERTIFICATE, &values![key]).await? == 0 {
        return Ok(Checked::Done(false));
    }
    c.execute(&sql::CLEAR_CERT_FIELD_VALUES, &values![key]).await?;
    c.execute(&sql::CLEAR_PENDING, &values![key]).await?;
    let ids = c.query(&sql::CERT_OWNED, &values![key], |r| r.int()).await?;
    c.execute(&sql::DELETE_OWNED_BY, &values![key]).await?;
    for id in ids {
        c.execute(&sql::DELETE_ORPHAN_ENTRY, &values![id]).await?;
    }
    c.execute(&sql::DELETE_LEAF_FOLDER, &values![key]).await?;
    append_event(c, event).await?;
    Ok(Checked::Done(true))
}

/// The methods of [`CertStore`], alike on both backends.
macro_rules! cert_methods {
    ($read:ident, $write:ident) => {
        fn request_context(&self, folder: FolderPath, object: FolderPath) -> StoreFuture<'_, RequestContext> {
            $read!(self, |c| certs::request_context(c, &folder, &object))
        }
        fn object_context(&self, key: String) -> StoreFuture<'_, Option<ObjectContext>> {
            $read!(self, |c| certs::object_context(c, &key))
        }
        fn cert_authorities(&self) -> StoreFuture<'_, Vec<CaRecord>> {
            $read!(self, |c| certs::cert_authorities(c))
        }
        fn insert_ca(&self, ca: CaRecord, lineage: Vec<(FolderPath, ObjectGuid)>, event: Event) -> StoreFuture<'_, bool> {
            $write!(self, |c| certs::insert_ca(c, &ca, &lineage, &event))
        }
        fn set_ca_certificate(&self, name_key: String, old: Vec<u8>, new: Vec<u8>, event: Event) -> StoreFuture<'_, bool> {
            $write!(self, |c| certs::set_ca_certificate(c, &name_key, &old, &new, &event))
        }
        fn cert_policies(&self) -> StoreFuture<'_, Vec<(String, String)>> {
            $read!(self, |c| certs::cert_policies(c))
        }
        fn set_cert_policy(&self, folder: FolderPath, policy: Option<String>, event: Event) -> StoreFuture<'_, bool> {
            $write!(self, |c| certs::set_cert_policy(c, &folder, policy.as_deref(), &event))
        }
        fn replace_cert_policy(
            &self,
            folder: FolderPath,
            old: Option<String>,
            new: Option<String>,
            event: Event,
        ) -> StoreFuture<'_, Option<bool>> {
            $write!(self, |c| certs::replace_cert_policy(c, &folder, old.as_deref(), new.as_deref(), &event))
        }
        fn certificates(&self) -> StoreFuture<'_, Vec<CertRecord>> {
            $read!(self, |c| certs::certificates(c))
        }
        fn certificate(&self, key: String) -> StoreFuture<'_, Option<CertRecord>> {
            $read!(self, |c| certs::certificate(c, &key))
        }
        fn issue_certificate(&self, issue: Issuance, events: Vec<Event>) -> StoreFuture<'_, Checked<()>> {
            $write!(self, |c| certs::issue_certificate(c, &issue, &events))
        }
        fn create_certificate_object(&self, object: NewObject, event: Event) -> StoreFuture<'_, Checked<bool>> {
            $write!(self, |c| certs::create_certificate_object(c, &object, &event))
        }
        fn revoke_certificate(
            &self,
            key: String,
            r: Revocation,
            disable: bool,
            by: Option<Writer>,
            event: Event,
        ) -> StoreFuture<'_, Checked<bool>> {
            $write!(self, |c| certs::revoke_certificate(c, &key, &r, disable, by.as_ref(), &event))
        }
        fn revocations(&self, ca_key: String, now: i64) -> StoreFuture<'_, Vec<Revocation>> {
            $read!(self, |c| certs::revocations(c, &ca_key, now))
        }
        fn purge_revocations(&self, before: i64) -> StoreFuture<'_, u64> {
            $write!(self, |c| certs::purge_revocations(c, before))
        }
        fn set_certificate_disabled(
            &self,
            key: String,
            disabled: bool,
            by: Option<Writer>,
            event: Event,
        ) -> StoreFuture<'_, Checked<bool>> {
            $write!(self, |c| certs::set_certificate_disabled(c, &key, disabled, by.as_ref(), &event))
        }
        fn cert_entries(&self, path: FolderPath) -> StoreFuture<'_, Vec<VaultEntry>> {
            $read!(self, |c| certs::cert_entries(c, &path))
        }
        fn delete_certificate(&self, key: String, by: Option<Writer>, event: Event) -> StoreFuture<'_, Checked<bool>> {
            $write!(self, |c| certs::delete_certificate(c, &key, by.as_ref(), &event))
        }
        fn cert_fields(&self) -> StoreFuture<'_, Vec<CertField>> {
            $read!(self, |c| certs::cert_fields(c))
        }
        fn insert_cert_field(&self, field: CertField, event: Event) -> StoreFuture<'_, bool> {
            $write!(self, |c| certs::insert_cert_field(c, &field, &event))
        }
        fn delete_cert_field(&self, name: String, event: Event) -> StoreFuture<'_, bool> {
            $write!(self, |c| certs::delete_cert_field(c, &name, &event))
        }
        fn cert_field_values(&self, key: String) -> StoreFuture<'_, Vec<(String, Vec<String>)>> {
            $read!(self, |c| certs::cert_field_values(c, &key))
        }
        fn set_cert_field_values(
            &self,
            key: String,
            values: FieldValues,
            by: Option<Writer>,
            event: Event,
        ) -> StoreFuture<'_, Checked<bool>> {
            $write!(self, |c| certs::set_cert_field_values(c, &key, &values, by.as_ref(), &event))
        }
        fn set_ca_manual_approval(&self, name_key: String, on: bool, event: Event) -> StoreFuture<'_, bool> {
            $write!(self, |c| certs::set_ca_manual_approval(c, &name_key, on, &event))
        }
        fn pending_certificates(&self) -> StoreFuture<'_, Vec<PendingRecord>> {
            $read!(self, |c| certs::pending_certificates(c))
        }
        fn pending_certificate(&self, key: String) -> StoreFuture<'_, Option<PendingRecord>> {
            $read!(self, |c| certs::pending_certificate(c, &key))
        }
        fn park_certificate(&self, park: Parking, events: Vec<Event>) -> StoreFuture<'_, Checked<()>> {
            $write!(self, |c| certs::park_certificate(c, &park, &events))
        }
        fn approve_certificate(&self, issue: Issuance, version: i64, events: Vec<Event>) -> StoreFuture<'_, Checked<bool>> {
            $write!(self, |c| certs::approve_certificate(c, &issue, version, &events))
        }
        fn settle_pending(
            &self,
            key: String,
            version: i64,
            change: PendingChange,
            by: Option<Writer>,
            need: Rights,
            event: Event,
        ) -> StoreFuture<'_, Checked<bool>> {
            $write!(self, |c| certs::settle_pending(c, &key, version, &change, by.as_ref(), need, &event))
        }
    };
}
pub(crate) use cert_methods;
