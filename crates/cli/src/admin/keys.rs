//! `strongroom admin keys ...`

use anyhow::Result;
use clap::Subcommand;
use serde_json::json;

use strongroom_app::OsRandom;
use strongroom_app::admin::Admin;
use strongroom_keyring::KeyRing;

use super::{Rendered, time};

#[derive(Debug, Subcommand)]
pub(crate) enum KeysCommand {
    /// List the named keys (`Driver:Name`) and their data keys; the newest data key of each seals new data.
    List,
    /// Create a named key where its driver keeps keys: `PKCS11:NAME` makes an AES-256 key in the
    /// token configured by `[[keys.pkcs11]]` (the `Software` driver has only `Software:Default`).
    /// Touches no store.
    Create { name: String },
    /// Create a new data key and re-encrypt with it every value under the named key (every named key if none given).
    Rotate { name: Option<String> },
    /// Move every entry under one named key to another: its data and associations are re-encrypted
    /// under the other key's current data key, one entry per write (progress on stderr). Servers may
    /// keep running. Entries that do not decrypt stay where they are and are counted.
    ///
    /// Example: strongroom admin keys move --from Software:Default --to PKCS11:vault
    Move {
        /// The named key the entries are under now.
        #[arg(long)]
        from: String,
        /// The named key to put them under (configured, and usable now).
        #[arg(long)]
        to: String,
    },
}

/// `admin keys create`: only the token is touched, so it needs neither the
/// store nor the master key.
pub(crate) async fn create(config: &strongroom_server::Config, name: &str) -> Result<Rendered> {
    let name = KeyRing::without_master_key(&config.keys, &OsRandom).create_key(name).await?;
    Ok(Rendered::done(format!("created {name}"), json!({"created": name})))
}

pub(crate) async fn run(admin: &Admin, command: KeysCommand) -> Result<Rendered> {
    Ok(match command {
        KeysCommand::List => {
            let named = admin.named_keys().await?;
            let data = admin.data_keys().await?;
            let rows: Vec<Vec<String>> = named
                .iter()
                .map(|k| {
                    let flags = [(k.default, "default"), (k.entries > 0, "in use"), (k.location.is_none(), "NOT CONFIGURED")]
                        .iter()
                        .filter(|(on, _)| *on)
                        .map(|(_, f)| *f)
                        .collect::<Vec<_>>()
                        .join(", ");
                    let ids = k.data_keys.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
                    vec![
                        k.name.clone(),
                        flags,
                        k.entries.to_string(),
                        if ids.is_empty() { "none".to_owned() } else { ids },
                        k.location.clone().unwrap_or_default(),
                    ]
                })
                .collect();
            // One object per named key, its data keys inside it.
            let list: Vec<_> = named
                .iter()
                .map(|k| {
                    let keys: Vec<_> = data
                        .iter()
                        .filter(|(id, _, _)| k.data_keys.contains(id))
                        .map(|(id, _, created)| json!({"id": id, "created_at": time(*created)}))
                        .collect();
                    json!({"name": k.name, "default": k.default, "configured": k.location.is_some(), "in_use": k.entries > 0,
                           "entries": k.entries, "location": k.location, "data_keys": keys})
                })
                .collect();
            let mut r = Rendered::table(&["NAME", "FLAGS", "ENTRIES", "DATA KEYS", "LOCATION"], &rows, "no named keys", json!(list));
            if !data.is_empty() {
                let rows: Vec<Vec<String>> =
                    data.iter().map(|(id, name, created)| vec![id.to_string(), name.clone(), time(*created)]).collect();
                r.text.push('\n');
                r.text
                    .push_str(&Rendered::table(&["DATA KEY", "NAMED KEY", "CREATED"], &rows, "no data keys", serde_json::Value::Null).text);
            }
            r
        }
        KeysCommand::Create { name } => Rendered::done(format!("created {}", admin.create_key(&name).await?), json!({"created": name})),
        KeysCommand::Rotate { name } => {
            let rotated = admin.rotate_keys(name.as_deref(), &mut |name, n| eprintln!("{name}: re-encrypted {n} values so far")).await?;
            let human: Vec<String> =
                rotated.iter().map(|(name, id, n)| format!("{name}: data key {id} is current; re-encrypted {n} values")).collect();
            let results: Vec<_> =
                rotated.iter().map(|(name, id, n)| json!({"key_name": name, "current_key": id, "reencrypted": n})).collect();
            Rendered::done(human.join("\n"), json!(results))
        }
        KeysCommand::Move { from, to } => {
            let shown = |n: &str| admin.keyring.resolve(n).unwrap_or(n).to_owned();
            let (from, to) = (shown(&from), shown(&to));
            let entries = |n: u64| format!("{n} {}", if n == 1 { "entry" } else { "entries" });
            let mut progress = |n: u64| eprintln!("{from} -> {to}: moved {} so far", entries(n));
            let m = admin.move_key(&from, &to, &mut progress).await?;
            let (from, to) = (&m.from, &m.to);
            let mut human = format!("moved {} from {from} to {to} (data key {})", entries(m.moved), m.data_key);
            if m.unreadable > 0 {
                human.push_str(&format!("; {} do not decrypt and stay under {from}", entries(m.unreadable)));
            }
            if m.changed > 0 {
                human.push_str(&format!("; {} changed meanwhile: run it again", entries(m.changed)));
            }
            let value =
                json!({"from": from, "to": to, "data_key": m.data_key, "moved": m.moved, "unreadable": m.unreadable, "changed": m.changed});
            let failure = (m.unreadable > 0 || m.changed > 0).then(|| format!("not every entry under {from} was moved"));
            Rendered { failure, ..Rendered::done(human, value) }
        }
    })
}
