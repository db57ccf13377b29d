//! `strongroom admin grants ...`

use anyhow::Result;
use clap::Subcommand;
use serde_json::json;
use std::collections::HashMap;

use strongroom_app::admin::Admin;
use strongroom_client::admin::{AdminApi, BROWSE_MAX, identity_type};

use super::remote::not_over_api;
use super::{Rendered, Target, time};

#[derive(Debug, Subcommand)]
pub(crate) enum GrantsCommand {
    /// List live grants (with --all, also revoked and expired ones).
    List {
        #[arg(long)]
        all: bool,
    },
    /// Revoke a grant: its access and refresh tokens stop working.
    ///
    /// Example: strongroom admin grants revoke --user alice   (every grant alice holds)
    Revoke {
        /// The grant's id (from `grants list`).
        #[arg(required_unless_present = "user", conflicts_with = "user")]
        id: Option<String>,
        /// Revoke every grant this user holds instead.
        #[arg(long)]
        user: Option<String>,
    },
}

/// One grant as `grants list` shows it (over the API: live grants, whose
/// end the API does not tell).
struct GrantRow {
    id: String,
    client_id: String,
    user: String,
    identity: String,
    scope: String,
    created_at: String,
    refresh_until: Option<String>,
    revoked_at: Option<String>,
}

fn listing(grants: &[GrantRow]) -> Rendered {
    let state = |g: &GrantRow| match (&g.revoked_at, &g.refresh_until) {
        (Some(t), _) => format!("revoked {t}"),
        (None, Some(t)) => format!("until {t}"),
        (None, None) => "live".to_owned(),
    };
    let rows: Vec<Vec<String>> =
        grants.iter().map(|g| vec![g.id.clone(), g.client_id.clone(), g.user.clone(), g.scope.clone(), state(g)]).collect();
    let list: Vec<_> = grants
        .iter()
        .map(|g| {
            let mut j = json!({"id": g.id, "client_id": g.client_id, "user": g.user, "identity": g.identity, "scope": g.scope,
                               "created_at": g.created_at, "revoked_at": g.revoked_at});
            if let Some(t) = &g.refresh_until {
                j["refresh_until"] = json!(t);
            }
            j
        })
        .collect();
    Rendered::table(&["GRANT", "CLIENT ID", "USER", "SCOPE", "STATE"], &rows, "no grants", json!(list))
}

fn revoked_of_user(user: &str, ended: u64) -> Rendered {
    Rendered::done(format!("revoked {} of {user}", super::count(ended, "grant", "grants")), json!({"user": user, "grants_revoked": ended}))
}

pub(crate) async fn run(target: &Target, command: GrantsCommand) -> Result<Rendered> {
    match target {
        Target::Store(admin) => run_store(admin, command).await,
        Target::Server(api) => run_api(api, command).await,
    }
}

async fn run_api(api: &AdminApi, command: GrantsCommand) -> Result<Rendered> {
    Ok(match command {
        GrantsCommand::List { all: true } => return Err(not_over_api("grants list --all (oauth/GetGrants lists live grants)")),
        GrantsCommand::List { all: false } => {
            let names: HashMap<String, String> =
                api.browse("", BROWSE_MAX, identity_type::USER).await?.into_iter().map(|u| (u.prefixed_universal, u.name)).collect();
            let rows: Vec<GrantRow> = api
                .grants(None, None)
                .await?
                .into_iter()
                .map(|g| GrantRow {
                    id: g.grant_id,
                    client_id: g.application,
                    user: names.get(&g.grantee_prefixed_universal).cloned().unwrap_or_else(|| g.grantee_prefixed_universal.clone()),
                    identity: g.grantee_prefixed_universal,
                    scope: g.scope,
                    created_at: g.grant_issued_on_ISO8601,
                    refresh_until: None,
                    revoked_at: None,
                })
                .collect();
            listing(&rows)
        }
        GrantsCommand::Revoke { id: Some(_), .. } => {
            return Err(not_over_api("grants revoke ID (oauth/RevokeGrants revokes by user or integration: use --user)"));
        }
        GrantsCommand::Revoke { id: None, user } => {
            let user = user.unwrap_or_default();
            let ended = api.revoke_grants(Some(&format!("local:{user}")), None).await?;
            revoked_of_user(&user, u64::try_from(ended).unwrap_or(0))
        }
    })
}

async fn run_store(admin: &Admin, command: GrantsCommand) -> Result<Rendered> {
    Ok(match command {
        GrantsCommand::List { all } => {
            let grants = admin.list_grants(all).await?;
            let rows: Vec<GrantRow> = grants
                .iter()
                .map(|g| GrantRow {
                    id: g.grant.id.to_string(),
                    client_id: g.grant.client_id.clone(),
                    user: g.user_name.clone(),
                    identity: g.grant.user_id.identity(),
                    scope: g.grant.scope.to_string(),
                    created_at: time(g.grant.created_at),
                    refresh_until: Some(time(g.grant.refresh_until)),
                    revoked_at: g.grant.revoked_at.map(time),
                })
                .collect();
            listing(&rows)
        }
        GrantsCommand::Revoke { id: Some(id), .. } => {
            admin.revoke_grant(&id).await?;
            Rendered::done(format!("revoked grant {id}"), json!({"id": id, "revoked": true}))
        }
        GrantsCommand::Revoke { id: None, user } => {
            let user = user.unwrap_or_default();
            let ended = admin.revoke_user_grants(&user).await?;
            revoked_of_user(&user, ended)
        }
    })
}
