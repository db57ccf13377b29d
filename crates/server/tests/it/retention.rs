//! The event log's retention on the manual clock: events older than the
//! retention go to an archive file and leave the store; two replicas
//! archiving at once keep every event exactly once (one file, the other
//! archive withdrawn); the stored log and the files verify, and a file
//! edited afterwards does not.

use strongroom_app::archive::{self, ArchiveError};
use strongroom_core::event::EventKind;
use strongroom_core::time::Clock as _;

use crate::support::TestServer;

async fn folders(s: &TestServer, names: std::ops::Range<u32>) {
    for n in names {
        s.admin.create_folder(&format!("\\VED\\Policy\\R{n}")).await.unwrap();
    }
}

#[tokio::test]
async fn retention_archives_old_events_once_even_when_replicas_race() {
    let s = TestServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    folders(&s, 0..20).await;
    let head = s.store.event_head().await.unwrap().0;
    // Nothing is older than a day yet.
    assert_eq!(archive::archive_older_than(&*s.store, 1, dir.path(), s.clock.now()).await.unwrap(), None);
    s.clock.advance_secs(2 * 86_400);
    folders(&s, 20..25).await;

    // Two replicas' janitors at once, on one store and one archive directory.
    let (a, b) = tokio::join!(
        archive::archive_older_than(&*s.store, 1, dir.path(), s.clock.now()),
        archive::archive_older_than(&*s.store, 1, dir.path(), s.clock.now().plus_millis(1000)),
    );
    let archived: Vec<_> = [a.unwrap(), b.unwrap()].into_iter().flatten().collect();
    assert_eq!(archived.len(), 1, "one archive wins: {archived:?}");
    let files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files, [archived[0].path.clone()], "the other archive's file is withdrawn");
    let back = archive::verify_file(&files[0]).unwrap();
    assert_eq!((back.after.seq, back.last.seq, back.events), (0, head, head), "every event older than a day, once");
    assert_eq!(archive::checkpoint(&*s.store).await.unwrap(), back.last);
    let verified = s.admin.verify_events().await.unwrap();
    assert_eq!(verified.checkpoint.map(|c| c.0), Some(head));
    assert_eq!(verified.events, 6, "the five newer folders and the archive's own event");
    assert_eq!(s.event_kinds().await.last().map(String::as_str), Some(EventKind::EventsArchived.as_str()));
    // Nothing more is old enough: no new file.
    assert_eq!(archive::archive_older_than(&*s.store, 1, dir.path(), s.clock.now()).await.unwrap(), None);

    // A file edited afterwards does not verify: a changed field, a line removed, a header that lies.
    let text = std::fs::read_to_string(&files[0]).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    for (what, edited) in [
        ("a detail changed", text.replacen("R3", "R9", 1)),
        ("a line removed", [&lines[..4], &lines[5..]].concat().join("\n")),
        ("the header's count", text.replacen(&format!("\"events\":{head}"), &format!("\"events\":{}", head + 1), 1)),
    ] {
        assert_ne!(edited, text, "{what}: the edit changed the file");
        let copy = dir.path().join("edited.jsonl");
        std::fs::write(&copy, edited).unwrap();
        assert!(matches!(archive::verify_file(&copy), Err(ArchiveError::Broken { .. })), "{what} went unnoticed");
    }
    s.stop().await;
}
