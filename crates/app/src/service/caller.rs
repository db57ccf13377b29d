//! Who calls the product's API: the identity, grant, rights and client of a `/vedsdk` request and
//! the entry it names, all from its one context read. Every service of the API takes one; the
//! vault's own questions of it (`vault`) and the certificates' live with them.

use strongroom_core::event::{Event, EventKind};
use strongroom_core::grant::GrantId;
use strongroom_core::identity::UserId;
use strongroom_core::vault::{Permissions, VaultId};
use strongroom_store::{VaultContext, VaultEntry, Writer};

use super::Origin;
use crate::App;

/// Who is calling, what they may do, and the entry the request names: all
/// from one context read ([`strongroom_store::VaultStore::vault_context`]).
#[derive(Debug)]
pub struct Caller {
    pub user_id: UserId,
    pub grant_id: GrantId,
    pub perms: Permissions,
    pub client_id: String,
    pub origin: Origin,
    /// The newest data key's id of each named key, as the context read saw them.
    pub current_keys: Vec<(String, i64)>,
    /// The entry the request's VaultID names, if it exists.
    pub entry: Option<VaultEntry>,
}

impl Caller {
    pub fn new(ctx: VaultContext, origin: Origin) -> Caller {
        let g = ctx.access.grant;
        Caller {
            perms: Permissions { master_admin: ctx.access.master_admin, grants: ctx.rights },
            user_id: g.user_id,
            grant_id: g.id,
            client_id: g.client_id,
            origin,
            current_keys: ctx.current_keys,
            entry: ctx.entry,
        }
    }

    pub(crate) fn event(&self, app: &App, kind: EventKind, id: Option<VaultId>) -> Event {
        let mut e = app.event(kind, &self.origin).identity(self.user_id.identity()).client_id(self.client_id.as_str());
        if let Some(id) = id {
            e.object = id.to_string();
        }
        e
    }

    /// Who writes, for the rights check every vault write repeats.
    pub(crate) fn writer(&self) -> Writer {
        Writer { grant_id: self.grant_id.clone(), user_id: self.user_id.clone() }
    }
}
