//! `strongroom admin groups ...`

use anyhow::{Context as _, Result};
use clap::Subcommand;
use serde_json::json;

use strongroom_app::admin::Admin;
use strongroom_client::admin::{AdminApi, BROWSE_MAX, identity_type, local_name};
use strongroom_core::time::UnixTime;
use strongroom_proto::vedsdk::IdentityName;

use super::{Rendered, Target, time};

#[derive(Debug, Subcommand)]
pub(crate) enum GroupsCommand {
    /// Create a local group (identity local:{uuid}). Give it rights with
    /// `admin rights grant FOLDER NAME --group` and a place on integrations
    /// with `admin integrations update ID --allow-group NAME`.
    ///
    /// Example: strongroom admin groups add deployers
    Add { name: String },
    /// List groups with their member counts.
    List,
    /// Delete a group: its members lose its rights and its places on
    /// integrations at once.
    Remove { name: String },
    /// A group's members.
    #[command(subcommand)]
    Members(MembersCommand),
}

#[derive(Debug, Subcommand)]
pub(crate) enum MembersCommand {
    /// Add users to a group.
    ///
    /// Example: strongroom admin groups members add deployers alice bob
    Add {
        group: String,
        #[arg(required = true)]
        users: Vec<String>,
    },
    /// Remove users from a group: the group's rights stop for them at their
    /// next request, grants they already hold included.
    Remove {
        group: String,
        #[arg(required = true)]
        users: Vec<String>,
    },
    /// List a group's members.
    List { group: String },
}

/// One group as `groups list` shows it; its creation time is the store's only.
struct GroupRow {
    name: String,
    identity: String,
    members: u64,
    created_at: Option<UnixTime>,
}

fn listing(groups: &[GroupRow]) -> Rendered {
    let full = groups.iter().all(|g| g.created_at.is_some());
    let rows: Vec<Vec<String>> = groups
        .iter()
        .map(|g| {
            let mut row = vec![g.name.clone(), g.identity.clone(), g.members.to_string()];
            row.extend(g.created_at.filter(|_| full).map(time));
            row
        })
        .collect();
    let list: Vec<_> = groups
        .iter()
        .map(|g| {
            let mut j = json!({"name": g.name, "identity": g.identity, "members": g.members});
            if let Some(t) = g.created_at {
                j["created_at"] = json!(time(t));
            }
            j
        })
        .collect();
    let headers: &[&str] = if full { &["NAME", "IDENTITY", "MEMBERS", "CREATED"] } else { &["NAME", "IDENTITY", "MEMBERS"] };
    Rendered::table(headers, &rows, "no groups", json!(list))
}

/// `(name, identity)` of each member.
fn member_listing(members: &[(String, String)]) -> Rendered {
    let rows: Vec<Vec<String>> = members.iter().map(|(n, id)| vec![n.clone(), id.clone()]).collect();
    let list: Vec<_> = members.iter().map(|(n, id)| json!({"name": n, "identity": id})).collect();
    Rendered::table(&["NAME", "IDENTITY"], &rows, "no members", json!(list))
}

fn created(name: &str, identity: &str) -> Rendered {
    Rendered::done(format!("created group {name} ({identity})"), json!({"name": name, "identity": identity}))
}

fn added(group: &str, users: &[String], added: Vec<String>) -> Rendered {
    let already = users.len() - added.len();
    let text = match (added.is_empty(), already) {
        (true, _) => format!("no change: already members of {group}"),
        (false, 0) => format!("added {} to {group}", added.join(", ")),
        (false, n) => format!("added {} to {group} ({n} already members)", added.join(", ")),
    };
    Rendered::done(text, json!({"group": group, "added": added}))
}

fn removed(group: &str, removed: Vec<String>) -> Rendered {
    let text = if removed.is_empty() {
        format!("no change: none of them is a member of {group}")
    } else {
        format!("removed {} from {group}", removed.join(", "))
    };
    Rendered::done(text, json!({"group": group, "removed": removed}))
}

/// (Over the API the rights that went with it are not told.)
fn deleted(name: &str, rights: Option<u64>) -> Rendered {
    match rights {
        Some(rights) => Rendered::done(
            format!("deleted group {name} ({rights} folder rights removed)"),
            json!({"name": name, "deleted": true, "rights_removed": rights}),
        ),
        None => Rendered::done(format!("deleted group {name}"), json!({"name": name, "deleted": true})),
    }
}

pub(crate) async fn run(target: &Target, command: GroupsCommand) -> Result<Rendered> {
    match target {
        Target::Store(admin) => run_store(admin, command).await,
        Target::Server(api) => run_api(api, command).await,
    }
}

async fn run_api(api: &AdminApi, command: GroupsCommand) -> Result<Rendered> {
    Ok(match command {
        GroupsCommand::List => {
            let groups = api.browse("", BROWSE_MAX, identity_type::GROUP).await?;
            let mut rows = Vec::with_capacity(groups.len());
            for g in groups {
                let id = IdentityName { prefixed_universal: Some(g.prefixed_universal.clone()), ..IdentityName::default() };
                let members = api.members(&id).await?.len() as u64;
                rows.push(GroupRow { name: g.name, identity: g.prefixed_universal, members, created_at: None });
            }
            listing(&rows)
        }
        GroupsCommand::Members(MembersCommand::List { group }) => {
            let members = api.members(&local_name(&group)).await?;
            let rows: Vec<(String, String)> = members.into_iter().map(|u| (u.name, u.prefixed_universal)).collect();
            member_listing(&rows)
        }
        GroupsCommand::Add { name } => {
            let g = api.add_group(&name).await?;
            created(&g.name, &g.prefixed_universal)
        }
        GroupsCommand::Remove { name } => {
            let g = api.validate(&local_name(&name)).await?.filter(|g| g.kind & identity_type::GROUP != 0);
            let g = g.with_context(|| format!("no group {name}"))?;
            api.delete_group(&g.universal).await?;
            deleted(&name, None)
        }
        GroupsCommand::Members(MembersCommand::Add { group, users }) => {
            let before = member_names(api, &group).await?;
            let r = api.add_group_members(&local_name(&group), users.iter().map(|u| local_name(u)).collect()).await?;
            let invalid = invalid(&r.invalid_members);
            let asked: Vec<String> = users.iter().filter(|u| !invalid.contains(&u.to_lowercase())).cloned().collect();
            let done = asked.iter().filter(|u| !before.contains(&u.to_lowercase())).cloned().collect();
            with_invalid(added(&group, &asked, done), &invalid)
        }
        GroupsCommand::Members(MembersCommand::Remove { group, users }) => {
            let before = member_names(api, &group).await?;
            let r = api.remove_group_members(&local_name(&group), users.iter().map(|u| local_name(u)).collect()).await?;
            let invalid = invalid(&r.invalid_members);
            let done = users.iter().filter(|u| before.contains(&u.to_lowercase())).cloned().collect();
            with_invalid(removed(&group, done), &invalid)
        }
    })
}

/// The members' names of a group, lower-cased.
async fn member_names(api: &AdminApi, group: &str) -> Result<std::collections::HashSet<String>> {
    Ok(api.members(&local_name(group)).await?.into_iter().map(|m| m.name.to_lowercase()).collect())
}

/// The names the server found no user by, lower-cased (`local:` left off).
fn invalid(names: &[IdentityName]) -> Vec<String> {
    names
        .iter()
        .filter_map(|n| n.prefixed_name.clone().or_else(|| n.name.clone()).or_else(|| n.prefixed_universal.clone()))
        .map(|n| n.strip_prefix("local:").unwrap_or(&n).to_lowercase())
        .collect()
}

/// A membership change that named users the server has not: done for the
/// others, a failure for them (exit 1), as on the store.
fn with_invalid(mut r: Rendered, invalid: &[String]) -> Rendered {
    if !invalid.is_empty() {
        r.failure = Some(format!("no such user: {}", invalid.join(", ")));
    }
    r
}

async fn run_store(admin: &Admin, command: GroupsCommand) -> Result<Rendered> {
    Ok(match command {
        GroupsCommand::Add { name } => {
            let g = admin.create_group(&name).await?;
            created(&g.name, &g.identity())
        }
        GroupsCommand::List => {
            let groups = admin.list_groups().await?;
            let rows: Vec<GroupRow> = groups
                .iter()
                .map(|l| GroupRow {
                    name: l.group.name.clone(),
                    identity: l.group.identity(),
                    members: l.members,
                    created_at: Some(l.group.created_at),
                })
                .collect();
            listing(&rows)
        }
        GroupsCommand::Remove { name } => {
            let rights = admin.delete_group(&name).await?;
            deleted(&name, Some(rights))
        }
        GroupsCommand::Members(MembersCommand::Add { group, users }) => {
            let mut done = Vec::new();
            for u in &users {
                if admin.add_member(&group, u).await? {
                    done.push(u.clone());
                }
            }
            added(&group, &users, done)
        }
        GroupsCommand::Members(MembersCommand::Remove { group, users }) => {
            let mut done = Vec::new();
            for u in &users {
                if admin.remove_member(&group, u).await? {
                    done.push(u.clone());
                }
            }
            removed(&group, done)
        }
        GroupsCommand::Members(MembersCommand::List { group }) => {
            let members = admin.members(&group).await?;
            let rows: Vec<(String, String)> = members.iter().map(|u| (u.name.clone(), u.id.identity())).collect();
            member_listing(&rows)
        }
    })
}
