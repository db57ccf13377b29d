//! Operations behind `strongroom admin`: users, API integrations, grants and
//! events. They work directly on the store, so they work while the server
//! runs (SQLite in WAL mode takes a second writer; PostgreSQL anyway).

pub mod certs;
pub mod groups;
pub mod impact;
pub mod machines;
pub mod migrate;
pub mod oauth;
pub mod tree;

use std::sync::Arc;

use strongroom_core::event::{ChainError, Event, EventKind, StoredEvent};
use strongroom_core::grant::GrantId;
use strongroom_core::identity::{Group, GroupId, User, UserId, valid_user_name};
use strongroom_core::integration::{AllowedUsers, GrantTypes, Integration, TokenOverrides, TokenSettings, valid_client_id};
use strongroom_core::password;
use strongroom_core::random::Random;
use strongroom_core::scope::Scope;
use strongroom_core::secret::Secret;
use strongroom_core::time::{Clock, UnixTime};
use strongroom_store::{Deletion, EventFilter, FolderDeletion, GrantSummary, Holder, RightsChange, RightsOutcome, Store, StoreError};

use strongroom_core::integration::check_tokens;
use strongroom_core::vault::{FolderPath, Permissions, Rights};
use strongroom_keyring::{KeyRing, KeyRingError, Moved, settings};

#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("{0}")]
    Invalid(String),
    #[error("{0} not found")]
    NotFound(String),
    #[error("{0} already exists")]
    Exists(String),
    /// The user the handle acts for ([`Admin::on_behalf_of`]) may no longer do this.
    #[error("{0}")]
    Forbidden(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Hashing a new password failed (not the store's failure, nor the input's).
    #[error("password hashing failed: {0}")]
    Hashing(String),
    #[error("the event log is broken: {0}")]
    Chain(#[from] ChainError),
    #[error(transparent)]
    Keys(#[from] KeyRingError),
    /// The act would disable, delete or demote the very user it acts for
    /// ([`Admin::on_behalf_of`]): refused, so that nobody locks themselves out.
    #[error("{0}")]
    OwnAccount(String),
}

/// The administrator's handle on the store.
#[derive(Debug, Clone)]
pub struct Admin {
    pub store: Arc<dyn Store>,
    pub clock: Arc<dyn Clock>,
    pub rng: Arc<dyn Random>,
    pub keyring: KeyRing,
    /// Whom every event this handle writes names, and from where.
    pub actor: Actor,
    /// The user the API or console acts for: a change of permissions is
    /// re-checked against what they hold now, in the write's own
    /// transaction. `None` (the CLI, which has the store): no check.
    pub on_behalf_of: Option<UserId>,
}

/// Who performs an administrative act: the CLI on the store
/// ([`Actor::cli`]), or a caller of the API (their identity, address and
/// request id), so that one implementation of each act serves both and its
/// event names whoever did it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    pub identity: String,
    pub source: String,
    pub request_id: String,
}

impl Actor {
    /// `strongroom admin` on the store: identity `admin`, source `cli`.
    pub fn cli() -> Actor {
        Actor { identity: "admin".into(), source: "cli".into(), request_id: String::new() }
    }
}

impl Default for Actor {
    fn default() -> Self {
        Actor::cli()
    }
}

/// How many times a change of an integration that lost a race with another
/// administrator's is read and applied again before it gives up (busy).
pub const CHANGE_ATTEMPTS: usize = 32;

/// Whether a change function altered what it was given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Changed {
    Yes,
    /// Nothing to write (no event either).
    No,
}

/// What `admin integrations create` and `update` set. `None` leaves a field
/// as it is (update) or at its default (create).
#[derive(Debug, Default, Clone)]
pub struct IntegrationSpec {
    pub name: Option<String>,
    pub scope: Option<String>,
    /// User names; `Some(vec![])` allows nobody.
    pub allow_users: Option<Vec<String>>,
    pub allow_all_users: bool,
    /// Group names whose members are allowed too; `Some(vec![])` allows no group.
    pub allow_groups: Option<Vec<String>>,
    pub device: Option<bool>,
    pub password: Option<bool>,
    pub disabled: Option<bool>,
    pub overrides: TokenOverrides,
}

impl Admin {
    fn event(&self, kind: EventKind) -> Event {
        let a = &self.actor;
        Event::new(kind, self.clock.now()).identity(&a.identity).origin(&a.source, &a.request_id)
    }

    /// This handle, its events naming `actor` (an API caller) instead.
    pub fn acting_as(&self, actor: Actor) -> Admin {
        Admin { actor, ..self.clone() }
    }

    /// This handle, its changes of permissions made for user `user` (a
    /// delegated caller): each re-checks in its own transaction that they
    /// are still enabled and a Master Admin or hold ManagePermissions on
    /// the folder or above it.
    pub fn on_behalf_of(&self, user: UserId) -> Admin {
        Admin { on_behalf_of: Some(user), ..self.clone() }
    }

    pub async fn create_user(&self, name: &str, password: &Secret, master_admin: bool) -> Result<User, AdminError> {
        if !valid_user_name(name) {
            return Err(AdminError::Invalid("user names are 1-64 letters, digits or .-_@".into()));
        }
        check_password(password)?;
        let user = User {
            id: UserId::generate(&*self.rng),
            name: name.to_owned(),
            disabled: false,
            master_admin,
            created_at: self.clock.now(),
            signed_in_at: None,
        };
        let hash = hash(password, self.rng.clone()).await?;
        let event = self.event(EventKind::UserCreated).object(name);
        match self.store.create_user(user.clone(), hash, event).await {
            Ok(()) => Ok(user),
            Err(StoreError::Conflict) => Err(AdminError::Exists(format!("user {name}"))),
            Err(e) => Err(e.into()),
        }
    }

    pub async fn list_users(&self) -> Result<Vec<User>, AdminError> {
        Ok(self.store.list_users().await?)
    }

    /// Disables or enables a user. Disabling revokes every grant the user
    /// holds, for good: enabling them again revives none. The grants revoked.
    pub async fn set_user_disabled(&self, name: &str, disabled: bool) -> Result<u64, AdminError> {
        if disabled {
            self.not_yourself(name, "disable").await?;
        }
        let kind = if disabled { EventKind::UserDisabled } else { EventKind::UserEnabled };
        let ended = self.store.set_user_disabled(name.to_owned(), disabled, self.event(kind).object(name)).await?;
        ended.ok_or_else(|| AdminError::NotFound(format!("user {name}")))
    }

    /// Makes user `name` a Master Admin (`on`) or not: every right everywhere
    /// and the console's administration, from their next request. Whether
    /// anything changed (nothing is written, no event, when not).
    pub async fn set_master_admin(&self, name: &str, on: bool) -> Result<bool, AdminError> {
        if !on {
            self.not_yourself(name, "take the Master Admin role from").await?;
        }
        let event = self.event(EventKind::UserMasterAdminChanged).object(name);
        let changed = self.store.set_user_master_admin(name.to_owned(), on, event).await?;
        changed.ok_or_else(|| AdminError::NotFound(format!("user {name}")))
    }

    /// Refuses (`OwnAccount`) to `what` user `name` when they are the user
    /// this handle acts for: an administrator may not disable, delete or
    /// demote themselves. The CLI, on the store, acts for nobody.
    async fn not_yourself(&self, name: &str, what: &str) -> Result<(), AdminError> {
        let Some(me) = &self.on_behalf_of else { return Ok(()) };
        match self.store.user_by_name(name.to_lowercase()).await? {
            Some((u, _)) if &u.id == me => Err(own_account(what, &u.name)),
            _ => Ok(()),
        }
    }

    /// Sets a user's password. Unless `keep_grants`, every grant the user
    /// holds is revoked with it: a reset after a compromise leaves the
    /// attacker nothing. The grants revoked.
    pub async fn set_password(&self, name: &str, password: &Secret, keep_grants: bool) -> Result<u64, AdminError> {
        check_password(password)?;
        let hash = hash(password, self.rng.clone()).await?;
        let event = self.event(EventKind::UserPasswordChanged).object(name);
        let ended = self.store.set_user_password(name.to_owned(), hash, !keep_grants, event).await?;
        ended.ok_or_else(|| AdminError::NotFound(format!("user {name}")))
    }

    /// Ends every console session of user `name`, on every replica.
    pub async fn end_console_sessions(&self, name: &str) -> Result<(), AdminError> {
        let not_found = || AdminError::NotFound(format!("user {name}"));
        let user = self.store.user_by_name(name.to_lowercase()).await?.ok_or_else(not_found)?.0;
        let event = self.event(EventKind::ConsoleSessionsEnded).object(name).detail("ended by an administrator");
        if self.store.end_console_sessions(user.id, event).await? { Ok(()) } else { Err(not_found()) }
    }

    /// Revokes every grant user `name` holds. The grants revoked.
    pub async fn revoke_user_grants(&self, name: &str) -> Result<u64, AdminError> {
        let event = self.event(EventKind::UserGrantsRevoked).object(name).detail("revoked by an administrator");
        let ended = self.store.revoke_user_grants(name.to_owned(), event).await?;
        ended.ok_or_else(|| AdminError::NotFound(format!("user {name}")))
    }

    /// Guessing locks in force now: (user name, lower-cased; until).
    pub async fn locks(&self) -> Result<Vec<(String, UnixTime)>, AdminError> {
        Ok(self.store.locks(self.clock.now()).await?)
    }

    /// Clears every guessing lock and count against user `name`. The
    /// counters cleared (0 when nothing was locked or counted).
    pub async fn unlock(&self, name: &str) -> Result<u64, AdminError> {
        let key = name.to_lowercase();
        if self.store.user_by_name(key.clone()).await?.is_none() {
            return Err(AdminError::NotFound(format!("user {name}")));
        }
        Ok(self.store.unlock(key, self.event(EventKind::UserUnlocked).object(name)).await?)
    }

    async fn allowed(&self, spec: &IntegrationSpec) -> Result<Option<AllowedUsers>, AdminError> {
        if spec.allow_all_users {
            return Ok(Some(AllowedUsers::Everyone));
        }
        let Some(names) = &spec.allow_users else { return Ok(None) };
        let mut ids = Vec::new();
        for n in names {
            let (u, _) = self.store.user_by_name(n.clone()).await?.ok_or_else(|| AdminError::NotFound(format!("user {n}")))?;
            ids.push(u.id);
        }
        Ok(Some(AllowedUsers::Only(ids)))
    }

    async fn allowed_groups(&self, spec: &IntegrationSpec) -> Result<Option<Vec<GroupId>>, AdminError> {
        let Some(names) = &spec.allow_groups else { return Ok(None) };
        let mut ids = Vec::new();
        for n in names {
            ids.push(self.group(n).await?.id);
        }
        Ok(Some(ids))
    }

    pub async fn create_integration(&self, client_id: &str, spec: IntegrationSpec) -> Result<Integration, AdminError> {
        if !valid_client_id(client_id) {
            return Err(AdminError::Invalid("client ids are 1-128 printable characters without spaces".into()));
        }
        let scope = spec.scope.as_deref().ok_or_else(|| AdminError::Invalid("--scope is required".into()))?;
        let integration = Integration {
            client_id: client_id.to_owned(),
            name: spec.name.clone().unwrap_or_else(|| client_id.to_owned()),
            max_scope: parse_scope(scope)?,
            allowed_users: self.allowed(&spec).await?.unwrap_or(AllowedUsers::Only(Vec::new())),
            allowed_groups: self.allowed_groups(&spec).await?.unwrap_or_default(),
            grant_types: GrantTypes {
                device: spec.device.unwrap_or(GrantTypes::default().device),
                password: spec.password.unwrap_or(GrantTypes::default().password),
            },
            overrides: spec.overrides,
            disabled: spec.disabled.unwrap_or(false),
            version: 0,
        };
        check_overrides(&integration.overrides)?;
        match self.store.create_integration(integration.clone(), self.event(EventKind::IntegrationCreated).client_id(client_id)).await {
            Ok(()) => Ok(integration),
            Err(StoreError::Conflict) => Err(AdminError::Exists(format!("integration {client_id}"))),
            Err(e) => Err(e.into()),
        }
    }

    /// Changes what `spec` names of integration `client_id` (the rest stays
    /// as it is). One conditional write: if another administrator changed
    /// the integration since it was read, it is read again and `spec`
    /// applied to what they wrote, so neither change is lost.
    pub async fn update_integration(&self, client_id: &str, spec: IntegrationSpec) -> Result<Integration, AdminError> {
        let allowed = self.allowed(&spec).await?;
        let groups = self.allowed_groups(&spec).await?;
        let scope = spec.scope.as_deref().map(parse_scope).transpose()?;
        let event = self.event(EventKind::IntegrationUpdated).client_id(client_id);
        self.change_integration(client_id, event, |i| {
            if let Some(n) = &spec.name {
                i.name = n.clone();
            }
            if let Some(s) = &scope {
                i.max_scope = s.clone();
            }
            if let Some(a) = &allowed {
                i.allowed_users = a.clone();
            }
            if let Some(g) = &groups {
                i.allowed_groups = g.clone();
            }
            if let Some(d) = spec.device {
                i.grant_types.device = d;
            }
            if let Some(p) = spec.password {
                i.grant_types.password = p;
            }
            if let Some(d) = spec.disabled {
                i.disabled = d;
            }
            let o = spec.overrides;
            i.overrides = TokenOverrides {
                access_validity: o.access_validity.or(i.overrides.access_validity),
                grant_validity: o.grant_validity.or(i.overrides.grant_validity),
                refreshable: o.refreshable.or(i.overrides.refreshable),
                device_code_validity: o.device_code_validity.or(i.overrides.device_code_validity),
                poll_interval: o.poll_interval.or(i.overrides.poll_interval),
                retry_window: o.retry_window.or(i.overrides.retry_window),
            };
            check_overrides(&i.overrides)?;
            Ok(Changed::Yes)
        })
        .await
    }

    /// Reads integration `client_id`, lets `change` alter it, and writes it
    /// only if it is still at the version read (`event` with it); a lost
    /// race reads again and applies `change` again, at most
    /// [`CHANGE_ATTEMPTS`] times. `Changed::No` writes nothing. The
    /// integration as written.
    pub(crate) async fn change_integration<F>(&self, client_id: &str, event: Event, mut change: F) -> Result<Integration, AdminError>
    where
        F: FnMut(&mut Integration) -> Result<Changed, AdminError>,
    {
        let not_found = || AdminError::NotFound(format!("integration {client_id}"));
        for _ in 0..CHANGE_ATTEMPTS {
            let mut i = self.store.integration(client_id.to_owned()).await?.ok_or_else(not_found)?;
            if change(&mut i)? == Changed::No {
                return Ok(i);
            }
            if self.store.update_integration(i.clone(), event.clone()).await? {
                i.version += 1;
                return Ok(i);
            }
        }
        Err(AdminError::Store(StoreError::new(
            strongroom_store::ErrorKind::Busy,
            format!("integration {client_id} changed under every one of {CHANGE_ATTEMPTS} attempts"),
        )))
    }

    /// Deletes a user: every grant of theirs ends (each with its
    /// `grant.revoked` event), device codes they approved and nobody
    /// exchanged are dropped, their rights and places on allow-lists go, in
    /// one transaction with the `user.deleted` event.
    pub async fn delete_user(&self, name: &str) -> Result<Deletion, AdminError> {
        self.not_yourself(name, "delete").await?;
        let event = self.event(EventKind::UserDeleted).object(name);
        self.store.delete_user(name.to_owned(), event).await?.ok_or_else(|| AdminError::NotFound(format!("user {name}")))
    }

    /// Deletes an API integration: its grants end and its device codes are
    /// dropped, in one transaction with the `integration.deleted` event.
    pub async fn delete_integration(&self, client_id: &str) -> Result<Deletion, AdminError> {
        let event = self.event(EventKind::IntegrationDeleted).client_id(client_id);
        self.store
            .delete_integration(client_id.to_owned(), event)
            .await?
            .ok_or_else(|| AdminError::NotFound(format!("integration {client_id}")))
    }

    pub async fn list_integrations(&self) -> Result<Vec<Integration>, AdminError> {
        Ok(self.store.list_integrations().await?)
    }

    /// Group names by id, for display.
    pub async fn group_names(&self) -> Result<std::collections::HashMap<String, String>, AdminError> {
        Ok(self.store.list_groups().await?.into_iter().map(|(g, _)| (g.id.as_str().to_owned(), g.name)).collect())
    }

    /// User names of an integration's allowed users, for display.
    pub async fn user_names(&self) -> Result<std::collections::HashMap<String, String>, AdminError> {
        Ok(self.store.list_users().await?.into_iter().map(|u| (u.id.as_str().to_owned(), u.name)).collect())
    }

    pub async fn list_grants(&self, include_ended: bool) -> Result<Vec<GrantSummary>, AdminError> {
        Ok(self.store.list_grants(include_ended, self.clock.now()).await?)
    }

    pub async fn revoke_grant(&self, id: &str) -> Result<(), AdminError> {
        let event = self.event(EventKind::GrantRevoked).object(id).detail("revoked by an administrator");
        if self.store.revoke_grant(GrantId::from_stored(id.to_owned()), self.clock.now(), event).await? {
            Ok(())
        } else {
            Err(AdminError::NotFound(format!("live grant {id}")))
        }
    }

    pub async fn events(&self, filter: EventFilter) -> Result<Vec<StoredEvent>, AdminError> {
        Ok(self.store.events(filter).await?)
    }

    /// Walks the stored event log and checks every hash link, from the
    /// checkpoint the last archive left (the log's start before any).
    pub async fn verify_events(&self) -> Result<Verified, AdminError> {
        verify_store_events(&*self.store).await
    }
}

/// What `events verify` found: the events checked, after the checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verified {
    pub events: i64,
    /// The last archived event's number and hash, if an archive ran.
    pub checkpoint: Option<(i64, [u8; 32])>,
}

/// Walks a store's event log from its checkpoint and checks every hash link
/// against the stored head (no key needed).
pub async fn verify_store_events(store: &dyn Store) -> Result<Verified, AdminError> {
    // The head first: events appended while the pages are read lie beyond
    // it and are not checked; the pages stop at it.
    let head = store.event_head().await?;
    let checkpoint = store.event_checkpoint().await?;
    let mut check = checkpoint.map_or_else(strongroom_core::event::ChainCheck::new, strongroom_core::event::ChainCheck::after);
    let mut after = checkpoint.map_or(0, |c| c.0);
    while after < head.0 {
        let page = store.events(EventFilter { after_seq: Some(after), limit: 10_000, ..Default::default() }).await?;
        let Some(last) = page.last() else { break };
        after = last.seq;
        for e in page.iter().take_while(|e| e.seq <= head.0) {
            check.push(e)?;
        }
    }
    Ok(Verified { events: check.finish(head)?, checkpoint })
}

impl Admin {
    /// Creates a folder of the owner tree, and any missing folders above it.
    pub async fn create_folder(&self, path: &str) -> Result<FolderPath, AdminError> {
        let f = FolderPath::parse(path).map_err(|e| AdminError::Invalid(e.to_string()))?;
        f.check_new().map_err(|e| AdminError::Invalid(e.to_string()))?;
        let event = self.event(EventKind::FolderCreated).object(f.as_str());
        if self.store.create_folders(strongroom_core::tree::lineage_with_guids(&f, &*self.rng), event).await? {
            Ok(f)
        } else {
            Err(AdminError::Exists(format!("folder {f}")))
        }
    }

    /// Deletes a folder: an empty one, or with `recursive` everything below
    /// it (entries left without an owner are deleted).
    pub async fn delete_folder(&self, path: &str, recursive: bool) -> Result<FolderDeleted, AdminError> {
        let f = FolderPath::parse(path).map_err(|e| AdminError::Invalid(e.to_string()))?;
        let event = self.event(EventKind::FolderDeleted).object(f.as_str());
        match self.store.delete_folder(f.clone(), recursive, event).await? {
            FolderDeletion::NotFound => Err(AdminError::NotFound(format!("folder {f}"))),
            FolderDeletion::NotEmpty { subfolders, entries } => Err(AdminError::Invalid(format!(
                "folder {f} is not empty ({subfolders} {} below it, {entries} {} owned by it or below it): delete or move those \
                 first, or give --recursive to delete the folders below it too and every entry left without an owner",
                if subfolders == 1 { "folder" } else { "folders" },
                if entries == 1 { "entry" } else { "entries" }
            ))),
            FolderDeletion::Deleted { folders, owners_removed, entries_orphaned, rights_removed } => {
                Ok(FolderDeleted { folder: f, folders, owners_removed, entries_orphaned, rights_removed })
            }
        }
    }

    pub async fn folders(&self) -> Result<Vec<FolderPath>, AdminError> {
        Ok(self.store.folders().await?)
    }

    async fn folder_and_user(&self, path: &str, user: &str) -> Result<(FolderPath, User), AdminError> {
        let f = FolderPath::parse(path).map_err(|e| AdminError::Invalid(e.to_string()))?;
        if !self.store.folder_exists(f.key().to_owned()).await? {
            return Err(AdminError::NotFound(format!("folder {f}")));
        }
        let (u, _) = match self.store.user_by_name(user.to_owned()).await? {
            Some(found) => found,
            // A machine identity gets its row when first named (to grant it rights before its first grant).
            None if self.machine_identity(user).await? => {
                self.store.user_by_name(user.to_owned()).await?.ok_or_else(|| AdminError::NotFound(format!("user {user}")))?
            }
            None => return Err(AdminError::NotFound(format!("user {user}"))),
        };
        Ok((f, u))
    }

    /// Sets a user's rights on a folder (replacing what was granted there).
    pub async fn set_rights(&self, path: &str, user: &str, rights: Rights) -> Result<(), AdminError> {
        let (f, u) = self.folder_and_user(path, user).await?;
        let event = self.event(EventKind::RightsChanged).object(f.as_str()).detail(format!("user={} rights={rights}", u.name));
        self.set_entry(f, Holder::User(u.id), rights, event).await
    }

    /// Sets a group's rights on a folder (replacing what was granted there).
    pub async fn set_group_rights(&self, path: &str, group: &str, rights: Rights) -> Result<(), AdminError> {
        let f = self.folder(path).await?;
        let g = self.group(group).await?;
        let event = self.event(EventKind::RightsChanged).object(f.as_str()).detail(format!("group={} rights={rights}", g.name));
        self.set_entry(f, Holder::Group(g.id), rights, event).await
    }

    /// Sets `holder`'s entry on `f`, re-checked for [`Admin::on_behalf_of`]'s user.
    async fn set_entry(&self, f: FolderPath, holder: Holder, rights: Rights, event: Event) -> Result<(), AdminError> {
        match self.store.change_rights(f.clone(), holder, RightsChange::Set(rights), self.on_behalf_of.clone(), event).await? {
            RightsOutcome::Changed | RightsOutcome::Unchanged => Ok(()),
            RightsOutcome::Denied => Err(AdminError::Forbidden(format!("managing permissions on {f} needs ManagePermissions there"))),
            RightsOutcome::NoFolder => Err(AdminError::NotFound(format!("folder {f}"))),
        }
    }

    /// What group `group` holds on `path`, inherited rights included, and where each comes from.
    pub async fn group_rights_on(&self, path: &str, group: &str) -> Result<RightsOn, AdminError> {
        let f = self.folder(path).await?;
        let g = self.group(group).await?;
        let grants = self.store.group_rights_of(g.id).await?;
        Ok(rights_on(f, g.name, false, grants))
    }

    async fn folder(&self, path: &str) -> Result<FolderPath, AdminError> {
        let f = FolderPath::parse(path).map_err(|e| AdminError::Invalid(e.to_string()))?;
        if !self.store.folder_exists(f.key().to_owned()).await? {
            return Err(AdminError::NotFound(format!("folder {f}")));
        }
        Ok(f)
    }

    /// What `user` may do on `path`, inherited rights included.
    pub async fn effective_rights(&self, path: &str, user: &str) -> Result<(Rights, bool), AdminError> {
        let shown = self.rights_on(path, user).await?;
        Ok((shown.effective, shown.master_admin))
    }

    /// What `user` may do on `path`, and where each right comes from: the
    /// folder itself or a folder above it.
    pub async fn rights_on(&self, path: &str, user: &str) -> Result<RightsOn, AdminError> {
        let (f, u) = self.folder_and_user(path, user).await?;
        let grants = self.store.rights_of(u.id).await?;
        Ok(rights_on(f, u.name, u.master_admin, grants))
    }

    pub async fn all_rights(&self) -> Result<Vec<(FolderPath, String, Rights, bool)>, AdminError> {
        Ok(self.store.all_rights().await?)
    }

    /// Data keys: (id, named key, created).
    pub async fn data_keys(&self) -> Result<Vec<(i64, String, strongroom_core::time::UnixTime)>, AdminError> {
        Ok(self.store.data_keys().await?.into_iter().map(|k| (k.id, k.key_name, k.created_at)).collect())
    }

    /// Every named key, configured or still named by data keys.
    pub async fn named_keys(&self) -> Result<Vec<NamedKey>, AdminError> {
        let data = self.store.data_keys().await?;
        let in_use = self.store.key_names_in_use().await?;
        let mut out: Vec<NamedKey> = self
            .keyring
            .configured()
            .into_iter()
            .map(|(name, location)| NamedKey {
                default: name == self.keyring.default_name(),
                name,
                location: Some(location),
                ..Default::default()
            })
            .collect();
        for d in data {
            if !out.iter().any(|k| settings::same_key(&k.name, &d.key_name)) {
                out.push(NamedKey { name: d.key_name.clone(), ..Default::default() });
            }
            if let Some(k) = out.iter_mut().find(|k| settings::same_key(&k.name, &d.key_name)) {
                k.data_keys.push(d.id);
            }
        }
        for (name, entries) in in_use {
            match out.iter_mut().find(|k| settings::same_key(&k.name, &name)) {
                Some(k) => k.entries += entries,
                None => out.push(NamedKey { name, entries, ..Default::default() }),
            }
        }
        Ok(out)
    }

    /// Makes a named key where its driver keeps keys (a PKCS#11 token).
    pub async fn create_key(&self, name: &str) -> Result<String, AdminError> {
        Ok(self.keyring.create_key(name).await?)
    }

    /// A new data key for named key `name`, and everything under `name`
    /// re-sealed with it; `progress` gets the running total.
    pub async fn rotate_key(&self, name: &str, progress: &mut (dyn FnMut(u64) + Send)) -> Result<(i64, u64), AdminError> {
        Ok(self.keyring.rotate(&*self.store, &*self.rng, self.clock.now(), &self.actor.identity, name, progress).await?)
    }

    /// Every entry under named key `from` moved under `to` (re-sealed with
    /// `to`'s current data key); `progress` gets the running count.
    pub async fn move_key(&self, from: &str, to: &str, progress: &mut (dyn FnMut(u64) + Send)) -> Result<Moved, AdminError> {
        Ok(self.keyring.move_entries(&*self.store, &*self.rng, self.clock.now(), "admin", from, to, progress).await?)
    }

    /// `admin keys rotate [NAME]`: named key `name`, or every named key that
    /// has data keys (the default key when none has yet), rotated; per key
    /// its name, its new current data key and the items re-sealed.
    /// `progress` gets a key's name and its running count.
    pub async fn rotate_keys(
        &self,
        name: Option<&str>,
        progress: &mut (dyn FnMut(&str, u64) + Send),
    ) -> Result<Vec<(String, i64, u64)>, AdminError> {
        let mut names = match name {
            Some(n) => vec![n.to_owned()],
            None => self.keyring.names_with_data_keys(&*self.store).await?,
        };
        if names.is_empty() {
            names.push(self.keyring.default_name().to_owned());
        }
        let mut rotated = Vec::with_capacity(names.len());
        for name in names {
            let (id, n) = self.rotate_key(&name, &mut |n| progress(&name, n)).await?;
            rotated.push((name, id, n));
        }
        Ok(rotated)
    }
}

/// Rights on `f` from `grants` (folder key, rights; a key may repeat: a
/// user's own and their groups' add up), and where each comes from.
fn rights_on(f: FolderPath, who: String, master_admin: bool, grants: Vec<(String, Rights)>) -> RightsOn {
    let sources = f
        .lineage()
        .into_iter()
        .map(|above| {
            let r = grants.iter().filter(|(k, _)| k == above.key()).fold(Rights::NONE, |a, (_, r)| a.union(*r));
            (above, r)
        })
        .filter(|(_, r)| *r != Rights::NONE)
        .collect();
    let perms = Permissions { master_admin, grants };
    RightsOn { effective: perms.effective(&f), folder: f, user: who, master_admin, sources }
}

/// `LDAP+dir:engineering`, `AD+corp:Domain Users`: a directory's prefix and a group's name.
fn directory_group_name(name: &str) -> bool {
    let Some((prefix, group)) = name.split_once(':') else { return false };
    let Some((kind, provider)) = prefix.split_once('+') else { return false };
    ["LDAP", "AD"].iter().any(|k| k.eq_ignore_ascii_case(kind))
        && !provider.is_empty()
        && provider.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && (1..=256).contains(&group.len())
        && !group.chars().any(char::is_control)
}

/// A group as `admin groups list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupListing {
    pub group: Group,
    pub members: u64,
}

impl Admin {
    /// The group named `name` (any case).
    pub async fn group(&self, name: &str) -> Result<Group, AdminError> {
        self.store.group_by_name(name.to_owned()).await?.ok_or_else(|| AdminError::NotFound(format!("group {name}")))
    }

    /// Creates a local group. Its name is in the same namespace as users'
    /// (`local:NAME` names one identity), so a user's name is refused. A
    /// directory group's name (`LDAP+dir:engineering`) makes the group
    /// before any of its members signs in, so that it can be given rights;
    /// sign-ins find it by that name.
    pub async fn create_group(&self, name: &str) -> Result<Group, AdminError> {
        if !valid_user_name(name) && !directory_group_name(name) {
            return Err(AdminError::Invalid(
                "group names are 1-64 letters, digits or .-_@, or a directory group's PREFIX:NAME (LDAP+dir:engineering)".into(),
            ));
        }
        if self.store.user_by_name(name.to_lowercase()).await?.is_some() {
            return Err(AdminError::Exists(format!("user {name} (users and groups share names)")));
        }
        let group = Group { id: GroupId::generate(&*self.rng), name: name.to_owned(), created_at: self.clock.now() };
        let event = self.event(EventKind::GroupCreated).object(name).detail(group.identity());
        match self.store.create_group(group.clone(), event).await {
            Ok(()) => Ok(group),
            Err(StoreError::Conflict) => Err(AdminError::Exists(format!("group {name}"))),
            Err(e) => Err(e.into()),
        }
    }

    pub async fn list_groups(&self) -> Result<Vec<GroupListing>, AdminError> {
        Ok(self.store.list_groups().await?.into_iter().map(|(group, members)| GroupListing { group, members }).collect())
    }

    /// Deletes a group: its members lose what it held at once. The folder rights it held.
    pub async fn delete_group(&self, name: &str) -> Result<u64, AdminError> {
        let event = self.event(EventKind::GroupDeleted).object(name);
        self.store.delete_group(name.to_owned(), event).await?.ok_or_else(|| AdminError::NotFound(format!("group {name}")))
    }

    pub async fn members(&self, group: &str) -> Result<Vec<User>, AdminError> {
        let g = self.group(group).await?;
        Ok(self.store.members_of(g.id).await?)
    }

    /// Adds user `user` to `group`: whether they were not a member before.
    pub async fn add_member(&self, group: &str, user: &str) -> Result<bool, AdminError> {
        let g = self.group(group).await?;
        let (u, _) = self.store.user_by_name(user.to_owned()).await?.ok_or_else(|| AdminError::NotFound(format!("user {user}")))?;
        let event = self.event(EventKind::GroupMemberAdded).object(g.name.as_str()).detail(format!("user={}", u.name));
        Ok(self.store.add_member(g.id, u.id, event).await?)
    }

    /// Removes user `user` from `group`: whether they were a member. The
    /// group's rights and places on integrations stop for them at their
    /// next request (every check reads memberships in its own statement).
    pub async fn remove_member(&self, group: &str, user: &str) -> Result<bool, AdminError> {
        let g = self.group(group).await?;
        let (u, _) = self.store.user_by_name(user.to_owned()).await?.ok_or_else(|| AdminError::NotFound(format!("user {user}")))?;
        let event = self.event(EventKind::GroupMemberRemoved).object(g.name.as_str()).detail(format!("user={}", u.name));
        Ok(self.store.remove_member(g.id, u.id, event).await?)
    }
}

/// What `admin folders delete` deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FolderDeleted {
    pub folder: FolderPath,
    /// The folder and the folders below it.
    pub folders: u64,
    pub owners_removed: u64,
    pub entries_orphaned: Vec<strongroom_core::vault::VaultId>,
    pub rights_removed: u64,
}

/// A user's rights on a folder as `admin rights show` shows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RightsOn {
    pub folder: FolderPath,
    pub user: String,
    /// Everything held there, inherited rights included (every right for a Master Admin).
    pub effective: Rights,
    pub master_admin: bool,
    /// Rights granted on the folder itself or a folder above it, top first.
    pub sources: Vec<(FolderPath, Rights)>,
}

/// A named key as `admin keys list` shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NamedKey {
    pub name: String,
    /// Where it lives; `None` if no longer configured (its data cannot be read).
    pub location: Option<String>,
    pub default: bool,
    /// Its data keys, oldest first; the last one seals new data.
    pub data_keys: Vec<i64>,
    /// How many entries are sealed under it (in use if any).
    pub entries: u64,
}

/// The refusal of an act on the acting user's own account: `what` (`disable`) and their name.
pub fn own_account(what: &str, name: &str) -> AdminError {
    AdminError::OwnAccount(format!(
        "You cannot {what} your own account ({name}): ask another Master Admin, or use strongroom admin on the server."
    ))
}

fn parse_scope(s: &str) -> Result<Scope, AdminError> {
    Scope::parse(s).map_err(|e| AdminError::Invalid(format!("scope {s:?}: {e}")))
}

fn check_password(p: &Secret) -> Result<(), AdminError> {
    match password::weakness(p.expose()) {
        Some(why) => Err(AdminError::Invalid(why)),
        None => Ok(()),
    }
}

fn check_overrides(o: &TokenOverrides) -> Result<(), AdminError> {
    check_tokens(&o.apply(TokenSettings::default())).map_err(|e| AdminError::Invalid(e.to_string()))
}

async fn hash(password: &Secret, rng: Arc<dyn Random>) -> Result<String, AdminError> {
    let password = password.clone();
    tokio::task::spawn_blocking(move || password::hash(&password, &*rng))
        .await
        .map_err(|_| AdminError::Hashing("the hashing task ended".into()))?
        .map_err(|e| AdminError::Hashing(e.to_string()))
}

// ------------------------------------------------------------------ the admin console's reads

/// Where a user's rights on a folder come from, as the console shows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RightsExplained {
    pub folder: FolderPath,
    pub user: String,
    pub master_admin: bool,
    /// Everything held there (every right for a Master Admin).
    pub effective: Rights,
    /// Each grant on the folder or a folder above it, top first: the
    /// folder, the group it was granted to (`None`: to the user), the rights.
    pub sources: Vec<(FolderPath, Option<String>, Rights)>,
}

impl Admin {
    /// What `user` holds on `path`, and from where: each folder it was
    /// granted on, to them or to which group of theirs. Reads only (a
    /// machine identity never named before is not found, not created).
    pub async fn explain_rights(&self, path: &str, user: &str) -> Result<RightsExplained, AdminError> {
        let f = self.folder(path).await?;
        let (u, _) = self.store.user_by_name(user.to_owned()).await?.ok_or_else(|| AdminError::NotFound(format!("user {user}")))?;
        let mut granted: Vec<(String, Option<String>, Rights)> = self
            .store
            .all_rights()
            .await?
            .into_iter()
            .filter(|(_, name, _, group)| !group && *name == u.name)
            .map(|(folder, _, r, _)| (folder.key().to_owned(), None, r))
            .collect();
        for g in self.store.groups_of(u.id.clone()).await? {
            for (key, r) in self.store.group_rights_of(g.id.clone()).await? {
                granted.push((key, Some(g.name.clone()), r));
            }
        }
        let mut sources = Vec::new();
        for above in f.lineage() {
            for (_, group, r) in granted.iter().filter(|(k, _, r)| k == above.key() && *r != Rights::NONE) {
                sources.push((above.clone(), group.clone(), *r));
            }
        }
        let perms = Permissions { master_admin: u.master_admin, grants: granted.into_iter().map(|(k, _, r)| (k, r)).collect() };
        Ok(RightsExplained { effective: perms.effective(&f), folder: f, user: u.name, master_admin: u.master_admin, sources })
    }
}
