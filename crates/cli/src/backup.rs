//! `strongroom admin backup FILE` and `strongroom admin restore FILE`: online
//! snapshots of the SQLite store and their restore into an empty data
//! directory. PostgreSQL is backed up with its own tools (`pg_dump`).

use anyhow::{Context as _, Result, bail};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::path::{Path, PathBuf};

use strongroom_app::SystemClock;
use strongroom_core::time::Clock as _;
use strongroom_store::sqlite::{self, Snapshot};

use crate::admin::{Rendered, hex};

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
        None => bail!("the store is PostgreSQL: back it up with pg_dump and restore with pg_restore (the book: Backup and restore)"),
    }
}

fn sidecar_path(file: &Path) -> PathBuf {
    let mut p = file.as_os_str().to_owned();
    p.push(".json");
    p.into()
}

/// Writes `text` to a new file with mode 0600.
fn write_private(path: &Path, text: &str) -> Result<()> {
    strongroom_proto::files::write_private(path, text.as_bytes()).with_context(|| format!("creating {}", path.display()))
}

fn head_json(s: &Snapshot) -> serde_json::Value {
    json!({"event_seq": s.event_seq, "event_hash": hex(&s.event_hash), "schema_version": s.schema_version, "bytes": s.bytes})
}

/// `FILE` with a suffix: `FILE.json`, `FILE.new-PID`.
fn with_suffix(file: &Path, suffix: &str) -> PathBuf {
    let mut p = file.as_os_str().to_owned();
    p.push(suffix);
    p.into()
}

pub(crate) fn backup(config: &strongroom_server::Config, file: &Path, force: bool) -> Result<Rendered> {
    let db = sqlite_path(config)?;
    let side = sidecar_path(file);
    let exists = |p: &Path| p.symlink_metadata().is_ok();
    if !force {
        for p in [file, side.as_path()] {
            if exists(p) {
                bail!("{} already exists: give --force to replace it (and its sidecar), or another name", p.display());
            }
        }
    }
    if !exists(&db) {
        bail!("no SQLite store at {}: give the server's --data-dir or --config (nothing was created)", crate::admin::shown(&db));
    }
    // With --force the new snapshot and sidecar are made beside the old
    // ones and moved over them only once both are complete: a failed
    // backup leaves the previous one as it was.
    let suffix = format!(".new-{}", std::process::id());
    let (snap_file, side_file) =
        if force { (with_suffix(file, &suffix), with_suffix(&side, &suffix)) } else { (file.to_owned(), side.clone()) };
    let snap = sqlite::snapshot(&db, &snap_file).with_context(|| format!("snapshot of {} into {}", db.display(), file.display()))?;
    let sidecar = Sidecar {
        format: FORMAT.to_owned(),
        created_at: SystemClock.now().iso8601(),
        source: db.display().to_string(),
        schema_version: snap.schema_version,
        event_seq: snap.event_seq,
        event_hash: hex(&snap.event_hash),
        bytes: snap.bytes,
    };
    let written = write_private(&side_file, &serde_json::to_string_pretty(&sidecar)?);
    let moved = written.and_then(|()| {
        if force {
            std::fs::rename(&snap_file, file).with_context(|| format!("replacing {}", file.display()))?;
            std::fs::rename(&side_file, &side).with_context(|| format!("replacing {}", side.display()))?;
        }
        Ok(())
    });
    if let Err(e) = moved {
        if force {
            let _ = std::fs::remove_file(&snap_file);
            let _ = std::fs::remove_file(&side_file);
        }
        return Err(e);
    }
    let mut v = head_json(&snap);
    v["file"] = json!(file.display().to_string());
    v["sidecar"] = json!(side.display().to_string());
    Ok(Rendered::done(
        format!(
            "backup {} ({} bytes): event chain head {} {}; recorded in {}\nthe master key is not in the backup: keep a copy of it elsewhere",
            file.display(),
            snap.bytes,
            snap.event_seq,
            hex(&snap.event_hash),
            side.display()
        ),
        v,
    ))
}

/// The highest of `path` and its ancestors that does not exist yet: what
/// creating `path` with its parents would make (None: `path` exists).
fn first_missing(path: &Path) -> Option<PathBuf> {
    let mut missing = None;
    let mut p = Some(path);
    while let Some(q) = p.filter(|q| !q.as_os_str().is_empty()) {
        if q.symlink_metadata().is_ok() {
            break;
        }
        missing = Some(q.to_owned());
        p = q.parent();
    }
    missing
}

/// The database file and the journals SQLite keeps beside it.
fn database_files(db: &Path) -> Vec<PathBuf> {
    let mut files = vec![db.to_owned()];
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut p = db.as_os_str().to_owned();
        p.push(suffix);
        files.push(p.into());
    }
    files
}

/// What a restore may create, noted before it starts, so that a failed
/// restore can take it all away again and leave the target as it was.
#[derive(Debug)]
struct Undo {
    /// Directories that did not exist (the data directory or the database's
    /// directory, or the highest of their missing ancestors): removed whole.
    new_dirs: Vec<PathBuf>,
    /// The data directory, when it existed (empty, as restore requires):
    /// emptied again.
    empty_dir: Option<PathBuf>,
    db: PathBuf,
}

impl Undo {
    fn note(dir: &Path, db: &Path) -> Undo {
        let mut new_dirs: Vec<PathBuf> = first_missing(dir).into_iter().collect();
        if let Some(parent) = db.parent().and_then(first_missing)
            && !new_dirs.iter().any(|d| parent.starts_with(d))
        {
            new_dirs.push(parent);
        }
        let empty_dir = if dir.is_dir() { Some(dir.to_owned()) } else { None };
        Undo { new_dirs, empty_dir, db: db.to_owned() }
    }

    /// Removes what the restore created; what could not be removed, if anything.
    fn run(&self) -> Vec<String> {
        let mut left = Vec::new();
        let mut gone = |what: &Path, r: std::io::Result<()>| match r {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => left.push(format!("{}: {e}", what.display())),
            _ => {}
        };
        for f in database_files(&self.db) {
            gone(&f, std::fs::remove_file(&f));
        }
        if let Some(dir) = &self.empty_dir {
            match std::fs::read_dir(dir) {
                Ok(entries) => {
                    for entry in entries.flatten() {
                        let p = entry.path();
                        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
                        gone(&p, if is_dir { std::fs::remove_dir_all(&p) } else { std::fs::remove_file(&p) });
                    }
                }
                Err(e) => gone(dir, Err(e)),
            }
        }
        for d in &self.new_dirs {
            gone(d, std::fs::remove_dir_all(d));
        }
        left
    }
}

pub(crate) async fn restore(config: &strongroom_server::Config, file: &Path) -> Result<Rendered> {
    let db = sqlite_path(config)?;
    let dir = &config.data_dir;
    if std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_some()) {
        bail!("{} is not empty: restore only into a new or empty data directory", dir.display());
    }
    if db.symlink_metadata().is_ok() {
        bail!("{} already exists", db.display());
    }
    // The head the backup recorded, if its sidecar came along.
    let side = sidecar_path(file);
    let recorded: Option<Sidecar> = match std::fs::read(&side) {
        Ok(b) => Some(serde_json::from_slice(&b).with_context(|| format!("reading {}", side.display()))?),
        Err(_) => None,
    };
    let undo = Undo::note(dir, &db);
    let (snap, n) = match restore_and_verify(config, file, &db, recorded.as_ref()).await {
        Ok(done) => done,
        Err(e) => {
            let left = undo.run();
            let state = if !left.is_empty() {
                format!("could not remove everything the restore had created ({}): remove it before trying again", left.join("; "))
            } else if undo.empty_dir.is_some() {
                format!("removed everything the restore had put in {}: it is empty again, as it was", dir.display())
            } else if undo.new_dirs.is_empty() {
                "removed what the restore had created".to_owned()
            } else {
                let made: Vec<String> = undo.new_dirs.iter().map(|d| d.display().to_string()).collect();
                format!("removed {}, which the restore had created: nothing is left of it", made.join(" and "))
            };
            return Err(e.context(format!("restore of {} failed; {state}", file.display())));
        }
    };
    let mut v = head_json(&snap);
    v["events_verified"] = json!(n);
    v["database"] = json!(db.display().to_string());
    v["sidecar_checked"] = json!(recorded.is_some());
    Ok(Rendered::done(
        format!(
            "restored {} into {}: event log intact: {n} events, head {} {}{}\nbefore serving, put the master key back: {} (mode 0600) or STRONGROOM_MASTER_KEY",
            file.display(),
            db.display(),
            snap.event_seq,
            hex(&snap.event_hash),
            if recorded.is_some() { " (as recorded at backup)" } else { "" },
            config.data_dir.join("master.key").display()
        ),
        v,
    ))
}

/// Copies the snapshot into place, checks it against its sidecar, opens it
/// (applying newer migrations) and verifies the whole event chain. The
/// store is closed again before this returns.
async fn restore_and_verify(
    config: &strongroom_server::Config,
    file: &Path,
    db: &Path,
    recorded: Option<&Sidecar>,
) -> Result<(Snapshot, i64)> {
    let dir = &config.data_dir;
    strongroom_keyring::keys::create_private_dir(dir).with_context(|| format!("creating {}", dir.display()))?;
    let snap = sqlite::restore_file(file, db).with_context(|| format!("restoring {} into {}", file.display(), db.display()))?;
    if let Some(r) = recorded
        && (r.event_seq, r.event_hash.as_str()) != (snap.event_seq, hex(&snap.event_hash).as_str())
    {
        bail!("{} does not hold the event-chain head its sidecar {} recorded", file.display(), sidecar_path(file).display());
    }
    let store = strongroom_store::open(&config.database_url).await.context("opening the restored store")?;
    let n = strongroom_app::admin::verify_store_events(&*store).await.context("verifying the restored event log");
    drop(store);
    Ok((snap, n?.events))
}
