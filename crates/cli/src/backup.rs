//! `strongroom admin backup FILE` and `strongroom admin restore FILE`: online
//! snapshots of the SQLite store and their restore into an empty data
//! directory. PostgreSQL is backed up with its own tools (`pg_dump`).

use anyhow::{Context as _, Result, bail};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::path::{Path, PathBuf};

use strongroom_core::time::Clock as _;
use strongroom_server::state::SystemClock;
use strongroom_store::sqlite::{self, Snapshot};

use crate::admin::{Output, hex};

/// The sidecar `FILE.json` written beside every snapshot.
#[derive(Debug, Serialize, Deserialize)]
struct Sidecar {
    format: String,
    created_at: String,
    source: String,
    schema_version: i64,
    event_seq: i64,
    event_hash: String,
    bytes: u64,
}

const FORMAT: &str = "strongroom-sqlite-snapshot-1";

fn sqlite_path(config: &strongroom_server::Config) -> Result<PathBuf> {
    match strongroom_store::sqlite_path(&config.database_url)? {
        Some(path) => Ok(path.to_owned()),
        None => bail!("the store is PostgreSQL: back it up with pg_dump and restore with pg_restore (README, Operating)"),
    }
}

fn sidecar_path(file: &Path) -> PathBuf {
    let mut p = file.as_os_str().to_owned();
    p.push(".json");
    p.into()
}

/// Writes `text` to a new file with mode 0600.
fn write_private(path: &Path, text: &str) -> Result<()> {
    use std::io::Write as _;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        opts.mode(0o600);
    }
    let mut f = opts.open(path).with_context(|| format!("creating {}", path.display()))?;
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    Ok(())
}

fn head_json(s: &Snapshot) -> serde_json::Value {
    json!({"event_seq": s.event_seq, "event_hash": hex(&s.event_hash), "schema_version": s.schema_version, "bytes": s.bytes})
}

pub(crate) fn backup(config: &strongroom_server::Config, file: &Path, out: &mut Output) -> Result<()> {
    let db = sqlite_path(config)?;
    let side = sidecar_path(file);
    if side.exists() {
        bail!("{} already exists", side.display());
    }
    let snap = sqlite::snapshot(&db, file).with_context(|| format!("snapshot of {} into {}", db.display(), file.display()))?;
    let sidecar = Sidecar {
        format: FORMAT.to_owned(),
        created_at: SystemClock.now().iso8601(),
        source: db.display().to_string(),
        schema_version: snap.schema_version,
        event_seq: snap.event_seq,
        event_hash: hex(&snap.event_hash),
        bytes: snap.bytes,
    };
    write_private(&side, &serde_json::to_string_pretty(&sidecar)?)?;
    let mut v = head_json(&snap);
    v["file"] = json!(file.display().to_string());
    v["sidecar"] = json!(side.display().to_string());
    out.done(
        &format!(
            "backup {} ({} bytes): event chain head {} {}; recorded in {}\nthe master key is not in the backup: keep a copy of it elsewhere",
            file.display(),
            snap.bytes,
            snap.event_seq,
            hex(&snap.event_hash),
            side.display()
        ),
        v,
    )
}

pub(crate) async fn restore(config: &strongroom_server::Config, file: &Path, out: &mut Output) -> Result<()> {
    let db = sqlite_path(config)?;
    let dir = &config.data_dir;
    if std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_some()) {
        bail!("{} is not empty: restore only into a new or empty data directory", dir.display());
    }
    if db.exists() {
        bail!("{} already exists", db.display());
    }
    // The head the backup recorded, if its sidecar came along.
    let side = sidecar_path(file);
    let recorded: Option<Sidecar> = match std::fs::read(&side) {
        Ok(b) => Some(serde_json::from_slice(&b).with_context(|| format!("reading {}", side.display()))?),
        Err(_) => None,
    };
    strongroom_server::keys::create_private_dir(dir).with_context(|| format!("creating {}", dir.display()))?;
    let snap = sqlite::restore_file(file, &db).with_context(|| format!("restoring {} into {}", file.display(), db.display()))?;
    if let Some(r) = &recorded
        && (r.event_seq, r.event_hash.as_str()) != (snap.event_seq, hex(&snap.event_hash).as_str())
    {
        bail!("{} does not hold the event-chain head its sidecar {} recorded", file.display(), side.display());
    }
    let store = strongroom_store::open(&config.database_url).await.context("opening the restored store")?;
    let n = strongroom_server::admin::verify_store_events(&*store).await.context("verifying the restored event log")?;
    let mut v = head_json(&snap);
    v["events_verified"] = json!(n);
    v["database"] = json!(db.display().to_string());
    v["sidecar_checked"] = json!(recorded.is_some());
    out.done(
        &format!(
            "restored {} into {}: event log intact: {n} events, head {} {}{}\nbefore serving, put the master key back: {} (mode 0600) or STRONGROOM_MASTER_KEY",
            file.display(),
            db.display(),
            snap.event_seq,
            hex(&snap.event_hash),
            if recorded.is_some() { " (as recorded at backup)" } else { "" },
            dir.join("master.key").display()
        ),
        v,
    )
}
