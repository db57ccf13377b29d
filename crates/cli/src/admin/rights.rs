//! `strongroom admin rights ...`

use anyhow::{Context as _, Result};
use clap::Subcommand;
use serde_json::json;

use strongroom_app::admin::{Admin, RightsOn};
use strongroom_client::admin::{AdminApi, identity_type, local_name};
use strongroom_core::vault::Rights;
use strongroom_proto::permissions::{Permissions, PermissionsRequest};
use strongroom_proto::vedsdk::IdentityName;

use super::{Rendered, Target};

#[derive(Debug, Subcommand)]
pub(crate) enum RightsCommand {
    /// Grant rights on a folder, replacing what the user had there.
    ///
    /// Example: strongroom admin rights grant '\VED\Policy\Team A' alice --rights read,write
    Grant {
        folder: String,
        user: String,
        /// Comma-separated: view, read, write, create, delete, rename, revoke, associate,
        /// policywrite, privatekeyread, privatekeywrite, managepermissions.
        #[arg(long)]
        rights: String,
        /// USER names a group: every member holds these rights while a member.
        #[arg(long)]
        group: bool,
    },
    /// Remove a user's (or with --group a group's) rights on a folder.
    Revoke {
        folder: String,
        user: String,
        #[arg(long)]
        group: bool,
    },
    /// A user's effective rights on a folder (their own and their groups'),
    /// and where each comes from: the folder itself, or a folder above it
    /// (inherited). With --group, a group's.
    Show {
        folder: String,
        user: String,
        #[arg(long)]
        group: bool,
    },
    /// Every grant of rights.
    List,
}

/// `read,write (inherited from \VED\Policy\Team A)`, and the like.
fn explain(r: &RightsOn) -> String {
    if r.master_admin {
        return format!("{} (Master Admin: every right on every folder)", r.effective);
    }
    if r.sources.is_empty() {
        return "none".to_owned();
    }
    let whence: Vec<String> = r
        .sources
        .iter()
        .map(|(f, rights)| {
            let how = if *f == r.folder { "granted here".to_owned() } else { format!("inherited from {f}") };
            if r.sources.len() == 1 { how } else { format!("{rights} {how}") }
        })
        .collect();
    format!("{} ({})", r.effective, whence.join("; "))
}

/// `rights list`: (folder, user or group, rights, whether a group).
fn rights_listing(all: &[(String, String, Rights, bool)]) -> Rendered {
    let rows: Vec<Vec<String>> =
        all.iter().map(|(f, u, r, g)| vec![f.clone(), if *g { format!("group:{u}") } else { u.clone() }, r.to_string()]).collect();
    let list: Vec<_> = all.iter().map(|(f, u, r, g)| json!({"folder": f, "user": u, "group": g, "rights": r.to_string()})).collect();
    Rendered::table(&["FOLDER", "USER", "RIGHTS"], &rows, "no rights granted", json!(list))
}

fn parse_rights(rights: &str) -> Result<Rights> {
    Rights::parse(rights).filter(|r| *r != Rights::NONE).context(
        "rights are a comma-separated list of view, read, write, create, delete, rename, revoke, associate, policywrite, \
         privatekeyread, privatekeywrite, managepermissions",
    )
}

fn granted(folder: &str, user: &str, group: bool, r: Rights) -> Rendered {
    let who = if group { format!("group {user}") } else { user.to_owned() };
    Rendered::done(format!("{who} has {r} on {folder}"), json!({"folder": folder, "user": user, "group": group, "rights": r.to_string()}))
}

fn revoked(folder: &str, user: &str, group: bool) -> Rendered {
    let who = if group { format!("group {user}") } else { user.to_owned() };
    Rendered::done(format!("removed {who}'s rights on {folder}"), json!({"folder": folder, "user": user, "group": group, "rights": ""}))
}

pub(crate) async fn run(target: &Target, command: RightsCommand) -> Result<Rendered> {
    match target {
        Target::Store(admin) => run_store(admin, command).await,
        Target::Server(api) => run_api(api, command).await,
    }
}

/// Each right and the flag that names it in `Permissions/*`, as the product spells it.
const FLAGS: [(Rights, &str); 12] = [
    (Rights::VIEW, "IsViewAllowed"),
    (Rights::READ, "IsReadAllowed"),
    (Rights::WRITE, "IsWriteAllowed"),
    (Rights::CREATE, "IsCreateAllowed"),
    (Rights::DELETE, "IsDeleteAllowed"),
    (Rights::RENAME, "IsRenameAllowed"),
    (Rights::REVOKE, "IsRevokeAllowed"),
    (Rights::ASSOCIATE, "IsAssociateAllowed"),
    (Rights::POLICY_WRITE, "IsPolicyWriteAllowed"),
    (Rights::PRIVATE_KEY_READ, "IsPrivateKeyReadAllowed"),
    (Rights::PRIVATE_KEY_WRITE, "IsPrivateKeyWriteAllowed"),
    (Rights::MANAGE_PERMISSIONS, "IsManagePermissionsAllowed"),
];

/// `r` as a `Permissions/*` body: every flag given, exactly `r`'s set.
fn flags_of(r: Rights) -> PermissionsRequest {
    let on = |flag: Rights| Some(r.contains(flag));
    PermissionsRequest {
        is_view_allowed: on(Rights::VIEW),
        is_read_allowed: on(Rights::READ),
        is_write_allowed: on(Rights::WRITE),
        is_create_allowed: on(Rights::CREATE),
        is_delete_allowed: on(Rights::DELETE),
        is_rename_allowed: on(Rights::RENAME),
        is_revoke_allowed: on(Rights::REVOKE),
        is_associate_allowed: on(Rights::ASSOCIATE),
        is_policy_write_allowed: on(Rights::POLICY_WRITE),
        is_private_key_read_allowed: on(Rights::PRIVATE_KEY_READ),
        is_private_key_write_allowed: on(Rights::PRIVATE_KEY_WRITE),
        is_manage_permissions_allowed: on(Rights::MANAGE_PERMISSIONS),
    }
}

/// The rights an answer's flags say.
fn rights_of(p: &Permissions) -> Rights {
    let set = p.flags();
    FLAGS.iter().filter(|(_, name)| set.iter().any(|(n, on)| n == name && *on)).fold(Rights::NONE, |a, (r, _)| a.union(*r))
}

/// The folder's GUID and the principal's `Universal` (a user, or with `group` a group).
async fn object_and_principal(api: &AdminApi, folder: &str, who: &str, group: bool) -> Result<(String, String)> {
    let object = api.dn_to_guid(folder.trim_end_matches('\\')).await?;
    let e = api.validate(&local_name(who)).await?.filter(|e| (e.kind & identity_type::USER == 0) == group);
    let e = e.with_context(|| format!("no such {}: {who}", if group { "group" } else { "user" }))?;
    Ok((object, e.universal))
}

async fn run_api(api: &AdminApi, command: RightsCommand) -> Result<Rendered> {
    Ok(match command {
        RightsCommand::Grant { folder, user, rights, group } => {
            let r = parse_rights(&rights)?;
            let (object, principal) = object_and_principal(api, &folder, &user, group).await?;
            api.set_permissions(&object, &principal, &flags_of(r)).await?;
            granted(&folder, &user, group, r)
        }
        RightsCommand::Revoke { folder, user, group } => {
            let (object, principal) = object_and_principal(api, &folder, &user, group).await?;
            api.delete_permissions(&object, &principal).await?;
            revoked(&folder, &user, group)
        }
        RightsCommand::Show { folder, user, group } => {
            let (object, principal) = object_and_principal(api, &folder, &user, group).await?;
            let effective = rights_of(&api.effective_permissions(&object, &principal).await?);
            let (here, inherited) = match api.permissions(&object, &principal).await? {
                Some(p) => (rights_of(&p.explicit), rights_of(&p.implicit)),
                None => (Rights::NONE, effective),
            };
            let mut whence = Vec::new();
            let both = here != Rights::NONE && inherited != Rights::NONE;
            if here != Rights::NONE {
                whence.push(if both { format!("{here} granted here") } else { "granted here".to_owned() });
            }
            if inherited != Rights::NONE {
                whence.push(if both { format!("{inherited} inherited") } else { "inherited".to_owned() });
            }
            let text = if effective == Rights::NONE { "none".to_owned() } else { format!("{effective} ({})", whence.join("; ")) };
            let mut sources = Vec::new();
            if here != Rights::NONE {
                sources.push(json!({"folder": folder, "rights": here.to_string(), "inherited": false}));
            }
            if inherited != Rights::NONE {
                sources.push(json!({"rights": inherited.to_string(), "inherited": true}));
            }
            Rendered::done(
                format!("{user} on {folder}: {text}"),
                json!({"folder": folder, "user": user, "rights": effective.to_string(), "sources": sources}),
            )
        }
        RightsCommand::List => {
            // Every folder (the roots too), the principals with an explicit
            // entry on it, and each one's entry.
            let mut folders = Vec::new();
            for root in ["\\VED", "\\VED\\Policy"] {
                match api.dn_to_guid(root).await {
                    Ok(guid) => folders.push((root.to_owned(), guid)),
                    // A server that does not show a root as an object: nothing is granted there through it.
                    Err(strongroom_client::ClientError::Refused { .. }) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            for o in api.find_objects_of_class("\\VED\\Policy", "Policy").await? {
                if !folders.iter().any(|(f, _)| f.eq_ignore_ascii_case(&o.dn)) {
                    folders.push((o.dn, o.guid));
                }
            }
            let mut all = Vec::new();
            for (folder, guid) in folders {
                for principal in api.principals(&guid).await? {
                    let id = IdentityName { prefixed_universal: Some(principal.clone()), ..IdentityName::default() };
                    let Some(e) = api.validate(&id).await? else { continue };
                    let Some(p) = api.permissions(&guid, &e.universal).await? else { continue };
                    all.push((folder.clone(), e.name, rights_of(&p.explicit), e.kind & identity_type::USER == 0));
                }
            }
            all.sort_by_key(|(f, u, _, g)| (f.to_lowercase(), *g, u.to_lowercase()));
            rights_listing(&all)
        }
    })
}

async fn run_store(admin: &Admin, command: RightsCommand) -> Result<Rendered> {
    Ok(match command {
        RightsCommand::Grant { folder, user, rights, group } => {
            let r = parse_rights(&rights)?;
            if group {
                admin.set_group_rights(&folder, &user, r).await?;
            } else {
                admin.set_rights(&folder, &user, r).await?;
            }
            granted(&folder, &user, group, r)
        }
        RightsCommand::Revoke { folder, user, group } => {
            if group {
                admin.set_group_rights(&folder, &user, Rights::NONE).await?;
            } else {
                admin.set_rights(&folder, &user, Rights::NONE).await?;
            }
            revoked(&folder, &user, group)
        }
        RightsCommand::Show { folder, user, group } => {
            let r = if group { admin.group_rights_on(&folder, &user).await? } else { admin.rights_on(&folder, &user).await? };
            let sources: Vec<_> = r
                .sources
                .iter()
                .map(|(f, rights)| json!({"folder": f.to_string(), "rights": rights.to_string(), "inherited": *f != r.folder}))
                .collect();
            Rendered::done(
                format!("{} on {}: {}", r.user, r.folder, explain(&r)),
                json!({"folder": r.folder.to_string(), "user": r.user, "rights": r.effective.to_string(), "master_admin": r.master_admin,
                       "sources": sources}),
            )
        }
        RightsCommand::List => {
            let all: Vec<(String, String, Rights, bool)> =
                admin.all_rights().await?.into_iter().map(|(f, u, r, g)| (f.to_string(), u, r, g)).collect();
            rights_listing(&all)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use strongroom_core::vault::FolderPath;

    fn on(sources: &[(&str, Rights)], master_admin: bool) -> RightsOn {
        let folder = FolderPath::parse("\\VED\\Policy\\Team A\\App").unwrap();
        let sources: Vec<(FolderPath, Rights)> = sources.iter().map(|(f, r)| (FolderPath::parse(f).unwrap(), *r)).collect();
        let effective = if master_admin { Rights::from_bits(u32::MAX) } else { sources.iter().fold(Rights::NONE, |a, (_, r)| a.union(*r)) };
        RightsOn { folder, user: "alice".into(), effective, master_admin, sources }
    }

    #[test]
    fn shown_rights_say_where_they_come_from() {
        let rw = Rights::READ.union(Rights::WRITE);
        assert_eq!(explain(&on(&[("\\VED\\Policy\\Team A", rw)], false)), "read,write (inherited from \\VED\\Policy\\Team A)");
        assert_eq!(explain(&on(&[("\\VED\\Policy\\Team A\\App", rw)], false)), "read,write (granted here)");
        assert_eq!(
            explain(&on(&[("\\VED\\Policy\\Team A", Rights::READ), ("\\VED\\Policy\\Team A\\App", Rights::DELETE)], false)),
            "read,delete (read inherited from \\VED\\Policy\\Team A; delete granted here)"
        );
        assert_eq!(explain(&on(&[], false)), "none");
        assert!(explain(&on(&[], true)).contains("Master Admin"));
    }
}
