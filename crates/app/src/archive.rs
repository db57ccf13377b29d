//! The event log's archive: the oldest events written to a JSON Lines file
//! and deleted from the store, which keeps a checkpoint at the cut (the
//! last archived event's number and hash) so that what remains still
//! verifies, from there; and the file verifies on its own.
//!
//! An archive file is a header line, then one line per event, oldest
//! first:
//!
//! ```text
//! {"strongroom_event_archive":1,"after":{"seq":0,"hash":"00…"},"last":{"seq":120,"hash":"9f…"},"events":120,"written_at":"…"}
//! {"seq":1,"at_ms":1764054000123,"at":"2025-11-25T07:00:00Z","kind":"user.created","identity":"admin",…,"hash":"3a…"}
//! ```
//!
//! `after` is where the archive's chain starts (the checkpoint before it,
//! seq 0 and the all-zero hash for the log's beginning) and `last` where it
//! ends; each line's hash is recomputed from the one before, so an edited,
//! removed or reordered line, or a wrong header, is found
//! ([`verify_file`]). Archives made one after another link: each one's
//! `after` is the previous one's `last`, and the newest one's `last` is the
//! store's checkpoint.
//!
//! The file is written and synced under a temporary name, then linked to
//! its name (which must not exist), before anything is deleted; the store
//! then deletes the archived events in chunks, each one transaction that
//! moves the checkpoint only from where this archive started
//! ([`strongroom_store::EventStore::archive_events`]). Of two archives
//! racing from one checkpoint, one deletes; the other stops with
//! [`ArchiveError::Raced`] having deleted nothing.

use std::io::BufRead as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use strongroom_core::event::{ChainCheck, ChainError, Event, EventKind, GENESIS, StoredEvent};
use strongroom_core::time::UnixTime;
use strongroom_store::{EventFilter, Store, StoreError};

/// The format's version, the header's `strongroom_event_archive`.
const FORMAT: u32 = 1;
/// Events read per page, and deleted per transaction.
const CHUNK: u32 = 10_000;

#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{0} exists: an archive is never overwritten")]
    Exists(PathBuf),
    #[error("the stored event log is broken, nothing archived: {0}")]
    Chain(ChainError),
    #[error("{path}: not an event archive: {why}")]
    Format { path: PathBuf, why: String },
    #[error("{path}: the archive does not verify: {why}")]
    Broken { path: PathBuf, why: String },
    #[error(
        "another archive moved the log's start first; nothing was deleted by this one ({path} holds events that are also kept elsewhere)"
    )]
    Raced { path: PathBuf },
}

/// A point of the chain: an event's number and hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainPoint {
    pub seq: i64,
    #[serde(with = "hex_hash")]
    pub hash: [u8; 32],
}

impl From<(i64, [u8; 32])> for ChainPoint {
    fn from((seq, hash): (i64, [u8; 32])) -> Self {
        ChainPoint { seq, hash }
    }
}

/// The first line of an archive.
#[derive(Debug, Serialize, Deserialize)]
struct Header {
    strongroom_event_archive: u32,
    after: ChainPoint,
    last: ChainPoint,
    events: i64,
    written_at: String,
}

/// One event line.
#[derive(Debug, Serialize, Deserialize)]
struct Line {
    seq: i64,
    at_ms: i64,
    /// For people; `at_ms` is what the hash covers.
    at: String,
    kind: String,
    identity: String,
    client_id: String,
    source: String,
    request_id: String,
    object: String,
    detail: String,
    #[serde(with = "hex_hash")]
    hash: [u8; 32],
}

impl From<&StoredEvent> for Line {
    fn from(e: &StoredEvent) -> Self {
        let ev = &e.event;
        Line {
            seq: e.seq,
            at_ms: ev.at.millis(),
            at: ev.at.iso8601(),
            kind: ev.kind.as_str().to_owned(),
            identity: ev.identity.clone(),
            client_id: ev.client_id.clone(),
            source: ev.source.clone(),
            request_id: ev.request_id.clone(),
            object: ev.object.clone(),
            detail: ev.detail.clone(),
            hash: e.hash,
        }
    }
}

impl Line {
    fn into_event(self) -> Option<StoredEvent> {
        let event = Event {
            at: UnixTime::from_millis(self.at_ms),
            kind: EventKind::parse(&self.kind)?,
            identity: self.identity,
            client_id: self.client_id,
            source: self.source,
            request_id: self.request_id,
            object: self.object,
            detail: self.detail,
        };
        Some(StoredEvent { seq: self.seq, event, hash: self.hash, folder: None })
    }
}

mod hex_hash {
    use serde::{Deserialize as _, Deserializer, Serializer, de::Error as _};

    pub(super) fn serialize<S: Serializer>(h: &[u8; 32], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&strongroom_core::hex::encode(h))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u8; 32], D::Error> {
        let text = String::deserialize(d)?;
        strongroom_core::hex::decode::<32>(&text).ok_or_else(|| D::Error::custom("not a 32-byte hash"))
    }
}

/// What an archive holds: the events after `after` up to and including `last`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Archive {
    pub path: PathBuf,
    pub after: ChainPoint,
    pub last: ChainPoint,
    pub events: i64,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ArchiveError + '_ {
    move |source| ArchiveError::Io { path: path.to_owned(), source }
}

/// Where the stored log starts now (the log's beginning before any archive).
pub async fn checkpoint(store: &dyn Store) -> Result<ChainPoint, StoreError> {
    Ok(store.event_checkpoint().await?.unwrap_or((0, GENESIS)).into())
}

/// The newest event written before `before`, if it is after the checkpoint:
/// where an archive of the events before `before` would cut.
async fn cut_before(store: &dyn Store, from: ChainPoint, before: UnixTime) -> Result<Option<ChainPoint>, StoreError> {
    Ok(store.event_cut(before).await?.map(ChainPoint::from).filter(|c| c.seq > from.seq))
}

/// Archives the events written before `before` (every event up to the
/// newest of them, by sequence number) to the new file `to`, then deletes
/// them from the store, leaving a checkpoint there. `None` when there is
/// nothing to archive. The stored chain is verified as it is read: a broken
/// log is not archived.
pub async fn archive_before(store: &dyn Store, before: UnixTime, to: &Path, now: UnixTime) -> Result<Option<Archive>, ArchiveError> {
    let from = checkpoint(store).await?;
    let Some(last) = cut_before(store, from, before).await? else { return Ok(None) };
    if to.exists() {
        return Err(ArchiveError::Exists(to.to_owned()));
    }
    let tmp = to.with_extension("partial");
    let written = write(store, from, last, &tmp, now).await;
    let boundaries = match written {
        Ok(b) => b,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            // A gap where another archive deleted events meanwhile is a race, not a broken log.
            if matches!(e, ArchiveError::Chain(_)) && checkpoint(store).await? != from {
                return Err(ArchiveError::Raced { path: to.to_owned() });
            }
            return Err(e);
        }
    };
    // Linked, not renamed: an archive that appeared meanwhile is not replaced.
    let linked = std::fs::hard_link(&tmp, to);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Err(ArchiveError::Exists(to.to_owned())),
        Err(e) => return Err(io(to)(e)),
    }
    sync_dir(to)?;
    let mut at = from.seq;
    for b in boundaries {
        if !store.archive_events(at, (b.seq, b.hash)).await? {
            if at == from.seq {
                return Err(ArchiveError::Raced { path: to.to_owned() });
            }
            // Chunks up to `at` are deleted and in this file; the rest is not.
            return Err(ArchiveError::Store(StoreError::other(format!(
                "the log's start moved at event {at} while archiving; {} holds events up to {} of which those after {at} are still stored",
                to.display(),
                last.seq
            ))));
        }
        at = b.seq;
    }
    let archive = Archive { path: to.to_owned(), after: from, last, events: last.seq - from.seq };
    let name = to.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let event = Event::new(EventKind::EventsArchived, now)
        .identity("admin")
        .object(format!("{}..={}", from.seq + 1, last.seq))
        .detail(format!("{} events archived to {name}; the log now starts after event {}", archive.events, last.seq));
    store.append_event(event).await?;
    Ok(Some(archive))
}

/// Writes the events after `from` up to `last` to `path` (created new,
/// mode 0600, synced), checking the chain as it goes. Returns where to cut
/// the deletion into transactions: every [`CHUNK`] events, and `last`.
async fn write(store: &dyn Store, from: ChainPoint, last: ChainPoint, path: &Path, now: UnixTime) -> Result<Vec<ChainPoint>, ArchiveError> {
    let file = std::fs::OpenOptions::new().write(true).create_new(true).mode_private().open(path).map_err(io(path))?;
    let mut out = std::io::BufWriter::new(file);
    let header = Header { strongroom_event_archive: FORMAT, after: from, last, events: last.seq - from.seq, written_at: now.iso8601() };
    writeln_json(&mut out, &header, path)?;
    let mut check = ChainCheck::after((from.seq, from.hash));
    let mut boundaries = Vec::new();
    let mut after = from.seq;
    while after < last.seq {
        let page = store.events(EventFilter { after_seq: Some(after), limit: CHUNK, ..Default::default() }).await?;
        let Some(end) = page.last().map(|e| e.seq) else { break };
        for e in page.iter().take_while(|e| e.seq <= last.seq) {
            check.push(e).map_err(ArchiveError::Chain)?;
            writeln_json(&mut out, &Line::from(e), path)?;
            if (e.seq - from.seq) % i64::from(CHUNK) == 0 && e.seq < last.seq {
                boundaries.push(ChainPoint { seq: e.seq, hash: e.hash });
            }
        }
        after = end;
    }
    check.finish((last.seq, last.hash)).map_err(ArchiveError::Chain)?;
    boundaries.push(last);
    let file = out.into_inner().map_err(|e| io(path)(e.into_error()))?;
    file.sync_all().map_err(io(path))?;
    Ok(boundaries)
}

fn writeln_json<T: Serialize>(out: &mut impl std::io::Write, value: &T, path: &Path) -> Result<(), ArchiveError> {
    serde_json::to_writer(&mut *out, value).map_err(|e| io(path)(e.into()))?;
    out.write_all(b"\n").map_err(io(path))
}

trait PrivateMode {
    fn mode_private(&mut self) -> &mut Self;
}

impl PrivateMode for std::fs::OpenOptions {
    fn mode_private(&mut self) -> &mut Self {
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            self.mode(0o600);
        }
        self
    }
}

fn sync_dir(path: &Path) -> Result<(), ArchiveError> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(io(dir))
}

/// Reads and verifies an archive on its own: every line links to the one
/// before, from the header's `after` to its `last`, and the count matches.
pub fn verify_file(path: &Path) -> Result<Archive, ArchiveError> {
    let format = |why: String| ArchiveError::Format { path: path.to_owned(), why };
    let broken = |why: String| ArchiveError::Broken { path: path.to_owned(), why };
    let file = std::fs::File::open(path).map_err(io(path))?;
    let mut lines = std::io::BufReader::new(file).lines();
    let first = lines.next().ok_or_else(|| format("it is empty".into()))?.map_err(io(path))?;
    let header: Header = serde_json::from_str(&first).map_err(|e| format(format!("line 1: {e}")))?;
    if header.strongroom_event_archive != FORMAT {
        return Err(format(format!("format {}, this version reads {FORMAT}", header.strongroom_event_archive)));
    }
    let mut check = ChainCheck::after((header.after.seq, header.after.hash));
    let mut n = 0i64;
    for (i, line) in lines.enumerate() {
        let line = line.map_err(io(path))?;
        let e: Line = serde_json::from_str(&line).map_err(|e| broken(format!("line {}: {e}", i + 2)))?;
        let e = e.into_event().ok_or_else(|| broken(format!("line {}: an unknown event kind", i + 2)))?;
        check.push(&e).map_err(|c| broken(format!("line {}: {c}", i + 2)))?;
        n += 1;
    }
    check.finish((header.last.seq, header.last.hash)).map_err(|c| broken(c.to_string()))?;
    if n != header.events {
        return Err(broken(format!("{n} events, the header says {}", header.events)));
    }
    Ok(Archive { path: path.to_owned(), after: header.after, last: header.last, events: n })
}

/// Verifies archives in the order given and that each one starts where the
/// one before ended. Returns them.
pub fn verify_files(paths: &[PathBuf]) -> Result<Vec<Archive>, ArchiveError> {
    let mut out: Vec<Archive> = Vec::new();
    for p in paths {
        let a = verify_file(p)?;
        if let Some(prev) = out.last()
            && prev.last != a.after
        {
            return Err(ArchiveError::Broken {
                path: p.clone(),
                why: format!("it starts after event {}, but {} ends at event {}", a.after.seq, prev.path.display(), prev.last.seq),
            });
        }
        out.push(a);
    }
    Ok(out)
}

/// The retention setting's archive: the events older than `days` days go
/// to a new file in `dir` named after the events it holds.
pub async fn archive_older_than(store: &dyn Store, days: u32, dir: &Path, now: UnixTime) -> Result<Option<Archive>, ArchiveError> {
    strongroom_proto::files::create_private_dir(dir).map_err(io(dir))?;
    let before = now.plus_secs(-i64::from(days) * 86_400);
    let from = checkpoint(store).await?;
    let Some(last) = cut_before(store, from, before).await? else { return Ok(None) };
    let to = dir.join(format!("events-{:012}-{:012}-{}.jsonl", from.seq + 1, last.seq, now.secs()));
    match archive_before(store, before, &to, now).await {
        Err(ArchiveError::Raced { path }) => {
            // Another replica archived first: its file holds these events.
            let _ = std::fs::remove_file(&path);
            Ok(None)
        }
        other => other,
    }
}
