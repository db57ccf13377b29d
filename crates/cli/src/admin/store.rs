//! The store itself: `admin init`, `admin upgrade` and `admin migrate-store`.

use anyhow::{Context as _, Result, bail};
use serde_json::json;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use strongroom_app::{OsRandom, SystemClock};
use strongroom_core::time::Clock as _;
use strongroom_keyring::keys as master_key;
use strongroom_keyring::keys::KeySource;
use strongroom_store::Probe;

use super::{Rendered, other_schema, shown};
use crate::ConfigArgs;

/// `admin upgrade`: a backup (SQLite; PostgreSQL's is the operator's, with
/// `--no-backup`), then the migrations the store lacks, in one transaction
/// each. A store already at this schema is left as it is, without a backup.
pub(crate) async fn upgrade(config: &strongroom_server::Config, args: &ConfigArgs, no_backup: bool) -> Result<Rendered> {
    let url = &config.database_url;
    let needed = strongroom_store::schema_version();
    let found = match strongroom_store::probe(url).await.context("reaching the store")? {
        Probe::Absent => bail!("{}", super::no_store(config, args, "nothing to upgrade")),
        Probe::Present { version } => version.unwrap_or(0),
    };
    if found > needed {
        bail!("{}", other_schema(found, needed));
    }
    if found == needed {
        return Ok(Rendered::done(
            format!("the store is at schema {needed}, this strongroom's: nothing to upgrade"),
            json!({"from": found, "to": needed, "backup": null}),
        ));
    }
    let backup = match (no_backup, strongroom_store::sqlite_path(url).context("database_url")?) {
        (true, _) => None,
        (false, None) => bail!(
            "the store is on PostgreSQL, which strongroom does not back up: back it up with pg_dump, then run \
             `strongroom admin upgrade --no-backup` (nothing was changed)"
        ),
        (false, Some(_)) => {
            let dir = config.data_dir.join("backups");
            master_key::create_private_dir(&dir).with_context(|| format!("creating {}", shown(&dir)))?;
            let stamp = SystemClock.now().iso8601().replace(':', "");
            let file = dir.join(format!("strongroom-schema{found}-{stamp}.db"));
            crate::backup::backup(config, &file, false).context("the backup before upgrading (nothing was changed)")?;
            Some(file)
        }
    };
    let (before, _store) = match strongroom_store::upgrade(url).await {
        Err(strongroom_store::StoreError::Schema { found, needed }) => bail!("{}", other_schema(found, needed)),
        other => other.context("upgrading the store")?,
    };
    let from = before.unwrap_or(0);
    let saved = backup.as_ref().map_or_else(|| "no backup made (--no-backup)".to_owned(), |f| format!("backup in {}", shown(f)));
    Ok(Rendered::done(
        format!("the store is upgraded from schema {from} to {needed}; {saved}"),
        json!({"from": from, "to": needed, "backup": backup.map(|f| shown(&f))}),
    ))
}

/// `admin init`: makes the data directory, the master key and the store, as
/// `serve`'s first start does; on a store that exists it only checks the
/// key against it.
pub(crate) async fn init(config: &strongroom_server::Config) -> Result<Rendered> {
    let url = &config.database_url;
    let database = match strongroom_store::sqlite_path(url).context("database_url")? {
        Some(path) => format!("sqlite {}", shown(path)),
        None => strongroom_store::describe_database(url).context("database_url")?,
    };
    let before = strongroom_store::probe(url).await.with_context(|| format!("reaching {database}"))?;
    let dir = shown(&config.data_dir);
    master_key::create_private_dir(&config.data_dir).with_context(|| format!("creating {dir}"))?;
    let (keys, source) = master_key::load_or_create(&config.data_dir, std::env::var(master_key::MASTER_KEY_ENV).ok(), &OsRandom)
        .context("the master key")?;
    let store = strongroom_store::open(url).await.context("creating the store")?;
    let recorded = master_key::bind(&*store, &keys, &source, SystemClock.now()).await.context("master key")?;
    let version = strongroom_store::schema_version();
    let key = match &source {
        KeySource::Env => format!("from {} (not stored here)", master_key::MASTER_KEY_ENV),
        KeySource::File(p) => format!("{} (it matches the store)", shown(Path::new(p))),
        KeySource::Created(p) => format!("created at {}: back it up now, the store refuses any other", shown(Path::new(p))),
    };
    let (key_source, key_path) = match &source {
        KeySource::Env => ("environment", None),
        KeySource::File(p) => ("file", Some(shown(Path::new(p)))),
        KeySource::Created(p) => ("created", Some(shown(Path::new(p)))),
    };
    let created = before == Probe::Absent;
    let text = if created {
        format!(
            "initialised a new store: {database} (schema {version}) in the data directory {dir}\nmaster key {key}\n\
             `strongroom serve` makes the self-signed TLS certificate at its first start unless tls_cert and tls_key are set"
        )
    } else {
        let migrated = match before {
            Probe::Present { version: Some(v) } if v < version => format!(", migrated from schema {v} to {version}"),
            _ => String::new(),
        };
        format!("the store exists already: {database}{migrated}; nothing else was created\nmaster key {key}")
    };
    Ok(Rendered::done(
        text,
        json!({"created": created, "database": database, "data_dir": dir, "schema_version": version,
               "master_key": {"source": key_source, "path": key_path, "recorded": recorded}}),
    ))
}

/// `admin migrate-store`. Copies tables as they are (tokens stay keyed
/// hashes, values stay sealed): no master key is needed, and the target
/// needs the source's. A SQLite source that a `serve` holds is refused; a
/// SQLite source is copied from a snapshot of one moment (`VACUUM INTO`,
/// beside it, removed afterwards). Progress per table (on standard error
/// with `--json`), then the verified totals.
pub(crate) async fn migrate_store(from: &str, to: &str, json: bool) -> Result<Rendered> {
    let say = |line: String| {
        if json {
            eprintln!("{line}");
        } else {
            let _ = writeln!(std::io::stdout(), "{line}");
        }
    };
    let same = matches!(
        (strongroom_store::sqlite_path(from), strongroom_store::sqlite_path(to)),
        (Ok(Some(a)), Ok(Some(b))) if a == b
    );
    if from == to || same {
        bail!("migrate-store: --from and --to name the same store");
    }
    let mut snapshot: Option<Snapshot> = None;
    let source = match strongroom_store::sqlite_path(from).context("--from")? {
        Some(db) => {
            if !db.exists() {
                bail!("migrate-store: the source store {} not found (it is not created)", shown(db));
            }
            if let Some(served) = strongroom_store::sqlite::served_by(db) {
                bail!("migrate-store: {served}; writes it accepts during the copy would be missing from the copy");
            }
            let taken = Snapshot::take(db)?;
            say(format!("reading {} from a snapshot of one moment", shown(db)));
            let url = taken.path.display().to_string();
            snapshot = Some(taken);
            url
        }
        None => {
            eprintln!(
                "warning: migrate-store cannot tell whether servers write to a PostgreSQL source: stop them first (a copy that \
                 misses writes made meanwhile fails its final count check)"
            );
            from.to_owned()
        }
    };
    let done = strongroom_app::admin::migrate::migrate_store(&source, to, |table, rows| say(format!("copied {table}: {rows} rows"))).await;
    drop(snapshot);
    let done = done.context("migrate-store")?;
    let total: u64 = done.tables.iter().map(|(_, n)| n).sum();
    let tables: serde_json::Map<String, serde_json::Value> = done.tables.iter().map(|(t, n)| (t.to_string(), json!(n))).collect();
    Ok(Rendered::done(
        format!("verified: {total} rows in {} tables, event log intact: {} events", done.tables.len(), done.events),
        json!({"verified": true, "rows": total, "tables": tables, "events": done.events}),
    ))
}

/// A snapshot of a SQLite source beside it, removed when dropped.
#[derive(Debug)]
struct Snapshot {
    path: PathBuf,
}

impl Snapshot {
    fn take(db: &Path) -> Result<Snapshot> {
        let mut name = db.file_name().map(std::ffi::OsStr::to_os_string).unwrap_or_default();
        name.push(format!(".migrate-{}", std::process::id()));
        let path = db.with_file_name(name);
        strongroom_store::sqlite::snapshot(db, &path).with_context(|| format!("snapshot of {}", shown(db)))?;
        Ok(Snapshot { path })
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut p = self.path.as_os_str().to_owned();
            p.push(suffix);
            let _ = std::fs::remove_file(PathBuf::from(p));
        }
    }
}
