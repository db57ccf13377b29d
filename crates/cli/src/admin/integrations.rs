//! `strongroom admin integrations ...`

use anyhow::{Context as _, Result};
use clap::{Args, Subcommand};
use serde_json::json;
use std::collections::HashMap;

use strongroom_app::admin::{Admin, IntegrationSpec};
use strongroom_client::admin::{AdminApi, BROWSE_MAX, identity_type};
use strongroom_core::integration::{AllowedUsers, TokenOverrides};
use strongroom_proto::oauth::OAuthApplicationRequest;
use strongroom_proto::vedsdk::{IdentityEntry, IdentityName};

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
            // Over the API an integration without rules may admit everyone or nobody: `oauth/*` does not say.
            Some([]) if i.groups.is_empty() => if full { "nobody" } else { "no rule" }.to_owned(),
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
    Rendered::table(headers, &rows, "no integrations", json!(out))
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
        (Target::Server(api), _) => run_api(api, command).await,
        (Target::Store(_), None) => Err(anyhow::anyhow!("the store's configuration is needed")),
    }
}

/// The options `oauth/*` has no field for, by flag, when given.
fn not_in_oauth(args: &IntegrationArgs) -> Option<&'static str> {
    [
        (args.allow_all_users, "--allow-all-users"),
        (args.device.is_some(), "--device"),
        (args.password_grant.is_some(), "--password-grant"),
        (args.device_code_validity.is_some(), "--device-code-validity"),
        (args.poll_interval.is_some(), "--poll-interval"),
        (args.retry_window.is_some(), "--retry-window"),
    ]
    .into_iter()
    .find_map(|(given, flag)| given.then_some(flag))
}

impl IntegrationArgs {
    /// The application's fields, for `oauth/CreateApplication` and `UpdateApplication`.
    fn application(&self, client_id: &str) -> OAuthApplicationRequest {
        OAuthApplicationRequest {
            application_id: Some(client_id.to_owned()),
            name: self.name.clone(),
            scope: None,
            maximum_scope: self.scope.clone(),
            access_validity: self.access_validity,
            grant_validity: self.grant_validity,
            renewable: self.refreshable,
        }
    }

    /// The trustees the options ask for (`local:NAME`), when they replace the list.
    fn trustees(&self) -> (Option<Vec<String>>, Option<Vec<String>>) {
        let users = if self.allow_no_users {
            Some(Vec::new())
        } else if self.allow_users.is_empty() {
            None
        } else {
            Some(self.allow_users.iter().map(|u| format!("local:{u}")).collect())
        };
        let groups = if self.allow_no_groups {
            Some(Vec::new())
        } else if self.allow_groups.is_empty() {
            None
        } else {
            Some(self.allow_groups.iter().map(|g| format!("local:{g}")).collect())
        };
        (users, groups)
    }
}

/// Makes the integration's rules of one kind (users or groups) those `wanted` names.
async fn set_rules(api: &AdminApi, client_id: &str, wanted: &[String], groups: bool) -> Result<()> {
    let mut want: Vec<IdentityEntry> = Vec::new();
    for w in wanted {
        let name = IdentityName { prefixed_name: Some(w.clone()), ..IdentityName::default() };
        let e = api.validate(&name).await?.with_context(|| format!("no such {}: {}", if groups { "group" } else { "user" }, &w[6..]))?;
        want.push(e);
    }
    let kinds = identities(api).await?;
    for r in api.rules(client_id).await? {
        let is_group = kinds.get(&r.trustee_prefixed_universal).is_some_and(|(_, g)| *g);
        if is_group == groups && !want.iter().any(|e| e.prefixed_universal == r.trustee_prefixed_universal) {
            api.delete_rule(client_id, &r.trustee_prefixed_universal).await?;
        }
    }
    let have: Vec<String> = api.rules(client_id).await?.into_iter().map(|r| r.trustee_prefixed_universal).collect();
    for e in want {
        if !have.contains(&e.prefixed_universal) {
            api.create_rule(client_id, &e.prefixed_universal).await?;
        }
    }
    Ok(())
}

/// `local:{…}` → (name, whether a group) of every user and group.
async fn identities(api: &AdminApi) -> Result<HashMap<String, (String, bool)>> {
    let all = api.browse("", BROWSE_MAX, identity_type::USER | identity_type::GROUP | identity_type::DISTRIBUTION).await?;
    Ok(all.into_iter().map(|e| (e.prefixed_universal, (e.name, e.kind & identity_type::USER == 0))).collect())
}

async fn apply_rules(api: &AdminApi, client_id: &str, args: &IntegrationArgs) -> Result<()> {
    let (users, groups) = args.trustees();
    if let Some(u) = users {
        set_rules(api, client_id, &u, false).await?;
    }
    if let Some(g) = groups {
        set_rules(api, client_id, &g, true).await?;
    }
    Ok(())
}

async fn run_api(api: &AdminApi, command: IntegrationsCommand) -> Result<Rendered> {
    Ok(match command {
        IntegrationsCommand::Create { client_id, args } => {
            if let Some(flag) = not_in_oauth(&args) {
                return Err(not_over_api(&format!("integrations create {flag}")));
            }
            let app = api.create_application(&args.application(&client_id)).await?;
            apply_rules(api, &client_id, &args).await?;
            created(&app.id, &app.name, &app.maximum_scope)
        }
        IntegrationsCommand::Update { client_id, args, disable, enable } => {
            if let Some(flag) = not_in_oauth(&args).or(disable.then_some("--disable")).or(enable.then_some("--enable")) {
                return Err(not_over_api(&format!("integrations update {flag}")));
            }
            let app = api.update_application(&args.application(&client_id)).await?;
            apply_rules(api, &client_id, &args).await?;
            updated(&app.id, &app.name, &app.maximum_scope, app.disabled)
        }
        IntegrationsCommand::List => {
            let kinds = identities(api).await?;
            let mut rows = Vec::new();
            for a in api.applications().await? {
                let (mut users, mut groups) = (Vec::new(), Vec::new());
                for r in api.rules(&a.id).await? {
                    match kinds.get(&r.trustee_prefixed_universal) {
                        Some((name, true)) => groups.push(name.clone()),
                        Some((name, false)) => users.push(name.clone()),
                        None => users.push(r.trustee_prefixed_universal),
                    }
                }
                rows.push(IntegrationRow {
                    client_id: a.id,
                    name: a.name,
                    scope: a.maximum_scope,
                    users: Some(users),
                    groups,
                    grant_types: None,
                    access_validity: a.access_validity,
                    grant_validity: a.grant_validity,
                    refreshable: a.renewable,
                    device_settings: None,
                    disabled: a.disabled,
                });
            }
            listing(&rows)
        }
        IntegrationsCommand::Delete { client_id } => {
            api.delete_application(&client_id).await?;
            deleted(&client_id, None)
        }
    })
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
