//! What an outside probe found (M1-M6 of the book's `security/suite.md`), on every backend: a
//! folder deletion keeps the entries it leaves without an owner as orphans
//! (the deletion's own case, `deletion`); an integration change revokes the
//! grants it stops; console epochs move on sign-out, password and disable;
//! JWT replay records go at their tokens' expiry; a client's events have a
//! quota that parallel writers cannot outrun.

use std::sync::Arc;

use strongroom_core::event::EventKind;
use strongroom_core::grant::{Grant, IssuedTokens};
use strongroom_core::integration::{AllowedUsers, TokenSettings};
use strongroom_core::scope::Scope;
use strongroom_core::throttle::Rule;
use strongroom_store::{EventFilter, MachineIssue, Replay, Store};

use super::cases::{T0, ev, first_pair, integration, rng, user};
use super::machines::{configured, jwt_mapping, machine_grant};

async fn grant_for(store: &dyn Store, rng: &super::cases::Rng, user: &strongroom_core::identity::User) -> IssuedTokens {
    let mut g = Grant::new(rng, "app", user.id.clone(), Scope::parse("restricted").unwrap(), T0, TokenSettings::default());
    let t = first_pair(rng, &mut g);
    store.insert_grant(g, ev(EventKind::TokenIssued)).await.unwrap();
    t
}

async fn works(store: &dyn Store, t: &IssuedTokens) -> bool {
    let access = store.access_context(t.access_presented()).await.unwrap().is_some_and(|c| c.check(T0.plus_secs(1)).is_ok());
    let refresh = store.refresh_context(t.refresh_presented().unwrap()).await.unwrap().is_some_and(|r| r.grant.revoked_at.is_none());
    access && refresh
}

/// M6: taking a user off an integration's allow-list revokes their grants
/// of it, and disabling the integration revokes all of them: putting the
/// user back or enabling it again revives none.
pub(crate) async fn an_integration_change_revokes_the_grants_it_stops(store: Arc<dyn Store>) {
    let rng = rng();
    let alice = user(&*store, &rng, "alice").await;
    let bob = user(&*store, &rng, "bob").await;
    let mut i = integration("app");
    i.allowed_users = AllowedUsers::Only(vec![alice.id.clone(), bob.id.clone()]);
    store.create_integration(i, ev(EventKind::IntegrationCreated)).await.unwrap();
    let (ta, tb) = (grant_for(&*store, &rng, &alice).await, grant_for(&*store, &rng, &bob).await);
    assert!(works(&*store, &ta).await && works(&*store, &tb).await);

    // A change that stops nobody revokes nothing.
    let mut i = store.integration("app".into()).await.unwrap().unwrap();
    i.name = "Renamed".into();
    assert!(store.update_integration(i, ev(EventKind::IntegrationUpdated)).await.unwrap());
    assert!(works(&*store, &ta).await && works(&*store, &tb).await);

    // Bob off the list: his grant is revoked, Alice's stands.
    let mut i = store.integration("app".into()).await.unwrap().unwrap();
    i.allowed_users = AllowedUsers::Only(vec![alice.id.clone()]);
    assert!(store.update_integration(i, ev(EventKind::IntegrationUpdated)).await.unwrap());
    assert!(works(&*store, &ta).await);
    assert!(!works(&*store, &tb).await);
    // Back on the list: his old grant stays revoked.
    let mut i = store.integration("app".into()).await.unwrap().unwrap();
    i.allowed_users = AllowedUsers::Only(vec![alice.id.clone(), bob.id.clone()]);
    assert!(store.update_integration(i, ev(EventKind::IntegrationUpdated)).await.unwrap());
    assert!(!works(&*store, &tb).await, "put back, nothing of before comes back");

    // Disabled: every grant revoked; enabled again, none revived.
    let tb2 = grant_for(&*store, &rng, &bob).await;
    let mut i = store.integration("app".into()).await.unwrap().unwrap();
    i.disabled = true;
    assert!(store.update_integration(i, ev(EventKind::IntegrationUpdated)).await.unwrap());
    let mut i = store.integration("app".into()).await.unwrap().unwrap();
    i.disabled = false;
    assert!(store.update_integration(i, ev(EventKind::IntegrationUpdated)).await.unwrap());
    assert!(!works(&*store, &ta).await && !works(&*store, &tb2).await, "enabled again, nothing of before comes back");

    // Each revocation is its own event; each change notes how many it ended.
    let f = |kind: &str| EventFilter { kind: Some(kind.into()), limit: 1000, ..Default::default() };
    let revoked = store.events(f("grant.revoked")).await.unwrap();
    assert_eq!(revoked.len(), 3, "bob's first, then alice's and bob's second");
    assert!(revoked.iter().all(|e| e.event.detail.contains("allow-list") && e.event.detail.contains("disabled")));
    let notes: Vec<String> = store.events(f("integration.updated")).await.unwrap().into_iter().map(|e| e.event.detail).collect();
    assert_eq!(notes.iter().filter(|d| d.contains("1 grant revoked")).count(), 1, "{notes:?}");
    assert_eq!(notes.iter().filter(|d| d.contains("2 grants revoked")).count(), 1, "{notes:?}");
}

/// M2: a user's console epoch moves on when they sign out (or an
/// administrator ends their sessions), when their password changes, and when
/// they are disabled; never for another user.
pub(crate) async fn console_epochs_move_on_sign_out_password_and_disable(store: Arc<dyn Store>) {
    let rng = rng();
    let alice = user(&*store, &rng, "alice").await;
    let bob = user(&*store, &rng, "bob").await;
    let epoch = |u: &strongroom_core::identity::User| store.console_epoch(u.id.clone());
    assert_eq!(epoch(&alice).await.unwrap(), 0);
    assert!(store.end_console_sessions(alice.id.clone(), ev(EventKind::ConsoleSessionsEnded)).await.unwrap());
    assert_eq!(epoch(&alice).await.unwrap(), 1);
    store.set_user_password("alice".into(), "h2".into(), false, ev(EventKind::UserPasswordChanged)).await.unwrap();
    assert_eq!(epoch(&alice).await.unwrap(), 2, "even when the grants are kept");
    store.set_user_disabled("alice".into(), true, ev(EventKind::UserDisabled)).await.unwrap();
    assert_eq!(epoch(&alice).await.unwrap(), 3);
    store.set_user_disabled("alice".into(), false, ev(EventKind::UserEnabled)).await.unwrap();
    assert_eq!(epoch(&alice).await.unwrap(), 3, "enabling ends nothing");
    assert_eq!(epoch(&bob).await.unwrap(), 0, "another user's sessions go on");
    let nobody = strongroom_core::identity::UserId::from_stored("no such user".into());
    let head = store.event_head().await.unwrap();
    assert!(!store.end_console_sessions(nobody, ev(EventKind::ConsoleSessionsEnded)).await.unwrap());
    assert_eq!(store.event_head().await.unwrap(), head, "nothing written for nobody");
    // Racing sign-outs each move it once.
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let (store, id) = (store.clone(), bob.id.clone());
            tokio::spawn(async move { store.end_console_sessions(id, ev(EventKind::ConsoleSessionsEnded)).await.unwrap() })
        })
        .collect();
    for t in tasks {
        assert!(t.await.unwrap());
    }
    assert_eq!(epoch(&bob).await.unwrap(), 16);
    // A deleted user's epoch goes with them.
    store.delete_user("bob".into(), ev(EventKind::UserDeleted)).await.unwrap();
    assert_eq!(epoch(&bob).await.unwrap(), 0);
}

/// M4: JWT replay records are deleted once their token has expired, not an
/// hour later, and only then.
pub(crate) async fn replay_records_go_at_their_tokens_expiry(store: Arc<dyn Store>) {
    let rng = rng();
    configured(&*store).await;
    let m = jwt_mapping();
    for n in 0..30 {
        let mut g = machine_grant(&rng, &m, "repo:org/app:ref:refs/heads/main", None);
        g.replay = Some(Replay { issuer: "gh".into(), key: format!("in:{n}"), expires: T0.plus_secs(20 + n) });
        assert_eq!(store.insert_machine_grant(g, ev(EventKind::TokenIssued)).await.unwrap(), MachineIssue::Issued);
    }
    assert_eq!(store.purge_replays(T0.plus_secs(20)).await.unwrap(), 0, "none has expired yet");
    assert_eq!(store.purge_replays(T0.plus_secs(30)).await.unwrap(), 10, "those expired before now");
    assert_eq!(store.purge_replays(T0.plus_secs(50)).await.unwrap(), 20);
    assert_eq!(store.purge_replays(T0.plus_secs(50)).await.unwrap(), 0);
    // A record still live stops its token, as before.
    let mut g = machine_grant(&rng, &m, "repo:org/app:ref:refs/heads/main", None);
    g.replay = Some(Replay { issuer: "gh".into(), key: "in:x".into(), expires: T0.plus_secs(100) });
    assert_eq!(store.insert_machine_grant(g.clone(), ev(EventKind::TokenIssued)).await.unwrap(), MachineIssue::Issued);
    assert_eq!(store.purge_replays(T0.plus_secs(99)).await.unwrap(), 0);
    let again = machine_grant(&rng, &m, "repo:org/app:ref:refs/heads/main", None);
    let again = strongroom_store::MachineGrant { replay: g.replay.clone(), ..again };
    assert_eq!(store.insert_machine_grant(again, ev(EventKind::TokenIssued)).await.unwrap(), MachineIssue::Replayed);
}

/// M5: an identity's client events past its quota are refused, and 200
/// writers at once cannot outrun it; another identity is not affected.
pub(crate) async fn client_events_hold_their_quota_under_concurrency(store: Arc<dyn Store>) {
    let rule = Rule { limit: 120, window_secs: 60, lockout_secs: 0 };
    let post = |identity: &str, at: strongroom_core::time::UnixTime| {
        let store = store.clone();
        let event = strongroom_core::event::Event::new(EventKind::ClientLog, at).identity(identity);
        let key = format!("log:{identity}");
        async move { store.append_client_event(event, key, rule).await.unwrap() }
    };
    let barrier = Arc::new(tokio::sync::Barrier::new(200));
    let tasks: Vec<_> = (0..200)
        .map(|_| {
            let (barrier, post) = (barrier.clone(), post("local:{a}", T0));
            tokio::spawn(async move {
                barrier.wait().await;
                post.await
            })
        })
        .collect();
    let mut refused = Vec::new();
    for t in tasks {
        if let Err(until) = t.await.unwrap() {
            refused.push(until);
        }
    }
    assert_eq!(refused.len(), 80, "exactly the quota written");
    assert!(refused.iter().all(|u| *u == T0.plus_secs(60)), "room again when the window ends");
    let f = EventFilter { kind: Some("client.log".into()), limit: 1000, ..Default::default() };
    assert_eq!(store.events(f.clone()).await.unwrap().len(), 120);
    assert!(post("local:{b}", T0.plus_secs(1)).await.is_ok(), "another identity has its own quota");
    assert!(post("local:{a}", T0.plus_secs(59)).await.is_err());
    assert!(post("local:{a}", T0.plus_secs(60)).await.is_ok(), "a new window");
    assert_eq!(store.events(f).await.unwrap().len(), 122);
}
