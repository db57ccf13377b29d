//! What a destructive act would end, read from the store before it is
//! asked for: the admin console's confirmation pages say it in words
//! ("this will end 3 live grants of alice") and only then offer the act.
//! Reads only; the act itself decides again in its own transaction, so a
//! count may be out of date by the time it runs, never wrong about what
//! kind of thing goes.

use strongroom_core::identity::User;
use strongroom_core::integration::AllowedUsers;
use strongroom_core::vault::{FolderPath, VaultId};
use strongroom_store::{EntryDetails, GrantSummary, VaultFilter};

use super::{Admin, AdminError};

/// What disabling, deleting, demoting or resetting the password of a user reaches.
#[derive(Debug, Clone)]
pub struct UserImpact {
    pub user: User,
    /// Their live grants (disabling, deleting or a new password ends them).
    pub grants: Vec<GrantSummary>,
    /// Rights granted to them by name: (folder, rights), deleted with them.
    pub rights: u64,
    /// The groups they are a member of.
    pub groups: Vec<String>,
    /// Integrations that list them by name.
    pub integrations: Vec<String>,
}

/// What deleting a group reaches.
#[derive(Debug, Clone)]
pub struct GroupImpact {
    pub members: Vec<String>,
    /// The folders it holds rights on.
    pub folders: Vec<String>,
    /// Integrations that list it.
    pub integrations: Vec<String>,
}

/// What deleting a folder (recursively) reaches.
#[derive(Debug, Clone)]
pub struct FolderImpact {
    pub folder: FolderPath,
    /// The folders below it, which go with it.
    pub below: Vec<FolderPath>,
    /// Entries owned by the folder or one below it.
    pub entries: Vec<VaultId>,
    /// Those of `entries` that no folder outside would own any more: kept as orphans.
    pub orphaned: Vec<VaultId>,
    /// Rights granted on the folder or below it, which go with it.
    pub rights: u64,
}

impl Admin {
    /// What an act on user `name` reaches.
    pub async fn user_impact(&self, name: &str) -> Result<UserImpact, AdminError> {
        let (user, _) = self.store.user_by_name(name.to_lowercase()).await?.ok_or_else(|| AdminError::NotFound(format!("user {name}")))?;
        let grants = self.list_grants(false).await?.into_iter().filter(|g| g.grant.user_id == user.id).collect();
        let rights = self.store.rights_of(user.id.clone()).await?.len() as u64;
        let groups = self.store.groups_of(user.id.clone()).await?.into_iter().map(|g| g.name).collect();
        let integrations = self
            .list_integrations()
            .await?
            .into_iter()
            .filter(|i| matches!(&i.allowed_users, AllowedUsers::Only(ids) if ids.contains(&user.id)))
            .map(|i| i.client_id)
            .collect();
        Ok(UserImpact { user, grants, rights, groups, integrations })
    }

    /// What deleting group `name` reaches.
    pub async fn group_impact(&self, name: &str) -> Result<GroupImpact, AdminError> {
        let g = self.group(name).await?;
        let members = self.store.members_of(g.id.clone()).await?.into_iter().map(|u| u.name).collect();
        let folders = self
            .all_rights()
            .await?
            .into_iter()
            .filter(|(_, name, _, group)| *group && name.eq_ignore_ascii_case(&g.name))
            .map(|(f, ..)| f.as_str().to_owned())
            .collect();
        let integrations =
            self.list_integrations().await?.into_iter().filter(|i| i.allowed_groups.contains(&g.id)).map(|i| i.client_id).collect();
        Ok(GroupImpact { members, folders, integrations })
    }

    /// What deleting folder `path` with everything below it reaches.
    pub async fn folder_impact(&self, path: &str) -> Result<FolderImpact, AdminError> {
        let folder = FolderPath::parse(path).map_err(|e| AdminError::Invalid(e.to_string()))?;
        let all = self.folders().await?;
        let inside = |f: &FolderPath| f.key() == folder.key() || f.key().starts_with(&format!("{}\\", folder.key()));
        let Some(found) = all.iter().find(|f| f.key() == folder.key()).cloned() else {
            return Err(AdminError::NotFound(format!("folder {folder}")));
        };
        let subtree: Vec<FolderPath> = all.into_iter().filter(&inside).collect();
        let mut entries = Vec::new();
        for f in &subtree {
            let filter = VaultFilter { owner_key: Some(f.key().to_owned()), ..Default::default() };
            for id in self.store.vault_ids(filter).await? {
                if !entries.contains(&id) {
                    entries.push(id);
                }
            }
        }
        entries.sort_by_key(|id| id.0);
        let orphaned = self
            .store
            .owners_of(entries.clone())
            .await?
            .into_iter()
            .filter(|(_, owners)| owners.iter().all(&inside))
            .map(|(id, _)| id)
            .collect();
        let rights = self.all_rights().await?.iter().filter(|(f, ..)| inside(f)).count() as u64;
        let below = subtree.into_iter().filter(|f| f.key() != found.key()).collect();
        Ok(FolderImpact { folder: found, below, entries, orphaned, rights })
    }
}

impl Admin {
    /// Vault entries as an administrator sees them (never a value): those
    /// owned by folder `owner` (exactly; `None`: any), or only those left
    /// without an owner; at most `limit`, by VaultID, and how many matched.
    pub async fn vault_entries(&self, owner: Option<&str>, orphans: bool, limit: usize) -> Result<(Vec<EntryDetails>, usize), AdminError> {
        let owner_key = match owner {
            Some(p) => Some(FolderPath::parse(p).map_err(|e| AdminError::Invalid(e.to_string()))?.key().to_owned()),
            None => None,
        };
        let ids = self.store.vault_ids(VaultFilter { owner_key, orphans_only: orphans, ..Default::default() }).await?;
        let total = ids.len();
        let shown = self.store.entry_details(ids.into_iter().take(limit).collect()).await?;
        Ok((shown, total))
    }
}
