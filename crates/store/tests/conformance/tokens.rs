//! Cases for the grant-keyed token layout and the event log's archive:
//! grants stored before tokens carried locators keep working until they
//! end; thousands of refreshes of one grant leave one row of token
//! storage; archiving moves the log's start, once, under racing archivers.

use std::sync::Arc;

use strongroom_core::event::{ChainCheck, EventKind};
use strongroom_core::grant::refresh::Refresh;
use strongroom_core::grant::{Grant, IssuedTokens, OLDER_ACCESS_KEPT, Pair};
use strongroom_core::integration::TokenSettings;
use strongroom_core::random::Random;
use strongroom_core::scope::Scope;
use strongroom_core::secret::Secret;
use strongroom_core::time::UnixTime;
use strongroom_core::token::{Presented, TokenKey, TokenKind, mint_token};
use strongroom_store::transfer::Transfer;
use strongroom_store::{EventFilter, PairChange, Store};

use crate::cases::{KEY, T0, ev, first_pair, integration, rng, user};
use crate::kinds::{legacy_access_row, legacy_refresh_row, table};

/// A token of the layout before locators (34 random bytes), as a client
/// holding one presents it now.
fn old_token(rng: &dyn Random, kind: TokenKind) -> (Secret, Presented) {
    let t = mint_token(rng);
    let p = TokenKey::new(KEY).presented(kind, t.expose());
    assert_eq!(p.at, None, "a random token carries no locator");
    (t, p)
}

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

async fn works(store: &dyn Store, access: Presented, now: UnixTime) -> bool {
    store.access_context(access).await.unwrap().is_some_and(|c| c.check(now).is_ok())
}

/// Grants as migration 0007 finds them (no slot, generation 0, their tokens
/// of the old layout in `access_tokens` and `refresh_tokens`) keep working:
/// the access token verifies, the refresh token rotates into a pair that
/// carries locators, the old access token works until it expires, a spent
/// old refresh token is reuse, and a retry of a lost answer that replaces a
/// pair of before stops that pair's access token at once.
pub(crate) async fn grants_of_before_locators_keep_working(store: Arc<dyn Store>, copier: Arc<dyn Transfer>) {
    let rng = rng();
    let alice = user(&*store, &rng, "alice").await;
    store.create_integration(integration("app"), ev(EventKind::IntegrationCreated)).await.unwrap();
    let settings = TokenSettings { access_validity: 600, ..TokenSettings::default() };
    let scope = Scope::parse("restricted").unwrap();

    // Grant one: its first pair, as stored before.
    let mut one = Grant::new(&rng, "app", alice.id.clone(), scope.clone(), T0, settings);
    let (a0, r0) = (old_token(&rng, TokenKind::Access).1, old_token(&rng, TokenKind::Refresh).1);
    (one.slot, one.pair) = (None, Pair { generation: 0, refresh: Some(r0.hash), access: Some(a0.hash), used: false, rotated_from: None });
    // Grant two: rotated (r1 into r2) just before the upgrade, the answer
    // lost, so its newest pair is unused and r1 may still be retried.
    let mut two = Grant::new(&rng, "app", alice.id.clone(), scope, T0, settings);
    let (a1, r1, a2, r2) = (
        old_token(&rng, TokenKind::Access).1,
        old_token(&rng, TokenKind::Refresh).1,
        old_token(&rng, TokenKind::Access).1,
        old_token(&rng, TokenKind::Refresh).1,
    );
    (two.slot, two.version) = (None, 1);
    two.pair = Pair { generation: 0, refresh: Some(r2.hash), access: Some(a2.hash), used: false, rotated_from: Some((r1.hash, T0)) };
    let rows = vec![
        strongroom_store::transfer::grant_row(&one),
        strongroom_store::transfer::grant_row(&two),
        legacy_access_row(&one.id, a0.hash, T0, T0.plus_secs(600)),
        legacy_refresh_row(&one.id, r0.hash, T0, None),
        legacy_access_row(&two.id, a1.hash, T0, T0.plus_secs(600)),
        legacy_access_row(&two.id, a2.hash, T0, T0.plus_secs(600)),
        legacy_refresh_row(&two.id, r1.hash, T0, Some(T0)),
        legacy_refresh_row(&two.id, r2.hash, T0, None),
    ];
    for (t, row) in rows {
        copier.load(t, vec![row]).await.unwrap();
    }

    let now = T0.plus_secs(60);
    assert!(works(&*store, a0, now).await, "an access token of before verifies");
    let (decision, next) = refresh(&*store, &rng, r0, now, 30).await;
    assert_eq!(decision, Refresh::Rotate, "a refresh token of before rotates");
    let next = next.unwrap();
    let g = store.refresh_context(next.refresh_presented().unwrap()).await.unwrap().unwrap().grant;
    assert_eq!((g.slot, g.pair.generation), (Some(next.at.slot), 1), "the grant got its slot with its first new pair");
    assert!(works(&*store, next.access_presented(), now).await, "the new pair carries locators and works");
    assert!(works(&*store, a0, now).await, "the access token of before works on until it expires");
    assert!(!works(&*store, a0, T0.plus_secs(600)).await);
    let (again, _) = refresh(&*store, &rng, r0, T0.plus_secs(120), 30).await;
    assert_eq!(again, Refresh::Reuse, "the spent refresh token of before is still recognised");

    // Grant two: r1 within the window is a retry, which replaces the unused
    // pair of before: its access token a2 stops at once, r2 is spent.
    assert!(works(&*store, a2, now).await);
    let (decision, replaced) = refresh(&*store, &rng, r1, T0.plus_secs(10), 30).await;
    assert_eq!(decision, Refresh::Retry);
    assert!(!works(&*store, a2, now).await, "the replaced pair's access token stopped");
    assert!(works(&*store, a1, now).await, "an earlier access token works until it expires");
    assert!(works(&*store, replaced.unwrap().access_presented(), now).await);
    assert_eq!(refresh(&*store, &rng, r2, now, 30).await.0, Refresh::Reuse);
    assert!(store.refresh_context(r1).await.unwrap().unwrap().grant.revoked_at.is_some(), "reuse revoked the grant");
}

/// Ten thousand refreshes of one grant leave its token storage as it was:
/// one grant row and no token rows; its earlier access tokens kept at most
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
    let counts = (copier.count(table("grants")).await.unwrap(), copier.count(table("access_tokens")).await.unwrap());
    assert_eq!((counts, copier.count(table("refresh_tokens")).await.unwrap()), ((1, 0), 0), "one row: the grant's");
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
