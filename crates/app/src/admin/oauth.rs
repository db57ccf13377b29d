//! Rules (who may use an API integration: its allow-list of users and
//! groups) and grant revocation by integration, for `oauth/*`.
//! Each change is one conditional write of the integration over the version
//! it read ([`Admin::change_integration`]), with its event.

use strongroom_core::event::EventKind;
use strongroom_core::identity::{GroupId, UserId};
use strongroom_core::integration::AllowedUsers;

use super::{Admin, AdminError, Changed};

/// A user or a group a rule names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Trustee {
    User(UserId),
    Group(GroupId),
}

impl Admin {
    /// Puts `who` on integration `client_id`'s allow-list: whether they were
    /// not on it (false, and nothing written, when already there, or for a
    /// user when the integration admits every user).
    pub async fn add_rule(&self, client_id: &str, who: &Trustee, label: &str) -> Result<bool, AdminError> {
        let event = self.event(EventKind::IntegrationUpdated).client_id(client_id).detail(format!("rule added: {label}"));
        let mut added = false;
        self.change_integration(client_id, event, |i| {
            added = match who {
                Trustee::User(u) => match &mut i.allowed_users {
                    AllowedUsers::Everyone => false,
                    AllowedUsers::Only(list) if list.contains(u) => false,
                    AllowedUsers::Only(list) => {
                        list.push(u.clone());
                        true
                    }
                },
                Trustee::Group(g) if i.allowed_groups.contains(g) => false,
                Trustee::Group(g) => {
                    i.allowed_groups.push(g.clone());
                    true
                }
            };
            Ok(if added { Changed::Yes } else { Changed::No })
        })
        .await?;
        Ok(added)
    }

    /// Takes `who` off integration `client_id`'s allow-list: whether they
    /// were on it. Their tokens through it stop working at their next
    /// request (every bearer check reads the allow-list).
    pub async fn remove_rule(&self, client_id: &str, who: &Trustee, label: &str) -> Result<bool, AdminError> {
        let event = self.event(EventKind::IntegrationUpdated).client_id(client_id).detail(format!("rule removed: {label}"));
        let mut removed = false;
        self.change_integration(client_id, event, |i| {
            removed = match who {
                Trustee::User(u) => match &mut i.allowed_users {
                    AllowedUsers::Only(list) if list.contains(u) => {
                        list.retain(|x| x != u);
                        true
                    }
                    _ => false,
                },
                Trustee::Group(g) if i.allowed_groups.contains(g) => {
                    i.allowed_groups.retain(|x| x != g);
                    true
                }
                Trustee::Group(_) => false,
            };
            Ok(if removed { Changed::Yes } else { Changed::No })
        })
        .await?;
        Ok(removed)
    }

    /// Revokes the live grants of integration `client_id` (of user `user`
    /// only, if given), each with its `grant.revoked` event naming the
    /// caller. The grants revoked (one revoked meanwhile by someone else
    /// is not counted).
    pub async fn revoke_integration_grants(&self, client_id: &str, user: Option<&UserId>) -> Result<u64, AdminError> {
        let mut n = 0;
        for g in self.list_grants(false).await? {
            if g.grant.client_id != client_id || user.is_some_and(|u| *u != g.grant.user_id) {
                continue;
            }
            match self.revoke_grant(g.grant.id.as_str()).await {
                Ok(()) => n += 1,
                Err(AdminError::NotFound(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(n)
    }
}
