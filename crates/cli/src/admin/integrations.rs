//! `strongroom admin integrations ...`

use anyhow::Result;
use clap::{Args, Subcommand};
use serde_json::json;

use strongroom_core::integration::{AllowedUsers, TokenOverrides};
use strongroom_server::admin::{Admin, IntegrationSpec};

use super::remote::not_over_api;
use super::{Rendered, Target, count, yes};

#[derive(Debug, Args)]
pub(crate) struct IntegrationArgs {
    /// Display name shown on the approval page.
    #[arg(long)]
    name: Option<String>,
    /// Maximum scope, e.g. "restricted:manage;certificate:manage".
    #[arg(long)]
    scope: Option<String>,
    /// A user allowed to get grants (repeat for several; replaces the list).
    #[arg(long = "allow-user", value_name = "NAME")]
    allow_users: Vec<String>,
    /// Allow every user.
    #[arg(long, conflicts_with = "allow_users")]
    allow_all_users: bool,
    /// Allow nobody (clears the list).
    #[arg(long, conflicts_with_all = ["allow_users", "allow_all_users"])]
    allow_no_users: bool,
    /// A group whose members are allowed to get grants (repeat for several; replaces the list).
    #[arg(long = "allow-group", value_name = "NAME")]
    allow_groups: Vec<String>,
    /// Allow no group (clears the list of groups).
    #[arg(long, conflicts_with = "allow_groups")]
    allow_no_groups: bool,
    /// Browser-based device authorization (default: on).
    #[arg(long, value_name = "BOOL")]
    device: Option<bool>,
    /// The password grant, Authorize/OAuth (default: off).
    #[arg(long, value_name = "BOOL")]
    password_grant: Option<bool>,
    /// Access-token lifetime in seconds (overrides the server default).
    #[arg(long, value_name = "SECONDS")]
    access_validity: Option<i64>,
    /// Grant lifetime (refresh_until) in seconds.
    #[arg(long, value_name = "SECONDS")]
    grant_validity: Option<i64>,
    /// Whether refresh tokens are issued.
    #[arg(long, value_name = "BOOL")]
    refreshable: Option<bool>,
    /// Device-code lifetime in seconds.
    #[arg(long, value_name = "SECONDS")]
    device_code_validity: Option<i64>,
    /// Minimum seconds between polls.
    #[arg(long, value_name = "SECONDS")]
    poll_interval: Option<i64>,
    /// Seconds in which a just-rotated refresh token may come back for a lost answer (0: strict).
    #[arg(long, value_name = "SECONDS")]
    retry_window: Option<i64>,
}

impl IntegrationArgs {
    fn spec(self, disabled: Option<bool>) -> IntegrationSpec {
        IntegrationSpec {
            name: self.name,
            scope: self.scope,
            allow_users: if self.allow_no_users {
                Some(Vec::new())
            } else if self.allow_users.is_empty() {
                None
            } else {
                Some(self.allow_users)
            },
            allow_all_users: self.allow_all_users,
            allow_groups: if self.allow_no_groups {
                Some(Vec::new())
            } else if self.allow_groups.is_empty() {
                None
            } else {
                Some(self.allow_groups)
            },
            device: self.device,
            password: self.password_grant,
            disabled,
            overrides: TokenOverrides {
                access_validity: self.access_validity,
                grant_validity: self.grant_validity,
                refreshable: self.refreshable,
                device_code_validity: self.device_code_validity,
                poll_interval: self.poll_interval,
                retry_window: self.retry_window,
            },
        }
    }
}

#[derive(Debug, Subcommand)]
pub(crate) enum IntegrationsCommand {
    /// Register an API integration.
    ///
    /// Example: strongroom admin integrations create my-app --name "My App" \
    ///   --scope "restricted:manage" --allow-user alice
    Create {
        client_id: String,
        #[command(flatten)]
        args: IntegrationArgs,
    },
    /// Change an API integration; options not given stay as they are.
    Update {
        client_id: String,
        #[command(flatten)]
        args: IntegrationArgs,
        /// Disable the integration: its tokens stop working at once.
        #[arg(long, conflicts_with = "enable")]
        disable: bool,
        #[arg(long)]
        enable: bool,
    },
    /// List API integrations.
    List,
    /// Delete an API integration: its grants end at once (each revocation is
    /// an event) and its device codes are dropped. Its past events stay in the log.
    Delete { client_id: String },
}

/// One integration as `integrations list` shows it: what `oauth/*` tells,
/// and on the store its grant types and device-flow settings too.
struct IntegrationRow {
    client_id: String,
    name: String,
    scope: String,
    /// The users allowed by name; `None`: everyone.
    users: Option<Vec<String>>,
    groups: Vec<String>,
    /// (device, password).
    grant_types: Option<(bool, bool)>,
    access_validity: i64,
    grant_validity: i64,
    refreshable: bool,
    /// (device_code_validity, poll_interval, retry_window).
    device_settings: Option<(i64, i64, i64)>,
    disabled: bool,
}

fn listing(list: &[IntegrationRow]) -> Rendered {
    let full = list.iter().all(|i| i.grant_types.is_some());
    let mut rows = Vec::new();
    let mut out = Vec::new();
    for i in list {
        let mut shown = match i.users.as_deref() {
            None => "everyone".to_owned(),
            Some([]) if i.groups.is_empty() => "nobody".to_owned(),
            Some(u) => u.join(","),
        };
        if !i.groups.is_empty() && i.users.is_some() {
            let g: Vec<String> = i.groups.iter().map(|g| format!("group:{g}")).collect();
            shown = if shown.is_empty() { g.join(",") } else { format!("{shown},{}", g.join(",")) };
        }
        let mut row = vec![i.client_id.clone(), i.name.clone(), i.scope.clone(), shown];
        if let Some((device, password)) = i.grant_types.filter(|_| full) {
            row.extend([yes(device), yes(password)]);
        }
        row.extend([
            format!("{}s", i.access_validity),
            format!("{}s", i.grant_validity),
            yes(i.refreshable),
            if i.disabled { "DISABLED".to_owned() } else { "enabled".to_owned() },
        ]);
        rows.push(row);
        let mut j = json!({
            "client_id": i.client_id, "name": i.name, "scope": i.scope,
            "allowed_users": match &i.users { None => json!("everyone"), Some(u) => json!(u) },
            "allowed_groups": i.groups,
            "access_validity": i.access_validity, "grant_validity": i.grant_validity, "refreshable": i.refreshable,
            "disabled": i.disabled,
        });
        if let Some((device, password)) = i.grant_types {
            j["device"] = json!(device);
            j["password_grant"] = json!(password);
        }
        if let Some((code, poll, retry)) = i.device_settings {
            j["device_code_validity"] = json!(code);
            j["poll_interval"] = json!(poll);
            j["retry_window"] = json!(retry);
        }
        out.push(j);
    }
    let headers: &[&str] = if full {
        &["CLIENT ID", "NAME", "SCOPE", "USERS", "DEVICE", "PASSWORD", "ACCESS", "GRANT", "REFRESH", "STATE"]
    } else {
        &["CLIENT ID", "NAME", "SCOPE", "USERS", "ACCESS", "GRANT", "REFRESH", "STATE"]
    };
    Rendered::table(headers, &rows, json!(out))
}

fn created(client_id: &str, name: &str, scope: &str) -> Rendered {
    Rendered::done(
        format!("created integration {client_id} ({name}) with scope {scope}"),
        json!({"client_id": client_id, "name": name, "scope": scope}),
    )
}

fn updated(client_id: &str, name: &str, scope: &str, disabled: bool) -> Rendered {
    Rendered::done(
        format!("updated integration {client_id} ({name})"),
        json!({"client_id": client_id, "name": name, "scope": scope, "disabled": disabled}),
    )
}

/// (grants ended, device codes dropped): not told over the API.
fn deleted(client_id: &str, counts: Option<(u64, u64)>) -> Rendered {
    match counts {
        Some((grants_ended, codes_dropped)) => Rendered::done(
            format!(
                "deleted integration {client_id}: {} ended, {} dropped",
                count(grants_ended, "grant", "grants"),
                count(codes_dropped, "device code", "device codes")
            ),
            json!({"client_id": client_id, "deleted": true, "grants_ended": grants_ended, "codes_dropped": codes_dropped}),
        ),
        None => Rendered::done(format!("deleted integration {client_id}"), json!({"client_id": client_id, "deleted": true})),
    }
}

pub(crate) async fn run(target: &Target, config: Option<&strongroom_server::Config>, command: IntegrationsCommand) -> Result<Rendered> {
    match (target, config) {
        (Target::Store(admin), Some(config)) => run_store(admin, config, command).await,
        _ => Err(not_over_api("integrations")),
    }
}

async fn run_store(admin: &Admin, config: &strongroom_server::Config, command: IntegrationsCommand) -> Result<Rendered> {
    Ok(match command {
        IntegrationsCommand::Create { client_id, args } => {
            let i = admin.create_integration(&client_id, args.spec(None)).await?;
            created(&i.client_id, &i.name, &i.max_scope.to_string())
        }
        IntegrationsCommand::Update { client_id, args, disable, enable } => {
            let disabled = if disable {
                Some(true)
            } else if enable {
                Some(false)
            } else {
                None
            };
            let i = admin.update_integration(&client_id, args.spec(disabled)).await?;
            updated(&i.client_id, &i.name, &i.max_scope.to_string(), i.disabled)
        }
        IntegrationsCommand::List => {
            let names = admin.user_names().await?;
            let group_names = admin.group_names().await?;
            let mut rows = Vec::new();
            for i in admin.list_integrations().await? {
                let users = match &i.allowed_users {
                    AllowedUsers::Everyone => None,
                    AllowedUsers::Only(ids) => {
                        Some(ids.iter().map(|id| names.get(id.as_str()).cloned().unwrap_or_else(|| id.to_string())).collect())
                    }
                };
                let groups: Vec<String> = i
                    .allowed_groups
                    .iter()
                    .map(|id| group_names.get(id.as_str()).cloned().unwrap_or_else(|| id.as_str().to_owned()))
                    .collect();
                let s = i.settings(config.tokens);
                rows.push(IntegrationRow {
                    client_id: i.client_id.clone(),
                    name: i.name.clone(),
                    scope: i.max_scope.to_string(),
                    users,
                    groups,
                    grant_types: Some((i.grant_types.device, i.grant_types.password)),
                    access_validity: s.access_validity,
                    grant_validity: s.grant_validity,
                    refreshable: s.refreshable,
                    device_settings: Some((s.device_code_validity, s.poll_interval, s.retry_window)),
                    disabled: i.disabled,
                });
            }
            listing(&rows)
        }
        IntegrationsCommand::Delete { client_id } => {
            let d = admin.delete_integration(&client_id).await?;
            deleted(&client_id, Some((d.grants_ended, d.codes_dropped)))
        }
    })
}
