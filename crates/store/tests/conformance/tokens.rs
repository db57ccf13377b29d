//! Cases for the grant-keyed token layout and the event log's archive:
//! thousands of refreshes of one grant leave one row of token storage;
//! archiving moves the log's start, once, under racing archivers. (A grant
//! of before the locators is ended by migration 0014:
//! `sqlite::upgrade_tests`.)

use std::sync::Arc;

use strongroom_core::event::{ChainCheck, EventKind};
use strongroom_core::grant::refresh::Refresh;
use strongroom_core::grant::{Grant, IssuedTokens, OLDER_ACCESS_KEPT};
use strongroom_core::integration::TokenSettings;
use strongroom_core::random::Random;
use strongroom_core::scope::Scope;
use strongroom_core::time::UnixTime;
use strongroom_core::token::{Presented, TokenKey};
use strongroom_store::transfer::Transfer;
use strongroom_store::{EventFilter, PairChange, Store};

use crate::cases::{KEY, T0, ev, first_pair, integration, rng, user};
use crate::kinds::table;

/// One refresh as the service makes it, at `now` with a retry window of
/// `window` seconds: the decision, and the new pair if one was written.
async fn refresh(store: &dyn Store, rng: &dyn Random, presented: Presented, now: UnixTime, window: i64) -> (Refresh, Option<IssuedTokens>) {
    let ctx = store.refresh_context(presented).await.unwrap().expect("the token's grant is found");
    let decision = ctx.decide("app", now, window);
    let g = &ctx.grant;
    let t = IssuedTokens::mint(&TokenKey::new(KEY), rng, g, now);
    let change = match decision {
        Refresh::Rotate => PairChange::rotation(g, presented.hash, &t),
        Refresh::Retry => PairChange::replacing(g, &t),
        Refresh::Reuse => {
            store.revoke_grant(g.id.clone(), now, ev(EventKind::RefreshTokenReuse)).await.unwrap();
            return (decision, None);
        }
        Refresh::Reject(_) => return (decision, None),
    };
    assert!(store.advance_pair(g.id.clone(), g.version, change, ev(EventKind::TokenRefreshed)).await.unwrap());
    (decision, Some(t))
}

/// Ten thousand refreshes of one grant leave its token storage as it was:
/// one grant row, and no table of tokens at all; its earlier access tokens kept at most
/// [`OLDER_ACCESS_KEPT`]; the first refresh token, spent ten thousand
/// generations ago, is still recognised as reuse.
pub(crate) async fn ten_thousand_refreshes_leave_one_row(store: Arc<dyn Store>, copier: Arc<dyn Transfer>) {
    const REFRESHES: u32 = 10_000;
    let rng = rng();
    let alice = user(&*store, &rng, "alice").await;
    store.create_integration(integration("app"), ev(EventKind::IntegrationCreated)).await.unwrap();
    let mut grant = Grant::new(&rng, "app", alice.id.clone(), Scope::parse("restricted").unwrap(), T0, TokenSettings::default());
    let first = first_pair(&rng, &mut grant);
    store.insert_grant(grant, ev(EventKind::TokenIssued)).await.unwrap();
    let mut current = first.refresh_presented().unwrap();
    for i in 1..=REFRESHES {
        // A millisecond apart: every earlier access token is still unexpired.
        let (decision, next) = refresh(&*store, &rng, current, T0.plus_millis(i64::from(i)), 30).await;
        assert_eq!(decision, Refresh::Rotate, "refresh {i}");
        current = next.unwrap().refresh_presented().unwrap();
    }
    assert_eq!(copier.count(table("grants")).await.unwrap(), 1, "one row: the grant's");
    let per_token: Vec<&str> = strongroom_store::transfer::TABLES.iter().map(|t| t.name).filter(|n| n.ends_with("_tokens")).collect();
    assert_eq!(per_token, Vec::<&str>::new(), "no table stores tokens one by one");
    let g = store.refresh_context(current).await.unwrap().unwrap().grant;
    assert_eq!((g.pair.generation, g.older_access.len()), (REFRESHES, OLDER_ACCESS_KEPT));
    let (oldest, _) = refresh(&*store, &rng, first.refresh_presented().unwrap(), T0.plus_secs(3600), 30).await;
    assert_eq!(oldest, Refresh::Reuse, "a token spent {REFRESHES} generations ago is reuse");
}

/// Archiving moves the log's start: the events up to the cut are deleted
/// and the cut becomes the checkpoint, from which what remains verifies.
/// Of archivers racing from one checkpoint exactly one moves it; a cut
/// whose hash is not the stored one, or from a checkpoint that moved, changes nothing.
pub(crate) async fn archiving_moves_the_logs_start_once(store: Arc<dyn Store>) {
    let rng = rng();
    for i in 0..40 {
        store.append_event(ev(EventKind::ClientLog).object(format!("e{i}"))).await.unwrap();
    }
    user(&*store, &rng, "alice").await;
    assert_eq!(store.event_checkpoint().await.unwrap(), None, "no archive yet");
    let all = store.events(EventFilter { limit: 100, ..Default::default() }).await.unwrap();
    let at = |seq: i64| all.iter().find(|e| e.seq == seq).map(|e| (e.seq, e.hash)).unwrap();
    assert!(!store.archive_events(0, (10, [0; 32])).await.unwrap(), "a hash that is not event 10's");
    assert!(!store.archive_events(5, at(10)).await.unwrap(), "from a checkpoint that is not there");

    // Eight archivers at once from the start, each to its own cut.
    let mut tasks = Vec::new();
    for cut in 10..18 {
        let (store, through) = (store.clone(), at(cut));
        tasks.push(tokio::spawn(async move { store.archive_events(0, through).await.unwrap().then_some(through) }));
    }
    let mut won = Vec::new();
    for t in tasks {
        won.extend(t.await.unwrap());
    }
    assert_eq!(won.len(), 1, "exactly one archiver moves the checkpoint: {won:?}");
    let cut = won[0];
    assert_eq!(store.event_checkpoint().await.unwrap(), Some(cut));
    let left = store.events(EventFilter { limit: 100, ..Default::default() }).await.unwrap();
    assert_eq!(left.first().map(|e| e.seq), Some(cut.0 + 1), "the events up to the cut are gone, the rest are there");
    let mut check = ChainCheck::after(cut);
    for e in &left {
        check.push(e).unwrap();
    }
    assert_eq!(check.finish(store.event_head().await.unwrap()), Ok(41 - cut.0), "what remains verifies from the checkpoint");
    assert!(!store.archive_events(0, at(30)).await.unwrap(), "the checkpoint moved: from 0 is stale");
    assert!(store.archive_events(cut.0, at(30)).await.unwrap(), "the next archive starts at the checkpoint");
    assert_eq!(store.event_checkpoint().await.unwrap(), Some(at(30)));
    // New events go on after the archive as before.
    store.append_event(ev(EventKind::ClientLog)).await.unwrap();
    assert_eq!(store.event_head().await.unwrap().0, 42);
}
