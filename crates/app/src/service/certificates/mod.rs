//! Certificates through the product's own API: a built-in CA
//! behind `/vedsdk/Certificates/*`.
//!
//! A certificate object is a folder of the `\VED` tree at
//! `PolicyDN\ObjectName` (its GUID is the folder's, so `Config/DnToGuid`
//! and rights work as for any folder) with one row of facts in the store;
//! its certificate (VaultType 2, DER), its centrally made key (256, PKCS#8)
//! and its CSR (512, DER) are vault entries owned by that folder, sealed
//! like every entry. Issuance is synchronous: the key is made and the
//! certificate signed before the Request's one write, which archives the
//! DN's previous entries, writes the new ones and replaces the row (see
//! `strongroom_store::CertStore`). Every request, issuance, key export,
//! revocation, disabling and deletion is a chained event.
//!
//! Rights (the product's, on the tree, inherited downwards): Create on the
//! policy folder to request; Read on the object to retrieve, search and
//! read it, Private Key Read too for its key; Write to renew, reset and
//! disable; Revoke to revoke; Delete to delete. A missing right is
//! [`CertError::Denied`] (403), never a 401.

use std::collections::HashMap;

use serde_json::json;
use zeroize::Zeroizing;

use strongroom_core::cert::enroll::{self, Ask, CaView, Refused};
use strongroom_core::cert::{self as ccert, KeySpec, Policy, Template, fields, vault_type};
use strongroom_core::event::{Event, EventKind};
use strongroom_core::random::Random;
use strongroom_core::time::Clock;
use strongroom_core::tree::{ObjectGuid, lineage_with_guids};
use strongroom_core::vault::crypto;
use strongroom_core::vault::{FolderPath, Rights, VaultId};
use strongroom_keyring::{KeyRing, SigningAlgorithm, TokenCaSigner};
use strongroom_store::{
    CaRecord, CertField, CertRecord, Checked, FieldValues, Issuance, NewObject, ObjectContext, Parking, PendingChange, PendingRecord,
    RequestContext, Revocation, Store, StoreError, VaultEntry, Writer,
};

use super::caller::Caller;
use crate::App;
use crate::pki::{self, CaAlgorithm, CaSigner, Csr, Issuer, PkiError, PrivateKey, Sans, SoftwareSigner};

mod approval;
mod ca;
mod metadata;
mod objects;
mod policy;
mod request;
mod retrieve;

pub use approval::*;
pub use ca::*;
pub use metadata::*;
pub use objects::*;
pub use policy::*;
pub use request::*;
pub use retrieve::*;

/// Why a certificate call did not succeed. The texts are the client's to read.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    /// Bad input or a policy violation: 400 `{"Error": …}`; nothing was issued.
    #[error("{0}")]
    Invalid(String),
    /// No such certificate (or one the caller may not see): 400, the product's
    /// `Certificate does not exist.` in the status line.
    #[error("{0}")]
    NoCertificate(String),
    /// No such policy folder: 400 `PolicyDN: … does not exist` (vcert reads the text).
    #[error("{0}")]
    NoPolicy(String),
    /// A private key was asked for and none is stored: 400.
    #[error("{0}")]
    NoKey(String),
    /// A right is missing: 403.
    #[error("{0}")]
    Denied(String),
    /// What Strongroom does not do (external CAs, devices, SSH, Import): 400.
    #[error("{0}")]
    Unsupported(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Too many keys asked of the server at once (by this caller, or by all): 429 with
    /// `Retry-After`; nothing was requested.
    #[error("{message}")]
    Busy { message: String, retry_after_secs: u64 },
    /// The server's own failure (a key that does not open, a signature): 500, logged, generic text.
    #[error("{0}")]
    Internal(String),
    /// The certificate is not issued yet: its request waits for approval (Retrieve: 202
    /// `{"Stage", "Status"}`, which vcert and cert-manager read as still in progress).
    #[error("Certificate {dn} being processed, Status: {status}, Stage: {stage}.")]
    Pending { dn: String, stage: i64, status: String },
    /// Its request was rejected (Retrieve: 500 `{"Stage", "Status"}`, the product's failed shape) until a Reset or Retry.
    #[error("Certificate {dn} has encountered an error while processing, Status: {status}, Stage: {stage}.")]
    Failed { dn: String, stage: i64, status: String },
}

impl From<PkiError> for CertError {
    fn from(e: PkiError) -> Self {
        match e {
            PkiError::Invalid(m) => CertError::Invalid(m),
            PkiError::Internal(m) => CertError::Internal(m),
        }
    }
}

impl From<crate::keygen::KeyGenError> for CertError {
    fn from(e: crate::keygen::KeyGenError) -> Self {
        match e {
            crate::keygen::KeyGenError::Busy { message, retry_after_secs } => CertError::Busy { message, retry_after_secs },
            crate::keygen::KeyGenError::Pki(e) => e.into(),
        }
    }
}

type Result<T, E = CertError> = std::result::Result<T, E>;

pub use strongroom_core::cert::enroll::{DEFAULT_VALIDITY_DAYS, parse_end_date};

/// The certificate authority every front end calls: the product's `Certificates/*` (through
/// [`request`], [`renew`] and the workflow calls, which check the API caller first), the console
/// and the admin CLI (an approver's [`Authority::approve`] and [`Authority::settle`]). It holds
/// what an issuance needs: the store, the clock, randomness, the key ring, the public URL (CRL
/// distribution points) and the key generator. `App::authority` and the administrative
/// `Admin::authority` (with the configured URL) each give one.
#[derive(Clone, Copy)]
pub struct Authority<'a> {
    pub store: &'a dyn Store,
    pub clock: &'a dyn Clock,
    pub rng: &'a std::sync::Arc<dyn Random>,
    pub keyring: &'a KeyRing,
    pub public_url: &'a str,
    /// Where central keys are made within bounds (the API's callers); `None`: without (an
    /// operator's own act: the CLI on the store, the console's approvals).
    pub keygen: Option<&'a crate::keygen::KeyGenerator>,
}

impl std::fmt::Debug for Authority<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authority").field("public_url", &self.public_url).finish_non_exhaustive()
    }
}

impl Authority<'_> {
    fn now(&self) -> strongroom_core::time::UnixTime {
        self.clock.now()
    }
}

impl App {
    /// The certificate authority, for the API's callers.
    pub fn authority(&self) -> Authority<'_> {
        Authority {
            store: &*self.store,
            clock: &*self.clock,
            rng: &self.rng,
            keyring: &self.keyring,
            public_url: &self.public_url,
            keygen: Some(&self.keygen),
        }
    }
}

/// Who acts in an issuance: an API caller, or an approver (the console's, the CLI's).
pub struct Actor<'a> {
    /// Their rights re-checked in the write (`None`: the CLI on the store, or a Master Admin's
    /// console act, checked before).
    pub writer: Option<Writer>,
    /// The newest data key of each named key, as they were read.
    pub current_keys: Vec<(String, i64)>,
    /// How the log names them.
    pub name: String,
    /// An event of theirs of a kind.
    pub event: &'a (dyn Fn(EventKind) -> Event + Send + Sync),
}

impl std::fmt::Debug for Actor<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Actor").field("name", &self.name).finish_non_exhaustive()
    }
}

impl Actor<'_> {
    fn event(&self, kind: EventKind, id: Option<VaultId>) -> Event {
        let mut e = (self.event)(kind);
        if let Some(id) = id {
            e.object = id.to_string();
        }
        e
    }
}
