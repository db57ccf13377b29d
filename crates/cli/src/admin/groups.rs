//! `strongroom admin groups ...`

use anyhow::Result;
use clap::Subcommand;
use serde_json::json;

use strongroom_server::admin::Admin;

use super::{Rendered, time};

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

pub(crate) async fn run(admin: &Admin, command: GroupsCommand) -> Result<Rendered> {
    Ok(match command {
        GroupsCommand::Add { name } => {
            let g = admin.create_group(&name).await?;
            Rendered::done(format!("created group {} ({})", g.name, g.identity()), json!({"name": g.name, "identity": g.identity()}))
        }
        GroupsCommand::List => {
            let groups = admin.list_groups().await?;
            let rows: Vec<Vec<String>> = groups
                .iter()
                .map(|l| vec![l.group.name.clone(), l.group.identity(), l.members.to_string(), time(l.group.created_at)])
                .collect();
            let list: Vec<_> = groups
                .iter()
                .map(|l| {
                    json!({"name": l.group.name, "identity": l.group.identity(), "members": l.members,
                           "created_at": time(l.group.created_at)})
                })
                .collect();
            Rendered::table(&["NAME", "IDENTITY", "MEMBERS", "CREATED"], &rows, json!(list))
        }
        GroupsCommand::Remove { name } => {
            let rights = admin.delete_group(&name).await?;
            Rendered::done(
                format!("deleted group {name} ({rights} folder rights removed)"),
                json!({"name": name, "rights_removed": rights}),
            )
        }
        GroupsCommand::Members(MembersCommand::Add { group, users }) => {
            let mut added = Vec::new();
            for u in &users {
                if admin.add_member(&group, u).await? {
                    added.push(u.clone());
                }
            }
            let already = users.len() - added.len();
            let text = match (added.is_empty(), already) {
                (true, _) => format!("no change: already members of {group}"),
                (false, 0) => format!("added {} to {group}", added.join(", ")),
                (false, n) => format!("added {} to {group} ({n} already members)", added.join(", ")),
            };
            Rendered::done(text, json!({"group": group, "added": added}))
        }
        GroupsCommand::Members(MembersCommand::Remove { group, users }) => {
            let mut removed = Vec::new();
            for u in &users {
                if admin.remove_member(&group, u).await? {
                    removed.push(u.clone());
                }
            }
            let text = if removed.is_empty() {
                format!("no change: none of them is a member of {group}")
            } else {
                format!("removed {} from {group}", removed.join(", "))
            };
            Rendered::done(text, json!({"group": group, "removed": removed}))
        }
        GroupsCommand::Members(MembersCommand::List { group }) => {
            let members = admin.members(&group).await?;
            let rows: Vec<Vec<String>> = members.iter().map(|u| vec![u.name.clone(), u.id.identity()]).collect();
            let list: Vec<_> = members.iter().map(|u| json!({"name": u.name, "identity": u.id.identity()})).collect();
            Rendered::table(&["NAME", "IDENTITY"], &rows, json!(list))
        }
    })
}
