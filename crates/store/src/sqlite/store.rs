//! The store's four parts and the copier on SQLite: each method one job,
//! on the writer thread (in its batch's transaction) or on a reader thread
//! (in one read transaction), running the shared body of [`crate::ops`].

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::ops::certs;
use crate::ops::tree::{self, FolderObject, Holder, RightsChange};
use crate::{
    CaRecord, CertField, CertRecord, FieldValues, Found, Issuance, NewObject, ObjectContext, Parking, PendingChange, PendingRecord,
    RequestContext, Revocation,
};
use strongroom_core::event::{Event, StoredEvent};
use strongroom_core::grant::device::{DeviceAuthorization, DeviceContext, DeviceState, PollRecord};
use strongroom_core::grant::refresh::RefreshContext;
use strongroom_core::grant::{AccessContext, Grant, GrantId};
use strongroom_core::identity::{Group, GroupId, User, UserId};
use strongroom_core::integration::Integration;
use strongroom_core::machine::{JwtIssuer, Mapping};
use strongroom_core::throttle::{Admission, Rule, Slot};
use strongroom_core::time::UnixTime;
use strongroom_core::token::{Presented, TokenHash};
use strongroom_core::tree::ObjectGuid;
use strongroom_core::vault::{FolderPath, Rights, VaultId};

use super::{Lite, READERS, SqliteStore};
use crate::ops::{Conn, admin, at_once, auth, events, groups, machine, transfer as copier, vault};
use crate::transfer::{Counters, Row, Table, Transfer};
use crate::{
    AddOwner, AdminStore, AuthStore, Checked, DataKeyRecord, Deletion, EventFilter, EventStore, FolderDeletion, GrantSummary,
    IssuerRemoval, LoginContext, MachineGrant, MachineIssue, OwnerRemoval, PairChange, PoolStatus, PutAssociation, SealedItem, StoreFuture,
    StoreObserver, StoredAssociation, VaultContext, VaultEntry, VaultFilter, VaultStore, Writer,
};
use crate::{GroupStore, MemberChange, Team};

/// A job on the writer thread: `$body` over the connection `$c`.
macro_rules! on_writer {
    ($self:ident, |$c:ident| $body:expr) => {
        Box::pin($self.write(move |conn| {
            let $c = &Lite(conn);
            at_once($body)
        }))
    };
}

/// A job on a reader thread: `$body` over the connection `$c`.
macro_rules! on_reader {
    ($self:ident, |$c:ident| $body:expr) => {
        Box::pin($self.read(move |conn| {
            let $c = &Lite(conn);
            at_once($body)
        }))
    };
}

impl AuthStore for SqliteStore {
    crate::ops::methods::auth_methods!(on_reader, on_writer, on_writer, on_writer);

    fn advance_pair(&self, grant_id: GrantId, version: i64, change: PairChange, event: Event) -> StoreFuture<'_, bool> {
        on_writer!(self, |c| auth::advance_pair(c, &grant_id, version, &change, &event))
    }
    fn redeem_device(&self, code_hash: TokenHash, version: i64, grant: Grant, event: Event) -> StoreFuture<'_, bool> {
        on_writer!(self, |c| auth::redeem_device(c, code_hash, version, &grant, &event))
    }
    fn insert_machine_grant(&self, grant: MachineGrant, event: Event) -> StoreFuture<'_, MachineIssue> {
        on_writer!(self, |c| machine::insert_machine_grant(c, &grant, &event))
    }
}

impl VaultStore for SqliteStore {
    crate::ops::methods::vault_methods!(on_reader, on_writer, on_writer, on_writer);

    fn vault_context(&self, access: Presented, id: Option<VaultId>) -> StoreFuture<'_, Option<VaultContext>> {
        on_reader!(self, |c| vault::vault_context(c, access, id))
    }
    fn vault_lookup(&self, access: Presented, name: String, lookup: Option<[u8; 32]>) -> StoreFuture<'_, Option<(VaultContext, Found)>> {
        on_reader!(self, |c| vault::vault_lookup(c, access, &name, lookup.as_ref()))
    }
    fn put_association(&self, id: VaultId, a: StoredAssociation, by: Writer, event: Event) -> StoreFuture<'_, Checked<PutAssociation>> {
        on_writer!(self, |c| vault::put_association(c, id, &a, &by, &event))
    }
}

impl AdminStore for SqliteStore {
    crate::ops::methods::admin_methods!(on_reader, on_writer, on_writer, on_writer);
}

impl GroupStore for SqliteStore {
    crate::ops::groups::group_methods!(on_reader, on_writer, on_writer, on_writer);
}

impl crate::CertStore for SqliteStore {
    crate::ops::certs::cert_methods!(on_reader, on_writer);
}

impl crate::TreeStore for SqliteStore {
    crate::ops::tree::tree_methods!(on_reader, on_writer);
}

impl EventStore for SqliteStore {
    crate::ops::methods::event_methods!(on_reader, on_writer, on_writer, on_writer);

    fn describe(&self) -> String {
        self.inner.settings.clone()
    }
    /// A job on the writer: ready means writes can take the database's
    /// write lock (one held elsewhere makes the request path fail too).
    fn ready(&self) -> StoreFuture<'_, ()> {
        on_writer!(self, |c| async {
            let v = c.query_opt(&crate::sql::SCHEMA_VERSION, &[], |r| r.opt_int()).await?.flatten();
            crate::check_schema(v)
        })
    }
    fn observe(&self, observer: Arc<dyn StoreObserver>) {
        self.inner.observer.set(observer);
    }
    fn pool_status(&self) -> PoolStatus {
        // One writer connection and READERS reader connections, each doing one job at a time.
        let (r, w) = (self.inner.reads.load(Ordering::Relaxed), self.inner.writes.load(Ordering::Relaxed));
        let in_use = r.min(READERS) + w.min(1);
        PoolStatus { max: READERS + 1, in_use, waiting: r + w - in_use, calls: self.inner.observer.calls() }
    }
}

impl Transfer for SqliteStore {
    crate::ops::methods::transfer_methods!(on_reader, on_writer, on_writer, on_writer);
}
