//! `strongroom admin events ...`: the newest events first with a footer
//! saying how many more there are, oldest first from a sequence number,
//! `--follow`, `verify` (of the stored log and of archive files), and
//! `archive`.

use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use serde_json::json;
use std::collections::HashMap;
use std::io::Write as _;
use std::time::Duration;

use std::path::PathBuf;
use strongroom_app::admin::Admin;
use strongroom_app::archive::{self, ChainPoint};
use strongroom_client::ClientError;
use strongroom_client::admin::{BROWSE_MAX, identity_type};
use strongroom_core::event::StoredEvent;
use strongroom_core::time::UnixTime;
use strongroom_proto::vedsdk::LogEvent;
use strongroom_store::EventFilter;

use super::remote::not_over_api;
use super::{Rendered, Target, hex, time};

#[derive(Debug, Subcommand)]
pub(crate) enum EventsCommand {
    /// List events: the newest first (the newest --limit of them), then a
    /// line saying how many more there are and how to see them. With
    /// --after SEQ (or --oldest-first): oldest first from there.
    List(ListArgs),
    /// Check the hash chain of the stored log (from the checkpoint the last
    /// archive left), and of archive files given with --archive.
    Verify(VerifyArgs),
    /// Write the events older than a date to a new JSON Lines file and
    /// delete them from the store, leaving a checkpoint: `events verify`
    /// still proves what remains, and the file verifies on its own.
    Archive(ArchiveArgs),
}

#[derive(Debug, Args)]
pub(crate) struct VerifyArgs {
    /// An archive file to verify on its own (repeat for several, oldest
    /// first: each must start where the one before ended, and the newest
    /// should end where the stored log starts).
    #[arg(long, value_name = "FILE")]
    archive: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct ArchiveArgs {
    /// Archive the events written before this moment: YYYY-MM-DD (midnight
    /// UTC) or YYYY-MM-DDTHH:MM:SSZ.
    #[arg(long, value_name = "DATE", value_parser = parse_moment)]
    before: UnixTime,
    /// The archive to write (it must not exist; mode 0600).
    #[arg(long, value_name = "FILE")]
    to: PathBuf,
}

/// `YYYY-MM-DD` (midnight UTC) or `YYYY-MM-DDTHH:MM:SS[.f]Z`.
fn parse_moment(s: &str) -> Result<UnixTime, String> {
    let full = if s.len() == 10 { format!("{s}T00:00:00Z") } else { s.to_owned() };
    strongroom_proto::time::parse_date(&full)
        .map(|ticks| UnixTime::from_millis(ticks / (strongroom_proto::time::TICKS_PER_SEC / 1000)))
        .ok_or_else(|| format!("{s:?} is not a date: YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ"))
}

#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// Only this kind, e.g. token.issued.
    #[arg(long)]
    kind: Option<String>,
    /// Only events after this sequence number, oldest first (page forwards with the last one shown).
    #[arg(long, value_name = "SEQ")]
    after: Option<i64>,
    /// Only events before this sequence number (page backwards with the oldest one shown).
    #[arg(long, value_name = "SEQ")]
    before: Option<i64>,
    /// How many events to show.
    #[arg(long, default_value_t = 100)]
    limit: u32,
    /// Skip this many of the events that match first (page back with --offset
    /// and --limit; over the API, where --before and --after are not offered).
    #[arg(long, default_value_t = 0)]
    offset: u32,
    /// The oldest events first.
    #[arg(long)]
    oldest_first: bool,
    /// Print the newest --limit events (oldest of them first), then every new
    /// one as it is written, until interrupted. One line per event; with
    /// --json one JSON object per line.
    #[arg(long, conflicts_with_all = ["before", "oldest_first"])]
    pub(crate) follow: bool,
}

impl ListArgs {
    fn filter(&self) -> EventFilter {
        EventFilter {
            kind: self.kind.clone(),
            after_seq: self.after,
            before_seq: self.before,
            newest_first: !self.oldest_first && self.after.is_none(),
            limit: self.limit.clamp(1, 10_000),
            offset: self.offset,
            ..Default::default()
        }
    }
}

/// Past this many, the footer stops counting ("more than …").
const COUNT_CAP: u64 = 100_000;

impl ListArgs {
    /// The query of `GET /vedsdk/Log` for these options: what the API can
    /// filter by (the kind, the limit, the offset), newest first.
    fn query(&self) -> Result<Vec<(&'static str, String)>> {
        if self.after.is_some() || self.before.is_some() || self.oldest_first {
            return Err(not_over_api("events list --after/--before/--oldest-first (GET Log pages newest first: use --offset)"));
        }
        let mut q = vec![("Limit", self.limit.clamp(1, API_MAX_LIMIT).to_string())];
        if self.offset > 0 {
            q.push(("Offset", self.offset.to_string()));
        }
        if let Some(k) = &self.kind {
            q.push(("Kind", k.clone()));
        }
        Ok(q)
    }
}

/// The most events one `GET Log` answers.
const API_MAX_LIMIT: u32 = 1000;

/// One event as listed: from the store, or from `GET Log`'s `LogEvents`
/// (which carry the same facts, see book/src/administration/event-log.md).
pub(crate) struct EventRow {
    seq: i64,
    at: String,
    kind: String,
    identity: String,
    client_id: String,
    object: String,
    source: String,
    request_id: String,
    detail: String,
    hash: String,
}

impl From<&StoredEvent> for EventRow {
    fn from(e: &StoredEvent) -> EventRow {
        let ev = &e.event;
        EventRow {
            seq: e.seq,
            at: time(ev.at),
            kind: ev.kind.to_string(),
            identity: ev.identity.clone(),
            client_id: ev.client_id.clone(),
            object: ev.object.clone(),
            source: ev.source.clone(),
            request_id: ev.request_id.clone(),
            detail: ev.detail.clone(),
            hash: hex(&e.hash),
        }
    }
}

impl From<LogEvent> for EventRow {
    fn from(e: LogEvent) -> EventRow {
        EventRow {
            seq: e.grouping,
            at: e.server_timestamp,
            kind: e.name,
            identity: e.text1,
            client_id: e.data,
            object: e.object,
            source: e.source_ip,
            request_id: e.request_id,
            detail: e.text2,
            hash: e.hash,
        }
    }
}

/// Identities (`local:{…}`) to user names, for the IDENTITY column. Over
/// the API: `Identity/Browse`, which needs scope `configuration`; without
/// it the identities are shown alone.
async fn names(target: &Target) -> Result<HashMap<String, String>> {
    Ok(match target {
        Target::Store(admin) => admin.list_users().await?.into_iter().map(|u| (u.id.identity(), u.name)).collect(),
        Target::Server(api) => match api.browse("", BROWSE_MAX, identity_type::USER).await {
            Ok(users) => users.into_iter().map(|u| (u.prefixed_universal, u.name)).collect(),
            Err(ClientError::Forbidden(_)) => HashMap::new(),
            Err(e) => return Err(e.into()),
        },
    })
}

/// `local:{…} (alice)`, or the identity as stored (`admin`, empty, or a
/// deleted user's).
fn identity_shown(identity: &str, names: &HashMap<String, String>) -> String {
    match names.get(identity) {
        Some(n) => format!("{identity} ({n})"),
        None => identity.to_owned(),
    }
}

fn json_of(e: &EventRow, names: &HashMap<String, String>) -> serde_json::Value {
    json!({"seq": e.seq, "at": e.at, "kind": e.kind, "identity": e.identity, "user": names.get(&e.identity),
           "client_id": e.client_id, "object": e.object, "source": e.source, "request_id": e.request_id, "detail": e.detail,
           "hash": e.hash})
}

/// The listing of `events list`.
fn listing(events: &[EventRow], names: &HashMap<String, String>) -> Rendered {
    let rows: Vec<Vec<String>> = events
        .iter()
        .map(|e| {
            vec![
                e.seq.to_string(),
                e.at.clone(),
                e.kind.clone(),
                identity_shown(&e.identity, names),
                e.client_id.clone(),
                e.object.clone(),
                e.source.clone(),
                e.request_id.clone(),
                e.detail.clone(),
            ]
        })
        .collect();
    let list: Vec<_> = events.iter().map(|e| json_of(e, names)).collect();
    Rendered::table(&["SEQ", "AT", "KIND", "IDENTITY", "CLIENT", "OBJECT", "SOURCE", "REQUEST", "DETAIL"], &rows, "no events", json!(list))
}

/// How many events the filter matches beyond those shown: on the far side of
/// `edge` (below it when listing newest first, above it otherwise). Without a
/// kind the sequence numbers say it (they run from 1 without gaps); with one
/// the rest is counted, up to [`COUNT_CAP`].
async fn remaining(admin: &Admin, f: &EventFilter, edge: i64) -> Result<(u64, bool)> {
    if f.kind.is_none() {
        // Archived events are no longer stored: the stored log starts after the checkpoint.
        let start = admin.store.event_checkpoint().await?.map_or(0, |c| c.0);
        let n = if f.newest_first {
            edge - 1 - f.after_seq.unwrap_or(0).max(start)
        } else {
            f.before_seq.map_or(admin.store.event_head().await?.0, |b| b - 1) - edge
        };
        return Ok((u64::try_from(n).unwrap_or(0), false));
    }
    let mut n = 0u64;
    let mut page = EventFilter { limit: 10_000, ..f.clone() };
    if f.newest_first {
        page.before_seq = Some(edge);
    } else {
        page.after_seq = Some(edge);
    }
    loop {
        let events = admin.events(page.clone()).await?;
        n += events.len() as u64;
        let Some(last) = events.last() else { break };
        if events.len() < 10_000 {
            break;
        }
        if n >= COUNT_CAP {
            return Ok((n, true));
        }
        if f.newest_first {
            page.before_seq = Some(last.seq);
        } else {
            page.after_seq = Some(last.seq);
        }
    }
    Ok((n, false))
}

pub(crate) async fn run(target: &Target, command: EventsCommand) -> Result<Rendered> {
    let admin = match (target, command) {
        (Target::Server(api), EventsCommand::List(args)) => {
            let events: Vec<EventRow> = api.log(&args.query()?).await?.into_iter().map(EventRow::from).collect();
            let mut r = listing(&events, &names(target).await?);
            let limit = args.limit.clamp(1, API_MAX_LIMIT);
            if events.len() as u32 == limit {
                r.text.push_str(&format!(
                    "… older events may not be shown: --offset {} for the next {limit}\n",
                    args.offset.saturating_add(limit)
                ));
            }
            return Ok(r);
        }
        (Target::Server(_), EventsCommand::Verify(_)) => return Err(not_over_api("events verify")),
        (Target::Server(_), EventsCommand::Archive(_)) => return Err(not_over_api("events archive")),
        (Target::Store(admin), command) => (admin, command),
    };
    let (admin, command) = admin;
    match command {
        EventsCommand::Verify(args) => verify(admin, &args.archive).await,
        EventsCommand::Archive(args) => {
            let now = admin.clock.now();
            match archive::archive_before(&*admin.store, args.before, &args.to, now).await? {
                None => Ok(Rendered::done(
                    format!("no events before {} to archive (the stored log starts after event {})", time(args.before), {
                        archive::checkpoint(&*admin.store).await?.seq
                    }),
                    json!({"archived": 0}),
                )),
                Some(a) => Ok(Rendered::done(
                    format!(
                        "archived {} events ({}..={}) to {}; the stored log now starts after event {} (hash {})",
                        a.events,
                        a.after.seq + 1,
                        a.last.seq,
                        a.path.display(),
                        a.last.seq,
                        hex(&a.last.hash)
                    ),
                    json!({"archived": a.events, "first": a.after.seq + 1, "last": a.last.seq, "file": a.path, "last_hash": hex(&a.last.hash)}),
                )),
            }
        }
        EventsCommand::List(args) => {
            let f = args.filter();
            let events: Vec<EventRow> = admin.events(f.clone()).await?.iter().map(EventRow::from).collect();
            let mut r = listing(&events, &names(target).await?);
            // The footer (text only: --json stays one array; scripts page with --after until a page is short).
            if let Some(edge) = events.last().map(|e| e.seq) {
                let (more, capped) = remaining(admin, &f, edge).await?;
                if more > 0 {
                    let n = if capped { format!("more than {more}") } else { more.to_string() };
                    let (which, how) =
                        if f.newest_first { ("older", format!("--before {edge}")) } else { ("newer", format!("--after {edge}")) };
                    r.text.push_str(&format!(
                        "… {n} {which} {} not shown: {how} for the next {}, or a larger --limit\n",
                        if more == 1 && !capped { "event" } else { "events" },
                        f.limit
                    ));
                }
            }
            Ok(r)
        }
    }
}

/// `events verify [--archive FILE]…`: the archives on their own and linked
/// one after another, then the stored log from its checkpoint (and whether
/// the newest archive ends where it starts).
async fn verify(admin: &Admin, files: &[PathBuf]) -> Result<Rendered> {
    let archives = archive::verify_files(files)?;
    let stored = admin.verify_events().await.map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut text = String::new();
    for a in &archives {
        text.push_str(&format!("archive {} intact: {} events ({}..={})\n", a.path.display(), a.events, a.after.seq + 1, a.last.seq));
    }
    let start = stored.checkpoint.map_or(0, |c| c.0);
    if let Some(newest) = archives.last() {
        if stored.checkpoint.map(ChainPoint::from) != Some(newest.last) {
            bail!("{} ends at event {}, but the stored log starts after event {start}", newest.path.display(), newest.last.seq);
        }
        text.push_str("the archives and the stored log form one chain\n");
    }
    text.push_str(&match stored.checkpoint {
        None => format!("event log intact: {} events", stored.events),
        Some((seq, _)) => format!("event log intact: {} events after event {seq} (the earlier ones archived)", stored.events),
    });
    let list: Vec<_> =
        archives.iter().map(|a| json!({"file": a.path, "events": a.events, "first": a.after.seq + 1, "last": a.last.seq})).collect();
    Ok(Rendered::done(text, json!({"intact": true, "events": stored.events, "starts_after": start, "archives": list})))
}

/// One event as a line of `--follow`: `SEQ AT KIND key=value …`.
fn line_of(e: &EventRow, names: &HashMap<String, String>) -> String {
    let mut line = format!("{} {} {}", e.seq, e.at, e.kind);
    for (k, v) in [
        ("identity", identity_shown(&e.identity, names)),
        ("client", e.client_id.clone()),
        ("object", e.object.clone()),
        ("source", e.source.clone()),
        ("request", e.request_id.clone()),
        ("detail", e.detail.clone()),
    ] {
        if !v.is_empty() {
            line.push_str(&format!(" {k}={v:?}"));
        }
    }
    line
}

/// The events after `last` (oldest first; at most 1000 from the store): on
/// the store by sequence number; over the API, `GET Log` pages (newest
/// first) until one reaches `last`.
async fn newer(target: &Target, f: &EventFilter, args: &ListArgs, last: i64) -> Result<Vec<EventRow>> {
    match target {
        Target::Store(admin) => Ok(admin
            .events(EventFilter { after_seq: Some(last), limit: 1000, newest_first: false, before_seq: None, ..f.clone() })
            .await?
            .iter()
            .map(EventRow::from)
            .collect()),
        Target::Server(api) => {
            let mut found = Vec::new();
            let mut offset = 0u32;
            loop {
                let mut q = vec![("Limit", API_MAX_LIMIT.to_string()), ("Offset", offset.to_string())];
                if let Some(k) = &args.kind {
                    q.push(("Kind", k.clone()));
                }
                let page = api.log(&q).await?;
                let n = page.len();
                let mut reached = false;
                for e in page {
                    if e.grouping <= last {
                        reached = true;
                        break;
                    }
                    found.push(EventRow::from(e));
                }
                if reached || n < API_MAX_LIMIT as usize {
                    break;
                }
                offset += API_MAX_LIMIT;
            }
            found.reverse();
            Ok(found)
        }
    }
}

/// `events list --follow`: the newest events, oldest of them first, then
/// every new one as it comes (polled once a second), until Ctrl-C or
/// SIGTERM (or the reader of the output goes away).
pub(crate) async fn follow(target: &Target, args: ListArgs, json: bool) -> Result<()> {
    let f = EventFilter { newest_first: true, ..args.filter() };
    let mut first: Vec<EventRow> = match target {
        Target::Store(admin) => admin.events(f.clone()).await?.iter().map(EventRow::from).collect(),
        Target::Server(api) => api.log(&args.query()?).await?.into_iter().map(EventRow::from).collect(),
    };
    first.reverse();
    let mut names = names(target).await?;
    let mut last = args.after.unwrap_or(0);
    let print = |events: &[EventRow], names: &HashMap<String, String>| -> Result<()> {
        let mut out = std::io::stdout().lock();
        for e in events {
            if json {
                writeln!(out, "{}", json_of(e, names))?;
            } else {
                writeln!(out, "{}", line_of(e, names))?;
            }
        }
        out.flush()?;
        Ok(())
    };
    print(&first, &names)?;
    if let Some(e) = first.last() {
        last = last.max(e.seq);
    }
    if !json {
        eprintln!("(following: new events appear as they are written; Ctrl-C to stop)");
    }
    let stop = stop_signal();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => return Ok(()),
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
        loop {
            let page = newer(target, &f, &args, last).await?;
            let Some(newest) = page.last() else { break };
            last = newest.seq;
            if page.iter().any(|e| !e.identity.is_empty() && !names.contains_key(&e.identity)) {
                names = self::names(target).await?;
            }
            print(&page, &names)?;
            if page.len() < 1000 || matches!(target, Target::Server(_)) {
                break;
            }
        }
    }
}

async fn stop_signal() {
    #[cfg(unix)]
    {
        let term = async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut s) => {
                    s.recv().await;
                }
                Err(_) => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            () = term => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follow_lines_quote_their_values_and_name_the_user() {
        let mut e = StoredEvent {
            seq: 7,
            event: strongroom_core::event::Event::new(
                strongroom_core::event::EventKind::TokenIssued,
                strongroom_core::time::UnixTime::from_secs(0),
            )
            .identity("local:{u1}")
            .client_id("app"),
            hash: [0; 32],
            folder: None,
        };
        e.event.detail = "a \"quoted\" word".into();
        let names = HashMap::from([("local:{u1}".to_owned(), "alice".to_owned())]);
        assert_eq!(
            line_of(&EventRow::from(&e), &names),
            "7 1970-01-01T00:00:00Z token.issued identity=\"local:{u1} (alice)\" client=\"app\" detail=\"a \\\"quoted\\\" word\""
        );
    }
}
