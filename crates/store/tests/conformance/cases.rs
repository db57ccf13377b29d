use crate::RightsFixtures as _;
use std::sync::{Arc, Mutex};

use strongroom_core::event::{Event, EventKind, verify_chain};
use strongroom_core::grant::device::{DeviceAuthorization, DeviceState, PollRecord};
use strongroom_core::grant::refresh::Refresh;
use strongroom_core::grant::{AccessRefused, Grant, IssuedTokens, Pair};
use strongroom_core::identity::{User, UserId};
use strongroom_core::integration::{AllowedUsers, GrantTypes, Integration, TokenOverrides, TokenSettings};
use strongroom_core::random::Random;
use strongroom_core::scope::Scope;
use strongroom_core::throttle::Admission::{Admitted, Busy, Locked};
use strongroom_core::throttle::{Rule, Slot};
use strongroom_core::time::UnixTime;
use strongroom_core::token::{Presented, TokenHash, TokenKey, TokenKind};
use strongroom_store::{EventFilter, PairChange, Store, StoreError};

#[derive(Debug)]
pub(crate) struct Rng(pub(crate) Mutex<u64>);
impl Random for Rng {
    fn fill(&self, dest: &mut [u8]) {
        let mut s = self.0.lock().unwrap();
        for b in dest {
            *s ^= *s << 13;
            *s ^= *s >> 7;
            *s ^= *s << 17;
            *b = (*s >> 32) as u8;
        }
    }
}

pub(crate) fn rng() -> Rng {
    Rng(Mutex::new(0x1234_5678_9abc_def1 ^ u64::from(std::process::id())))
}

pub(crate) const T0: UnixTime = UnixTime::from_secs(1_800_000_000);
pub(crate) const KEY: [u8; 32] = [7; 32];

pub(crate) fn ev(kind: EventKind) -> Event {
    Event::new(kind, T0)
}

/// Mints `grant`'s first pair under the test key at its creation and sets
/// it on the grant, as the service does before storing a new grant.
pub(crate) fn first_pair(rng: &dyn Random, grant: &mut Grant) -> IssuedTokens {
    let t = IssuedTokens::mint(&TokenKey::new(KEY), rng, grant, grant.created_at);
    grant.pair = Pair::first(&t);
    t
}

pub(crate) async fn user(store: &dyn Store, rng: &Rng, name: &str) -> User {
    let u = User { id: UserId::generate(rng), name: name.into(), disabled: false, master_admin: false, created_at: T0, signed_in_at: None };
    store.create_user(u.clone(), "$argon2id$fake".into(), ev(EventKind::UserCreated).object(name)).await.unwrap();
    u
}

async fn device_of(store: &dyn Store, hash: TokenHash) -> Option<DeviceAuthorization> {
    store.device_context(hash).await.unwrap().map(|c| c.device)
}

pub(crate) fn integration(client_id: &str) -> Integration {
    Integration {
        client_id: client_id.into(),
        name: "Test app".into(),
        max_scope: Scope::parse("restricted:manage").unwrap(),
        allowed_users: AllowedUsers::Everyone,
        allowed_groups: Vec::new(),
        grant_types: GrantTypes::default(),
        overrides: TokenOverrides::default(),
        disabled: false,
        version: 0,
    }
}

pub(crate) fn device(rng: &Rng, n: u8) -> DeviceAuthorization {
    let k = TokenKey::new(KEY);
    let _ = rng;
    DeviceAuthorization {
        code_hash: k.hash(TokenKind::DeviceCode, &format!("code-{n}")),
        user_code_hash: k.hash(TokenKind::UserCode, &format!("user-{n}")),
        client_id: "app".into(),
        scope: Scope::parse("restricted").unwrap(),
        state: DeviceState::Pending,
        created_at: T0,
        expires_at: T0.plus_secs(300),
        interval_secs: 5,
        last_poll_at: None,
        version: 0,
    }
}

pub(crate) async fn users(store: Arc<dyn Store>) {
    let rng = rng();
    let alice = user(&*store, &rng, "Alice").await;
    let dup =
        User { id: UserId::generate(&rng), name: "alice".into(), disabled: false, master_admin: false, created_at: T0, signed_in_at: None };
    assert!(matches!(store.create_user(dup, "x".into(), ev(EventKind::UserCreated)).await, Err(StoreError::Conflict)));
    let (found, hash) = store.user_by_name("ALICE".into()).await.unwrap().unwrap();
    assert_eq!(found, alice);
    assert_eq!(hash, "$argon2id$fake");
    assert_eq!(store.user_by_id(alice.id.clone()).await.unwrap(), Some(alice.clone()));
    assert!(store.user_by_name("bob".into()).await.unwrap().is_none());
    assert_eq!(store.set_user_disabled("alice".into(), true, ev(EventKind::UserDisabled)).await.unwrap(), Some(0));
    assert_eq!(store.set_user_disabled("nobody".into(), true, ev(EventKind::UserDisabled)).await.unwrap(), None);
    assert!(store.user_by_id(alice.id.clone()).await.unwrap().unwrap().disabled);
    assert_eq!(store.set_user_password("alice".into(), "new".into(), true, ev(EventKind::UserPasswordChanged)).await.unwrap(), Some(0));
    assert_eq!(store.user_by_name("alice".into()).await.unwrap().unwrap().1, "new");
    user(&*store, &rng, "bob").await;
    let names: Vec<String> = store.list_users().await.unwrap().into_iter().map(|u| u.name).collect();
    assert_eq!(names, ["Alice", "bob"]);
    // Events: created, disabled, password, created — the failed ones wrote nothing.
    let kinds: Vec<EventKind> =
        store.events(EventFilter { limit: 100, ..Default::default() }).await.unwrap().into_iter().map(|e| e.event.kind).collect();
    assert_eq!(kinds, [EventKind::UserCreated, EventKind::UserDisabled, EventKind::UserPasswordChanged, EventKind::UserCreated]);

    // Master Admin on and off: an event only when it changed anything.
    let on = |on: bool| store.set_user_master_admin("BOB".into(), on, ev(EventKind::UserMasterAdminChanged));
    assert_eq!(on(true).await.unwrap(), Some(true));
    assert!(store.user_by_name("bob".into()).await.unwrap().unwrap().0.master_admin);
    assert_eq!(on(true).await.unwrap(), Some(false), "already one: nothing written");
    assert_eq!(on(false).await.unwrap(), Some(true));
    assert!(!store.user_by_name("bob".into()).await.unwrap().unwrap().0.master_admin);
    assert_eq!(store.set_user_master_admin("nobody".into(), true, ev(EventKind::UserMasterAdminChanged)).await.unwrap(), None);
    let changed: Vec<String> = store
        .events(EventFilter { kind: Some("user.master_admin_changed".into()), limit: 100, ..Default::default() })
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.event.detail)
        .collect();
    assert_eq!(changed, ["master_admin=true", "master_admin=false"]);

    // Eight administrators at once: one change, one event.
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(
                async move { store.set_user_master_admin("bob".into(), true, ev(EventKind::UserMasterAdminChanged)).await.unwrap() },
            )
        })
        .collect();
    let mut changed = 0;
    for t in tasks {
        if t.await.unwrap() == Some(true) {
            changed += 1;
        }
    }
    assert_eq!(changed, 1, "exactly one of the racing writes changed the user");
    let f = EventFilter { kind: Some("user.master_admin_changed".into()), limit: 100, ..Default::default() };
    assert_eq!(store.events(f).await.unwrap().len(), 3, "one event for the race");
}

pub(crate) async fn integrations(store: Arc<dyn Store>) {
    let rng = rng();
    let alice = user(&*store, &rng, "alice").await;
    let mut i = integration("App-1");
    i.allowed_users = AllowedUsers::Only(vec![alice.id.clone()]);
    i.overrides = TokenOverrides { access_validity: Some(60), refreshable: Some(false), ..Default::default() };
    i.grant_types = GrantTypes { device: true, password: true };
    store.create_integration(i.clone(), ev(EventKind::IntegrationCreated)).await.unwrap();
    assert!(matches!(store.create_integration(i.clone(), ev(EventKind::IntegrationCreated)).await, Err(StoreError::Conflict)));
    assert_eq!(store.integration("App-1".into()).await.unwrap(), Some(i.clone()));
    assert_eq!(store.integration("app-1".into()).await.unwrap(), None, "client ids are case-sensitive");
    i.name = "Renamed".into();
    i.allowed_users = AllowedUsers::Everyone;
    i.disabled = true;
    assert!(store.update_integration(i.clone(), ev(EventKind::IntegrationUpdated)).await.unwrap());
    assert!(!store.update_integration(i.clone(), ev(EventKind::IntegrationUpdated)).await.unwrap(), "a stale version writes nothing");
    i.version += 1;
    assert_eq!(store.integration("App-1".into()).await.unwrap(), Some(i.clone()));
    assert!(!store.update_integration(integration("nope"), ev(EventKind::IntegrationUpdated)).await.unwrap());
    assert_eq!(store.list_integrations().await.unwrap(), vec![i]);
}

pub(crate) async fn device_flow(store: Arc<dyn Store>) {
    let rng = rng();
    let alice = user(&*store, &rng, "alice").await;
    store.create_integration(integration("app"), ev(EventKind::IntegrationCreated)).await.unwrap();
    let d = device(&rng, 1);
    store.insert_device(d.clone(), ev(EventKind::DeviceAuthorizationStarted), None).await.unwrap();
    let mut clash = device(&rng, 2);
    clash.user_code_hash = d.user_code_hash;
    assert!(matches!(store.insert_device(clash, ev(EventKind::DeviceAuthorizationStarted), None).await, Err(StoreError::Conflict)));
    assert_eq!(device_of(&*store, d.code_hash).await, Some(d.clone()));
    assert_eq!(store.device_by_user_code(d.user_code_hash).await.unwrap(), Some(d.clone()));

    // Polls are conditional on the version read.
    let rec = PollRecord { last_poll_at: T0.plus_secs(1), interval_secs: 10 };
    assert!(store.record_poll(d.code_hash, 0, rec).await.unwrap());
    assert!(!store.record_poll(d.code_hash, 0, rec).await.unwrap(), "stale version");
    let polled = device_of(&*store, d.code_hash).await.unwrap();
    assert_eq!((polled.version, polled.interval_secs, polled.last_poll_at), (1, 10, Some(T0.plus_secs(1))));

    // Approve, once.
    let approved = DeviceState::Approved { user_id: alice.id.clone() };
    assert!(!store.decide_device(d.code_hash, 0, approved.clone(), ev(EventKind::DeviceApproved)).await.unwrap());
    assert!(store.decide_device(d.code_hash, 1, approved.clone(), ev(EventKind::DeviceApproved)).await.unwrap());
    let deny = DeviceState::Denied { user_id: alice.id.clone() };
    assert!(!store.decide_device(d.code_hash, 2, deny, ev(EventKind::DeviceDenied)).await.unwrap(), "not pending any more");
    assert!(!store.record_poll(d.code_hash, 2, rec).await.unwrap(), "only pending codes record polls");
    let now = device_of(&*store, d.code_hash).await.unwrap();
    assert_eq!(now.state, approved);

    // Redeem.
    let mut grant = Grant::new(&rng, "app", alice.id.clone(), d.scope.clone(), T0, TokenSettings::default());
    let tokens = first_pair(&rng, &mut grant);
    assert!(store.redeem_device(d.code_hash, 2, grant.clone(), ev(EventKind::TokenIssued)).await.unwrap());
    let mut born = grant.clone();
    born.pair = Pair::first(&tokens);
    let ctx = store.access_context(tokens.access_presented()).await.unwrap().unwrap();
    assert_eq!(ctx.grant, born);
    assert_eq!(ctx.user_name, "alice");
    assert_eq!(ctx.token_expires, tokens.access_expires);
    assert!(!ctx.standing.user_disabled && !ctx.standing.integration_disabled && !ctx.master_admin);
    assert!(ctx.standing.integration_found && ctx.standing.user_allowed && ctx.check(T0).is_ok());
    assert!(ctx.first_use_of_pair());
    let rc = store.refresh_context(tokens.refresh_presented().unwrap()).await.unwrap().unwrap();
    assert_eq!(rc.grant, born);
    assert!(rc.standing.integration_found && rc.standing.user_found && rc.standing.user_allowed);
    assert_eq!(rc.decide("app", T0, 30), Refresh::Rotate);
    // The device context now names the grant it was redeemed into.
    let dc = store.device_context(d.code_hash).await.unwrap().unwrap();
    assert!(matches!(dc.device.state, DeviceState::Redeemed { .. }));
    assert_eq!(dc.grant, Some(born.clone()));
    assert!(dc.device_flow_enabled);
    assert!(dc.may_reissue("app", T0.plus_secs(1), 30));
    // The first use of the pair is recorded once; a used pair cannot be replaced.
    store.mark_pair_used(grant.id.clone(), tokens.access_hash).await.unwrap();
    let used = store.device_context(d.code_hash).await.unwrap().unwrap();
    assert!(used.grant.as_ref().unwrap().pair.used);
    assert_eq!(used.grant.as_ref().unwrap().version, 1);
    assert!(!used.may_reissue("app", T0.plus_secs(1), 30));
    // The tokens are not findable under the wrong kind.
    assert!(store.access_context(tokens.refresh_presented().unwrap()).await.unwrap().is_none());
}

pub(crate) async fn device_code_redeems_once_under_concurrency(store: Arc<dyn Store>) {
    let rng = Arc::new(rng());
    let alice = user(&*store, &rng, "alice").await;
    store.create_integration(integration("app"), ev(EventKind::IntegrationCreated)).await.unwrap();
    for trial in 0..20u8 {
        let d = device(&rng, trial);
        store.insert_device(d.clone(), ev(EventKind::DeviceAuthorizationStarted), None).await.unwrap();
        let ok = store
            .decide_device(d.code_hash, 0, DeviceState::Approved { user_id: alice.id.clone() }, ev(EventKind::DeviceApproved))
            .await
            .unwrap();
        assert!(ok);
        let mut tasks = Vec::new();
        for _ in 0..32 {
            let (store, rng, user_id, scope) = (store.clone(), rng.clone(), alice.id.clone(), d.scope.clone());
            tasks.push(tokio::spawn(async move {
                let mut grant = Grant::new(&*rng, "app", user_id, scope, T0, TokenSettings::default());
                first_pair(&*rng, &mut grant);
                store.redeem_device(d.code_hash, 1, grant, ev(EventKind::TokenIssued)).await.unwrap()
            }));
        }
        let mut wins = 0;
        for t in tasks {
            wins += usize::from(t.await.unwrap());
        }
        assert_eq!(wins, 1, "trial {trial}: exactly one redemption wins");
    }
    assert_eq!(store.list_grants(true, T0).await.unwrap().len(), 20, "one grant per code");
}

/// One refresh as the service makes it: read the context, decide, and
/// write conditionally on the version read; a lost write reads again.
async fn refresh_once(store: &dyn Store, rng: &dyn Random, presented: Presented, now: UnixTime, window: i64) -> Option<IssuedTokens> {
    for _ in 0..200 {
        let ctx = store.refresh_context(presented).await.unwrap()?;
        let g = &ctx.grant;
        let t = IssuedTokens::mint(&TokenKey::new(KEY), rng, g, now);
        let change = match ctx.decide("app", now, window) {
            Refresh::Rotate => PairChange::rotation(g, presented.hash, &t),
            Refresh::Retry => PairChange::replacing(g, &t),
            Refresh::Reuse => {
                store.revoke_grant(g.id.clone(), now, ev(EventKind::RefreshTokenReuse)).await.unwrap();
                return None;
            }
            Refresh::Reject(_) => return None,
        };
        if store.advance_pair(g.id.clone(), g.version, change, ev(EventKind::TokenRefreshed)).await.unwrap() {
            return Some(t);
        }
    }
    panic!("no progress in 200 attempts")
}

pub(crate) async fn refresh_rotates_once_under_concurrency(store: Arc<dyn Store>) {
    let rng = Arc::new(rng());
    let alice = user(&*store, &rng, "alice").await;
    store.create_integration(integration("app"), ev(EventKind::IntegrationCreated)).await.unwrap();
    let mut grant = Grant::new(&*rng, "app", alice.id.clone(), Scope::parse("restricted").unwrap(), T0, TokenSettings::default());
    let first = first_pair(&*rng, &mut grant);
    store.insert_grant(grant.clone(), ev(EventKind::TokenIssued)).await.unwrap();
    let mut current = first.refresh_presented().unwrap();
    for trial in 0..20 {
        // Strict (window 0): 32 writers with the same version read, one wins.
        let ctx = store.refresh_context(current).await.unwrap().unwrap();
        let mut tasks = Vec::new();
        for _ in 0..32 {
            let (store, rng, g) = (store.clone(), rng.clone(), ctx.grant.clone());
            tasks.push(tokio::spawn(async move {
                let t = IssuedTokens::mint(&TokenKey::new(KEY), &*rng, &g, T0.plus_secs(trial + 1));
                let change = PairChange::rotation(&g, current.hash, &t);
                let won = store.advance_pair(g.id.clone(), g.version, change, ev(EventKind::TokenRefreshed)).await.unwrap();
                won.then(|| t.refresh_presented().unwrap())
            }));
        }
        let mut winners = Vec::new();
        for t in tasks {
            winners.extend(t.await.unwrap());
        }
        assert_eq!(winners.len(), 1, "trial {trial}: exactly one rotation wins");
        let old = store.refresh_context(current).await.unwrap().unwrap();
        assert_eq!(old.grant.pair.refresh, Some(winners[0].hash));
        assert_eq!(old.grant.pair.rotated_from, Some((current.hash, T0.plus_secs(trial + 1))));
        assert_eq!(old.decide("app", T0.plus_secs(trial + 1), 0), Refresh::Reuse, "strict: the spent token is reuse");
        current = winners[0];
    }
    let g = store.refresh_context(current).await.unwrap().unwrap().grant;
    assert_eq!(g.access_issued_at, T0.plus_secs(20));
    assert_eq!(g.version, 20);
}

/// Refreshes of many grants at once, as group commits take them (on
/// PostgreSQL the refreshes of distinct grants in one statement). Round 0:
/// one writer per grant, and every grant moves. Round 1: one writer per
/// grant, every fifth with a stale version: those are told they lost and
/// their grants stay, the others move. Rounds 2 and 3: two writers with the
/// version they read race on each grant, and exactly one wins. Each move
/// stores the winner's pair, one event per move, and the chain verifies.
pub(crate) async fn refreshes_of_many_grants_at_once_each_move_once(store: Arc<dyn Store>) {
    let rng = Arc::new(rng());
    let alice = user(&*store, &rng, "alice").await;
    store.create_integration(integration("app"), ev(EventKind::IntegrationCreated)).await.unwrap();
    let mut grants = Vec::new();
    for _ in 0..40 {
        let mut grant = Grant::new(&*rng, "app", alice.id.clone(), Scope::parse("restricted").unwrap(), T0, TokenSettings::default());
        let first = first_pair(&*rng, &mut grant);
        store.insert_grant(grant.clone(), ev(EventKind::TokenIssued)).await.unwrap();
        grants.push((grant, first.refresh_presented().unwrap()));
    }
    let before = store.event_head().await.unwrap().0;
    let mut moves = 0;
    for round in 0..4_i64 {
        let at = T0.plus_secs(round + 1);
        let mut tasks = Vec::new();
        for (i, (g, presented)) in grants.iter().enumerate() {
            let writers: &[bool] = match round {
                0 => &[false],
                1 if i % 5 == 0 => &[true],
                1 => &[false],
                _ => &[false, false],
            };
            for &stale in writers {
                let (store, rng, g, presented) = (store.clone(), rng.clone(), g.clone(), *presented);
                tasks.push(tokio::spawn(async move {
                    let t = IssuedTokens::mint(&TokenKey::new(KEY), &*rng, &g, at);
                    let version = if stale { g.version - 1 } else { g.version };
                    let change = PairChange::rotation(&g, presented.hash, &t);
                    let won = store.advance_pair(g.id.clone(), version, change, ev(EventKind::TokenRefreshed)).await.unwrap();
                    assert!(!(won && stale), "a stale version never moves a grant");
                    (g.id.clone(), won.then(|| t.refresh_presented().unwrap()))
                }));
            }
        }
        let mut winners = std::collections::HashMap::new();
        for t in tasks {
            let (id, won) = t.await.unwrap();
            if let Some(p) = won {
                assert!(winners.insert(id, p).is_none(), "round {round}: one grant moved twice");
            }
        }
        let expected = if round == 1 { grants.len() - grants.len().div_ceil(5) } else { grants.len() };
        assert_eq!(winners.len(), expected, "round {round}: the grants that should move moved");
        moves += winners.len();
        for (g, presented) in &mut grants {
            let Some(&won) = winners.get(&g.id) else {
                let ctx = store.refresh_context(*presented).await.unwrap().unwrap();
                assert_eq!(ctx.grant.version, g.version, "round {round}: a stale writer's grant stays");
                continue;
            };
            let ctx = store.refresh_context(won).await.unwrap().unwrap();
            assert_eq!(ctx.grant.pair.refresh, Some(won.hash), "round {round}: the winner's pair is stored");
            assert_eq!(ctx.grant.pair.rotated_from, Some((presented.hash, at)));
            assert_eq!(ctx.grant.version, g.version + 1);
            *g = ctx.grant;
            *presented = won;
        }
    }
    let head = store.event_head().await.unwrap();
    assert_eq!(usize::try_from(head.0 - before).unwrap(), moves, "one event per move");
    let events = store.events(EventFilter { limit: 10_000, ..Default::default() }).await.unwrap();
    verify_chain(&events, head).unwrap();
}

/// Context reads of many tokens at once, as PostgreSQL's reader coalesces
/// them into one statement: each caller gets its own grant's context (the
/// access, refresh and vault contexts), a token of a slot nobody has gets
/// none, a token of another generation than its grant's gets none, and
/// several readers of one token all get it.
pub(crate) async fn context_reads_at_once_each_get_their_own(store: Arc<dyn Store>) {
    let rng = Arc::new(rng());
    let alice = user(&*store, &rng, "alice").await;
    store.create_integration(integration("app"), ev(EventKind::IntegrationCreated)).await.unwrap();
    let mut grants = Vec::new();
    for _ in 0..30 {
        let mut grant = Grant::new(&*rng, "app", alice.id.clone(), Scope::parse("restricted").unwrap(), T0, TokenSettings::default());
        let first = first_pair(&*rng, &mut grant);
        store.insert_grant(grant.clone(), ev(EventKind::TokenIssued)).await.unwrap();
        grants.push((grant.id, first));
    }
    for round in 0..3 {
        let mut tasks: Vec<tokio::task::JoinHandle<()>> = Vec::new();
        for (i, (id, t)) in grants.iter().enumerate() {
            for copy in 0..2 {
                let (store, id, access, refresh) = (store.clone(), id.clone(), t.access_presented(), t.refresh_presented().unwrap());
                tasks.push(tokio::spawn(async move {
                    let a = store.access_context(access).await.unwrap().expect("an access token of a live grant has its context");
                    assert_eq!(a.grant.id, id, "round {round}, grant {i}, copy {copy}: its own access context");
                    let r = store.refresh_context(refresh).await.unwrap().expect("a refresh token of a live grant has its context");
                    assert_eq!(r.grant.id, id, "round {round}, grant {i}, copy {copy}: its own refresh context");
                    let v = store.vault_context(access, None).await.unwrap().expect("a vault context");
                    assert_eq!(v.access.grant.id, id, "round {round}, grant {i}, copy {copy}: its own vault context");
                }));
            }
            let (store, mut unknown, mut elder) = (store.clone(), t.access_presented(), t.access_presented());
            unknown.at.slot = -1 - i64::try_from(i).unwrap();
            elder.at.generation += 1;
            tasks.push(tokio::spawn(async move {
                assert!(store.access_context(unknown).await.unwrap().is_none(), "no grant has the slot");
                assert!(store.vault_context(unknown, None).await.unwrap().is_none(), "no grant has the slot");
                assert!(store.access_context(elder).await.unwrap().is_none(), "the grant does not keep that generation");
            }));
        }
        for t in tasks {
            t.await.unwrap_or_else(|e| panic!("round {round}: a read failed: {e}"));
        }
    }
}

pub(crate) async fn retry_replaces_an_unused_pair_under_concurrency(store: Arc<dyn Store>) {
    let rng = Arc::new(rng());
    let alice = user(&*store, &rng, "alice").await;
    store.create_integration(integration("app"), ev(EventKind::IntegrationCreated)).await.unwrap();
    for trial in 0..10 {
        let mut grant = Grant::new(&*rng, "app", alice.id.clone(), Scope::parse("restricted").unwrap(), T0, TokenSettings::default());
        let first = first_pair(&*rng, &mut grant);
        store.insert_grant(grant.clone(), ev(EventKind::TokenIssued)).await.unwrap();
        let presented = first.refresh_presented().unwrap();
        // 32 presentations of one token at once: one rotates, the rest retry in turn.
        let mut tasks = Vec::new();
        for _ in 0..32 {
            let (store, rng) = (store.clone(), rng.clone());
            tasks.push(tokio::spawn(async move {
                refresh_once(&*store, &*rng, presented, T0.plus_secs(1), 30)
                    .await
                    .map(|t| (t.refresh_presented().unwrap(), t.access_presented()))
            }));
        }
        let mut returned = Vec::new();
        for t in tasks {
            returned.push(t.await.unwrap().expect("every presentation inside the window gets a pair"));
        }
        // Exactly one returned refresh token works; the grant is alive; one access token of the pairs works.
        let working: Vec<_> = {
            let mut w = Vec::new();
            for (r, _) in &returned {
                let ctx = store.refresh_context(*r).await.unwrap().unwrap();
                if ctx.decide("app", T0.plus_secs(2), 30) == Refresh::Rotate {
                    w.push(*r);
                }
            }
            w
        };
        assert_eq!(working.len(), 1, "trial {trial}: exactly one refresh token works");
        let mut live_access = 0;
        for (_, a) in &returned {
            live_access += usize::from(store.access_context(*a).await.unwrap().is_some());
        }
        assert_eq!(live_access, 1, "trial {trial}: replaced pairs' access tokens stopped working");
        let g = store.refresh_context(working[0]).await.unwrap().unwrap().grant;
        assert!(g.revoked_at.is_none(), "trial {trial}: the grant is alive");
        // The thief's case: the owner uses the new pair, then the old token comes back: revoked.
        let next = refresh_once(&*store, &*rng, working[0], T0.plus_secs(3), 30).await.unwrap();
        assert!(refresh_once(&*store, &*rng, presented, T0.plus_secs(4), 30).await.is_none());
        let after = store.refresh_context(next.refresh_presented().unwrap()).await.unwrap().unwrap();
        assert!(after.grant.revoked_at.is_some(), "trial {trial}: a replay after the successor was used revokes the grant");
    }
    let reuse = store.events(EventFilter { kind: Some("token.refresh_reuse".into()), limit: 100, ..Default::default() }).await.unwrap();
    assert_eq!(reuse.len(), 10, "one reuse event per trial's replay, none for the retries");
}

pub(crate) async fn revoke(store: Arc<dyn Store>) {
    let rng = rng();
    let alice = user(&*store, &rng, "alice").await;
    store.create_integration(integration("app"), ev(EventKind::IntegrationCreated)).await.unwrap();
    let mut grant = Grant::new(&rng, "app", alice.id.clone(), Scope::parse("restricted").unwrap(), T0, TokenSettings::default());
    let t = first_pair(&rng, &mut grant);
    store.insert_grant(grant.clone(), ev(EventKind::TokenIssued)).await.unwrap();
    assert_eq!(store.list_grants(false, T0).await.unwrap().len(), 1);
    assert!(store.revoke_grant(grant.id.clone(), T0.plus_secs(5), ev(EventKind::GrantRevoked)).await.unwrap());
    assert!(!store.revoke_grant(grant.id.clone(), T0.plus_secs(6), ev(EventKind::GrantRevoked)).await.unwrap());
    let access = store.access_context(t.access_presented()).await.unwrap().unwrap();
    assert_eq!(access.check(T0.plus_secs(5)), Err(AccessRefused::Revoked), "access tokens die with the grant");
    let ctx = store.refresh_context(t.refresh_presented().unwrap()).await.unwrap().unwrap();
    assert_eq!(ctx.grant.revoked_at, Some(T0.plus_secs(5)));
    assert_eq!(ctx.grant.version, 1, "a revocation moves the version: writes based on earlier reads lose");
    // A refresh of a revoked grant loses, even with the current version.
    let t2 = IssuedTokens::mint(&TokenKey::new(KEY), &rng, &grant, T0.plus_secs(7));
    let change = PairChange::rotation(&ctx.grant, t.refresh_hash().unwrap(), &t2);
    assert!(!store.advance_pair(grant.id.clone(), 1, change, ev(EventKind::TokenRefreshed)).await.unwrap());
    assert!(store.list_grants(false, T0).await.unwrap().is_empty());
    let all = store.list_grants(true, T0).await.unwrap();
    assert_eq!((all.len(), all[0].user_name.as_str()), (1, "alice"));
    let revokes = store.events(EventFilter { kind: Some("grant.revoked".into()), limit: 10, ..Default::default() }).await.unwrap();
    assert_eq!(revokes.len(), 1, "a failed revoke writes no event");
}

pub(crate) async fn standing_follows_the_user_and_integration(store: Arc<dyn Store>) {
    let rng = rng();
    let alice = user(&*store, &rng, "alice").await;
    let bob = user(&*store, &rng, "bob").await;
    let mut i = integration("app");
    i.allowed_users = AllowedUsers::Only(vec![alice.id.clone()]);
    store.create_integration(i.clone(), ev(EventKind::IntegrationCreated)).await.unwrap();
    let mut ctxs = Vec::new();
    for u in [&alice, &bob] {
        let mut g = Grant::new(&rng, "app", u.id.clone(), Scope::parse("restricted").unwrap(), T0, TokenSettings::default());
        let t = first_pair(&rng, &mut g);
        store.insert_grant(g, ev(EventKind::TokenIssued)).await.unwrap();
        ctxs.push(t.refresh_presented().unwrap());
    }
    let standing = |h| {
        let store = store.clone();
        async move { store.refresh_context(h).await.unwrap().unwrap().standing }
    };
    assert!(standing(ctxs[0]).await.user_allowed);
    assert!(!standing(ctxs[1]).await.user_allowed, "bob is not on the integration's list");
    store.set_user_disabled("alice".into(), true, ev(EventKind::UserDisabled)).await.unwrap();
    assert!(standing(ctxs[0]).await.user_disabled);
    i.disabled = true;
    i.overrides.retry_window = Some(7);
    store.update_integration(i, ev(EventKind::IntegrationUpdated)).await.unwrap();
    let ctx = store.refresh_context(ctxs[0]).await.unwrap().unwrap();
    assert!(ctx.standing.integration_disabled);
    assert_eq!(ctx.retry_window, Some(7));
}

fn slot(key: &str, limit: u32, reset_on_success: bool) -> Slot {
    Slot { key: key.into(), subject: Some("alice".into()), rule: Rule { limit, window_secs: 60, lockout_secs: 120 }, reset_on_success }
}

pub(crate) async fn throttle(store: Arc<dyn Store>) {
    let slots = vec![slot("pair", 2, true), Slot { subject: None, ..slot("addr", 10, false) }];
    let failed = |i: i64| Event::new(EventKind::LoginFailed, T0.plus_secs(i)).object("alice");
    // Two attempts fail; the second fills the pair counter and locks it (one lockout event).
    for i in 0..2 {
        assert_eq!(store.begin_attempt(slots.clone(), T0.plus_secs(i)).await.unwrap(), Admitted, "attempt {i}");
        assert_eq!(store.attempt_failed(slots.clone(), failed(i)).await.unwrap(), usize::from(i == 1));
    }
    assert_eq!(store.begin_attempt(slots.clone(), T0.plus_secs(3)).await.unwrap(), Locked, "refused before any work");
    assert_eq!(store.locks(T0.plus_secs(3)).await.unwrap(), vec![("alice".to_owned(), T0.plus_secs(121))]);
    assert!(store.locks(T0.plus_secs(121)).await.unwrap().is_empty(), "a lock ends");
    let lockouts = store.events(EventFilter { kind: Some("login.lockout".into()), limit: 10, ..Default::default() }).await.unwrap();
    assert_eq!(lockouts.len(), 1);
    assert_eq!(lockouts[0].event.object, "pair");
    // A refused attempt took nothing: the address counter still holds two.
    store.unlock("alice".into(), ev(EventKind::UserUnlocked)).await.unwrap();
    assert!(store.locks(T0.plus_secs(3)).await.unwrap().is_empty());
    let addr_only = vec![Slot { subject: None, ..slot("addr", 3, false) }];
    assert_eq!(store.begin_attempt(addr_only.clone(), T0.plus_secs(4)).await.unwrap(), Admitted, "the third of three");
    assert_eq!(store.begin_attempt(addr_only.clone(), T0.plus_secs(4)).await.unwrap(), Busy, "unlock clears only the user's counters");

    // A success gives its slot back, or resets; a lock set meanwhile refuses it.
    let s = vec![slot("b-pair", 3, true), Slot { subject: None, ..slot("b-addr", 3, false) }];
    assert_eq!(store.begin_attempt(s.clone(), T0).await.unwrap(), Admitted);
    store.attempt_failed(s.clone(), failed(0)).await.unwrap();
    assert_eq!(store.begin_attempt(s.clone(), T0).await.unwrap(), Admitted);
    assert!(!store.login_context("bob".into(), "10.0.0.9".into()).await.unwrap().known_origin);
    let bob = user(&*store, &rng(), "bob").await;
    let signed_in = ev(EventKind::LoginSucceeded).identity(bob.id.identity()).object("bob").detail("console");
    let at = T0.plus_secs(5);
    assert!(
        store.attempt_succeeded(s.clone(), Some(("bob".into(), "10.0.0.9".into())), Some((bob.id.clone(), signed_in)), at).await.unwrap()
    );
    assert!(store.login_context("bob".into(), "10.0.0.9".into()).await.unwrap().known_origin, "the origin is remembered");
    assert_eq!(store.user_by_id(bob.id.clone()).await.unwrap().unwrap().signed_in_at, Some(at), "the last sign-in is stamped");
    let succeeded = || store.events(EventFilter { kind: Some("login.succeeded".into()), limit: 10, ..Default::default() });
    let events = succeeded().await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!((events[0].event.identity.as_str(), events[0].event.detail.as_str()), (bob.id.identity().as_str(), "console"));
    assert!(!store.login_context("bob".into(), "10.0.0.8".into()).await.unwrap().known_origin);
    // b-pair was reset, b-addr holds one failure: three more on b-pair fill it, b-addr fills at its third.
    for _ in 0..2 {
        assert_eq!(store.begin_attempt(s.clone(), T0).await.unwrap(), Admitted);
    }
    assert_eq!(store.begin_attempt(s.clone(), T0).await.unwrap(), Busy, "b-addr is full: 1 failure + 2 in flight");
    store.attempt_failed(s.clone(), failed(0)).await.unwrap();
    let refused = ev(EventKind::LoginSucceeded).identity(bob.id.identity()).object("bob").detail("console");
    let later = T0.plus_secs(9);
    assert!(
        !store.attempt_succeeded(s.clone(), None, Some((bob.id.clone(), refused)), later).await.unwrap(),
        "b-addr locked while this one was checked"
    );
    assert_eq!(store.user_by_id(bob.id.clone()).await.unwrap().unwrap().signed_in_at, Some(at), "a refused success stamps nothing");
    assert_eq!(succeeded().await.unwrap().len(), 1, "a refused success writes no event");
}

pub(crate) async fn throttle_holds_under_concurrency(store: Arc<dyn Store>) {
    // 60 attempts at once against a limit of 5: exactly 5 are admitted.
    let slots = vec![slot("pw:pair:10.0.0.1 alice", 5, true), Slot { subject: None, ..slot("pw:addr:10.0.0.1", 20, false) }];
    let tasks: Vec<_> = (0..60)
        .map(|_| {
            let (store, slots) = (store.clone(), slots.clone());
            tokio::spawn(async move { store.begin_attempt(slots, T0).await.unwrap() == Admitted })
        })
        .collect();
    let mut admitted = 0;
    for t in tasks {
        admitted += usize::from(t.await.unwrap());
    }
    assert_eq!(admitted, 5, "slots are taken in one conditional write each");
    // They all fail at once: exactly one lockout, and nothing more is admitted.
    let fails: Vec<_> = (0..5)
        .map(|i| {
            let (store, slots) = (store.clone(), slots.clone());
            tokio::spawn(async move { store.attempt_failed(slots, Event::new(EventKind::LoginFailed, T0.plus_secs(i))).await.unwrap() })
        })
        .collect();
    let mut locked = 0;
    for f in fails {
        locked += f.await.unwrap();
    }
    assert_eq!(locked, 1, "the pair counter locks once");
    assert_eq!(store.begin_attempt(slots, T0.plus_secs(6)).await.unwrap(), Locked);
}

pub(crate) async fn user_changes_end_grants(store: Arc<dyn Store>) {
    let rng = Arc::new(rng());
    let alice = user(&*store, &rng, "alice").await;
    store.create_integration(integration("app"), ev(EventKind::IntegrationCreated)).await.unwrap();
    let grant = |store: Arc<dyn Store>| {
        let id = alice.id.clone();
        let rng = rng.clone();
        async move {
            let mut g = Grant::new(&*rng, "app", id, Scope::parse("restricted").unwrap(), T0, TokenSettings::default());
            let t = first_pair(&*rng, &mut g);
            store.insert_grant(g, ev(EventKind::TokenIssued)).await.unwrap();
            t
        }
    };
    let works = |t: IssuedTokens| {
        let store = store.clone();
        async move {
            let access = store.access_context(t.access_presented()).await.unwrap().is_some_and(|c| c.check(T0.plus_secs(1)).is_ok());
            let refresh = store.refresh_context(t.refresh_presented().unwrap()).await.unwrap().unwrap();
            access && refresh.grant.revoked_at.is_none()
        }
    };
    // A password reset ends the grants unless they are kept.
    let t1 = grant(store.clone()).await;
    let kept = store.set_user_password("alice".into(), "h2".into(), false, ev(EventKind::UserPasswordChanged)).await.unwrap();
    assert_eq!(kept, Some(0));
    assert!(works(clone_tokens(&t1)).await, "--keep-grants keeps them");
    let ended = store.set_user_password("alice".into(), "h3".into(), true, ev(EventKind::UserPasswordChanged)).await.unwrap();
    assert_eq!(ended, Some(1));
    assert!(!works(clone_tokens(&t1)).await);
    // Disabling ends them for good, and denies approved codes not yet redeemed.
    let t2 = grant(store.clone()).await;
    let d = device(&rng, 1);
    store.insert_device(d.clone(), ev(EventKind::DeviceAuthorizationStarted), None).await.unwrap();
    let approved = DeviceState::Approved { user_id: alice.id.clone() };
    assert!(store.decide_device(d.code_hash, 0, approved, ev(EventKind::DeviceApproved)).await.unwrap());
    assert_eq!(store.set_user_disabled("alice".into(), true, ev(EventKind::UserDisabled)).await.unwrap(), Some(1));
    assert_eq!(store.set_user_disabled("alice".into(), false, ev(EventKind::UserEnabled)).await.unwrap(), Some(0));
    assert!(!works(clone_tokens(&t2)).await, "enabling the user again revives nothing");
    assert!(matches!(device_of(&*store, d.code_hash).await.unwrap().state, DeviceState::Denied { .. }));
    // Revoking every grant of a user.
    let t3 = grant(store.clone()).await;
    let t4 = grant(store.clone()).await;
    assert_eq!(store.revoke_user_grants("ALICE".into(), ev(EventKind::UserGrantsRevoked)).await.unwrap(), Some(2));
    assert!(!works(clone_tokens(&t3)).await && !works(clone_tokens(&t4)).await);
    assert_eq!(store.revoke_user_grants("nobody".into(), ev(EventKind::UserGrantsRevoked)).await.unwrap(), None);
    let kinds: Vec<String> = store
        .events(EventFilter { limit: 100, ..Default::default() })
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.event.detail.contains("revoked"))
        .map(|e| format!("{} {}", e.event.kind, e.event.detail))
        .collect();
    assert_eq!(kinds, ["user.password_changed 1 grant revoked", "user.disabled 1 grant revoked", "user.grants_revoked 2 grants revoked"]);
}

/// The hashes of issued tokens, for a second look (the secrets are not needed).
fn clone_tokens(t: &IssuedTokens) -> IssuedTokens {
    IssuedTokens {
        at: t.at,
        access: strongroom_core::secret::Secret::new(String::new()),
        access_hash: t.access_hash,
        access_expires: t.access_expires,
        refresh: t.refresh.as_ref().map(|(_, h)| (strongroom_core::secret::Secret::new(String::new()), *h)),
        issued_at: t.issued_at,
    }
}

pub(crate) async fn access_follows_the_integration_and_user(store: Arc<dyn Store>) {
    let rng = rng();
    let alice = user(&*store, &rng, "alice").await;
    let mut i = integration("app");
    i.max_scope = Scope::parse("restricted:manage,delete").unwrap();
    i.allowed_users = AllowedUsers::Only(vec![alice.id.clone()]);
    store.create_integration(i.clone(), ev(EventKind::IntegrationCreated)).await.unwrap();
    let mut g = Grant::new(&rng, "app", alice.id.clone(), Scope::parse("restricted:manage,delete").unwrap(), T0, TokenSettings::default());
    let t = first_pair(&rng, &mut g).access_presented();
    store.insert_grant(g, ev(EventKind::TokenIssued)).await.unwrap();
    let check = || {
        let store = store.clone();
        async move { store.access_context(t).await.unwrap().unwrap().check(T0.plus_secs(1)) }
    };
    assert!(check().await.is_ok());
    // The maximum scope reduced: the token's grant no longer stands.
    i.max_scope = Scope::parse("restricted:manage").unwrap();
    assert!(store.update_integration(i.clone(), ev(EventKind::IntegrationUpdated)).await.unwrap());
    i.version += 1;
    assert!(check().await.is_err(), "a scope reduction reaches the live token");
    i.max_scope = Scope::parse("restricted:manage,delete").unwrap();
    assert!(store.update_integration(i.clone(), ev(EventKind::IntegrationUpdated)).await.unwrap());
    i.version += 1;
    assert!(check().await.is_ok());
    // Taken off the allow-list.
    i.allowed_users = AllowedUsers::Only(vec![]);
    assert!(store.update_integration(i.clone(), ev(EventKind::IntegrationUpdated)).await.unwrap());
    assert!(check().await.is_err(), "an allow-list removal reaches the live token");
    // The vault context sees the same standing.
    let ctx = store.vault_context(t, None).await.unwrap().unwrap();
    assert!(!ctx.access.standing.user_allowed);
}

pub(crate) async fn events_follow_rights(store: Arc<dyn Store>) {
    use strongroom_core::vault::Rights;
    use strongroom_store::Viewer;
    first_data_key(&*store).await;
    let (w, _) = writer(&*store, true).await;
    let rng = rng();
    let reader = user(&*store, &rng, "reader").await;
    for f in ["\\VED\\Policy\\Mine\\App", "\\VED\\Policy\\Theirs"] {
        store.create_folders(crate::cases::lineage(&folder(f)), ev(EventKind::FolderCreated)).await.unwrap();
    }
    store.set_rights(folder("\\VED\\Policy\\Mine"), reader.id.clone(), Rights::READ, ev(EventKind::RightsChanged)).await.unwrap();
    let mine = store.allocate_vault_id().await.unwrap();
    let theirs = store.allocate_vault_id().await.unwrap();
    store
        .insert_entry(entry(mine, &["\\VED\\Policy\\Mine\\App"]), w.clone(), ev(EventKind::VaultAdded).object(mine.to_string()))
        .await
        .unwrap();
    store
        .insert_entry(entry(theirs, &["\\VED\\Policy\\Theirs"]), w.clone(), ev(EventKind::VaultAdded).object(theirs.to_string()))
        .await
        .unwrap();
    store.append_event(ev(EventKind::TokenIssued).identity(reader.id.identity())).await.unwrap();
    store.append_event(ev(EventKind::TokenIssued).identity("local:{someone-else}")).await.unwrap();
    store.append_event(ev(EventKind::LoginFailed).object("reader")).await.unwrap();
    let seen = |viewer: Option<Viewer>| {
        let store = store.clone();
        async move {
            let f = EventFilter { limit: 100, viewer, ..Default::default() };
            store.events(f).await.unwrap().into_iter().map(|e| format!("{} {}", e.event.kind, e.event.object)).collect::<Vec<_>>()
        }
    };
    let all = seen(None).await;
    assert!(all.len() >= 7, "{all:?}");
    let visible = seen(Some(Viewer { identity: reader.id.identity(), user_id: reader.id.clone() })).await;
    assert_eq!(visible, [format!("vault.added {mine}"), "token.issued ".to_owned()], "their own events and those on entries they may read");
    let stranger = user(&*store, &rng, "stranger").await;
    assert!(seen(Some(Viewer { identity: stranger.id.identity(), user_id: stranger.id })).await.is_empty());
}

pub(crate) async fn event_chain(store: Arc<dyn Store>) {
    for i in 0..25 {
        store.append_event(Event::new(EventKind::LoginFailed, T0.plus_secs(i)).identity(format!("u{}", i % 3))).await.unwrap();
    }
    let all = store.events(EventFilter { limit: 1000, ..Default::default() }).await.unwrap();
    let head = store.event_head().await.unwrap();
    assert_eq!(verify_chain(&all, head), Ok(25));
    let page = store.events(EventFilter { after_seq: Some(20), limit: 3, ..Default::default() }).await.unwrap();
    assert_eq!(page.iter().map(|e| e.seq).collect::<Vec<_>>(), [21, 22, 23]);
    let u1 = store.events(EventFilter { identity: Some("u1".into()), limit: 100, ..Default::default() }).await.unwrap();
    assert_eq!(u1.len(), 8);
    let window = store
        .events(EventFilter { since: Some(T0.plus_secs(5)), until: Some(T0.plus_secs(10)), limit: 100, ..Default::default() })
        .await
        .unwrap();
    assert_eq!(window.len(), 5);
}

pub(crate) async fn purge(store: Arc<dyn Store>) {
    let rng = rng();
    let alice = user(&*store, &rng, "alice").await;
    store.insert_device(device(&rng, 1), ev(EventKind::DeviceAuthorizationStarted), None).await.unwrap();
    let s = TokenSettings { grant_validity: 100, ..Default::default() };
    let mut grant = Grant::new(&rng, "app", alice.id, Scope::parse("restricted").unwrap(), T0, s);
    let t = first_pair(&rng, &mut grant);
    store.insert_grant(grant, ev(EventKind::TokenIssued)).await.unwrap();
    assert_eq!(store.purge(T0.plus_secs(50)).await.unwrap(), 0);
    assert!(store.purge(T0.plus_secs(400)).await.unwrap() >= 2);
    assert!(device_of(&*store, device(&rng, 1).code_hash).await.is_none());
    assert!(store.refresh_context(t.refresh_presented().unwrap()).await.unwrap().is_none());
    let events = store.events(EventFilter { limit: 100, ..Default::default() }).await.unwrap();
    assert_eq!(events.len(), 3, "events are kept");
}

/// A user (Master Admin or not) with a live grant: who vault writes name.
pub(crate) async fn writer(store: &dyn Store, master_admin: bool) -> (strongroom_store::Writer, Presented) {
    let rng = Rng(Mutex::new(if master_admin { 0x1111_2222_3333_4445 } else { 0x5555_6666_7777_8889 }));
    // The integration the grants are on (a grant stands only while its integration admits the user).
    match store.create_integration(integration("app"), ev(EventKind::IntegrationCreated)).await {
        Ok(()) | Err(StoreError::Conflict) => {}
        Err(e) => panic!("{e}"),
    }
    let name = if master_admin { "admin" } else { "writer" };
    let u = User { id: UserId::generate(&rng), name: name.into(), disabled: false, master_admin, created_at: T0, signed_in_at: None };
    store.create_user(u.clone(), "$argon2id$fake".into(), ev(EventKind::UserCreated)).await.unwrap();
    let mut g = Grant::new(&rng, "app", u.id.clone(), Scope::parse("restricted:manage").unwrap(), T0, TokenSettings::default());
    let t = first_pair(&rng, &mut g);
    store.insert_grant(g.clone(), ev(EventKind::TokenIssued)).await.unwrap();
    (strongroom_store::Writer { grant_id: g.id, user_id: u.id }, t.access_presented())
}

/// The entry as a vault request's context read sees it.
async fn entry_of(store: &dyn Store, access: Presented, id: strongroom_core::vault::VaultId) -> Option<strongroom_store::VaultEntry> {
    store.vault_context(access, Some(id)).await.unwrap().unwrap().entry
}

/// Data key 1 under `Software:Default`, which the vault cases seal under.
pub(crate) async fn first_data_key(store: &dyn Store) {
    let key = strongroom_store::DataKeyRecord { id: 1, key_name: SOFTWARE.into(), wrapped: vec![9; 72], created_at: T0 };
    store.insert_data_key(key, ev(EventKind::VaultKeyCreated)).await.unwrap();
}

/// `f`'s lineage with a GUID for each folder (one random source for the
/// whole run, so two calls never hand out the same GUID).
pub(crate) fn lineage(
    f: &strongroom_core::vault::FolderPath,
) -> Vec<(strongroom_core::vault::FolderPath, strongroom_core::tree::ObjectGuid)> {
    static RNG: std::sync::LazyLock<Rng> = std::sync::LazyLock::new(rng);
    strongroom_core::tree::lineage_with_guids(f, &*RNG)
}

pub(crate) fn folder(p: &str) -> strongroom_core::vault::FolderPath {
    strongroom_core::vault::FolderPath::parse(p).unwrap()
}

pub(crate) fn entry(id: strongroom_core::vault::VaultId, owners: &[&str]) -> strongroom_store::VaultEntry {
    strongroom_store::VaultEntry {
        vault_id: id,
        vault_type: 32,
        key_name: "Software:Default".into(),
        key_id: 1,
        sealed: vec![1, 2, 3],
        owners: owners.iter().map(|o| folder(o)).collect(),
        created_at: T0,
    }
}

pub(crate) fn assoc(name: &str, h: u8) -> strongroom_store::StoredAssociation {
    strongroom_store::StoredAssociation {
        name: name.into(),
        value_type: strongroom_core::vault::value::ValueType::String,
        key_id: 1,
        sealed: vec![h; 40],
        lookup: [h; 32],
    }
}

pub(crate) async fn vault_folders_and_rights(store: Arc<dyn Store>) {
    use strongroom_core::vault::Rights;
    let rng = rng();
    let alice = user(&*store, &rng, "alice").await;
    let team = folder("\\VED\\Policy\\Team A");
    assert!(store.create_folders(crate::cases::lineage(&team), ev(EventKind::FolderCreated)).await.unwrap());
    assert!(!store.create_folders(crate::cases::lineage(&team), ev(EventKind::FolderCreated)).await.unwrap(), "exists");
    let names: Vec<String> = store.folders().await.unwrap().iter().map(|f| f.as_str().to_owned()).collect();
    assert_eq!(names, ["\\VED", "\\VED\\Policy", "\\VED\\Policy\\Team A"]);
    assert!(store.folder_exists("\\ved\\policy\\team a".into()).await.unwrap());
    assert!(!store.folder_exists("\\ved\\nope".into()).await.unwrap());
    store.set_rights(team.clone(), alice.id.clone(), Rights::READ.union(Rights::WRITE), ev(EventKind::RightsChanged)).await.unwrap();
    store.set_rights(folder("\\VED"), alice.id.clone(), Rights::VIEW, ev(EventKind::RightsChanged)).await.unwrap();
    let mut r = store.rights_of(alice.id.clone()).await.unwrap();
    r.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(r, vec![("\\ved".to_owned(), Rights::VIEW), ("\\ved\\policy\\team a".to_owned(), Rights::READ.union(Rights::WRITE))]);
    store.set_rights(folder("\\VED"), alice.id.clone(), Rights::NONE, ev(EventKind::RightsChanged)).await.unwrap();
    let all = store.all_rights().await.unwrap();
    assert_eq!(all, vec![(team, "alice".to_owned(), Rights::READ.union(Rights::WRITE), false)]);
}

const SOFTWARE: &str = "Software:Default";

pub(crate) async fn vault_entries_owners_and_associations(store: Arc<dyn Store>) {
    use strongroom_core::vault::VaultId;
    use strongroom_store::{AddOwner, Checked, DataKeyRecord, PutAssociation, SealedItem, VaultFilter};
    first_data_key(&*store).await;
    assert!(matches!(
        store
            .insert_data_key(
                DataKeyRecord { id: 1, key_name: SOFTWARE.into(), wrapped: vec![8; 72], created_at: T0 },
                ev(EventKind::VaultKeyCreated)
            )
            .await,
        Err(StoreError::Conflict)
    ));
    assert_eq!(store.data_keys().await.unwrap().len(), 1);
    let (w, access) = writer(&*store, true).await;
    for f in ["\\VED\\Policy\\A", "\\VED\\Policy\\B", "\\VED\\Policy\\C"] {
        store.create_folders(crate::cases::lineage(&folder(f)), ev(EventKind::FolderCreated)).await.unwrap();
    }
    let a = store.allocate_vault_id().await.unwrap();
    let b = store.allocate_vault_id().await.unwrap();
    assert!(b.0 > a.0 && a.0 >= 1);
    assert_eq!(
        store.insert_entry(entry(a, &["\\VED\\Nowhere"]), w.clone(), ev(EventKind::VaultAdded)).await.unwrap(),
        Checked::Done(false)
    );
    store.insert_entry(entry(a, &["\\VED\\Policy\\A"]), w.clone(), ev(EventKind::VaultAdded)).await.unwrap();
    store.insert_entry(entry(b, &["\\VED\\Policy\\A", "\\VED\\Policy\\B"]), w.clone(), ev(EventKind::VaultAdded)).await.unwrap();
    let got = entry_of(&*store, access, b).await.unwrap();
    assert_eq!(got, entry(b, &["\\VED\\Policy\\A", "\\VED\\Policy\\B"]));
    assert!(entry_of(&*store, access, VaultId(999)).await.is_none());
    assert_eq!(store.owners_of(vec![a, VaultId(999)]).await.unwrap(), vec![(a, vec![folder("\\VED\\Policy\\A")])]);

    // Associations: one value per name, identical ones reported, lookups by hash.
    assert_eq!(
        store.put_association(a, assoc("n", 1), w.clone(), ev(EventKind::VaultAssociated)).await.unwrap(),
        Checked::Done(PutAssociation::Stored)
    );
    assert_eq!(
        store.put_association(a, assoc("n", 1), w.clone(), ev(EventKind::VaultAssociated)).await.unwrap(),
        Checked::Done(PutAssociation::Identical)
    );
    assert_eq!(
        store.put_association(a, assoc("n", 2), w.clone(), ev(EventKind::VaultAssociated)).await.unwrap(),
        Checked::Done(PutAssociation::Stored)
    );
    assert_eq!(
        store.put_association(b, assoc("n", 2), w.clone(), ev(EventKind::VaultAssociated)).await.unwrap(),
        Checked::Done(PutAssociation::Stored)
    );
    assert_eq!(
        store.put_association(b, assoc("m", 3), w.clone(), ev(EventKind::VaultAssociated)).await.unwrap(),
        Checked::Done(PutAssociation::Stored)
    );
    assert_eq!(
        store.put_association(VaultId(999), assoc("n", 1), w.clone(), ev(EventKind::VaultAssociated)).await.unwrap(),
        Checked::Done(PutAssociation::NoEntry)
    );
    assert_eq!(store.associations(a).await.unwrap(), vec![assoc("n", 2)]);
    // An administrator's view of entries: no data, no value; a missing id is left out.
    let details = store.entry_details(vec![b, VaultId(999), a]).await.unwrap();
    let e = entry(b, &["\\VED\\Policy\\A", "\\VED\\Policy\\B"]);
    assert_eq!(details.iter().map(|d| d.vault_id).collect::<Vec<_>>(), vec![b, a]);
    assert_eq!((details[0].vault_type, details[0].key_name.as_str(), details[0].key_id), (e.vault_type, e.key_name.as_str(), e.key_id));
    assert_eq!((details[0].created_at, details[0].owners.clone()), (e.created_at, e.owners));
    let names: Vec<(String, i64)> = details[0].associations.iter().map(|(n, _, k)| (n.clone(), *k)).collect();
    assert_eq!(names, vec![("m".to_owned(), assoc("m", 3).key_id), ("n".to_owned(), assoc("n", 2).key_id)]);
    assert_eq!(details[1].associations.len(), 1);
    let (oa, ob) = (vec![folder("\\VED\\Policy\\A")], vec![folder("\\VED\\Policy\\A"), folder("\\VED\\Policy\\B")]);
    assert_eq!(store.lookup_by_association("n".into(), Some([2; 32])).await.unwrap(), vec![(a, oa.clone()), (b, ob.clone())]);
    assert_eq!(store.lookup_by_association("n".into(), Some([1; 32])).await.unwrap(), vec![]);
    // LookupByAssociation's one read: the caller's context (no entry) and the same entries; nothing for a token
    // its grant does not keep.
    let (ctx, found) = store.vault_lookup(access, "n".into(), Some([2; 32])).await.unwrap().unwrap();
    let alone = store.vault_context(access, None).await.unwrap().unwrap();
    assert_eq!((ctx.access.grant.id, ctx.rights, ctx.entry), (alone.access.grant.id, alone.rights, None));
    assert_eq!(found, vec![(a, oa.clone()), (b, ob.clone())]);
    let (_, found) = store.vault_lookup(access, "m".into(), None).await.unwrap().unwrap();
    assert_eq!(found, vec![(b, ob.clone())]);
    let forged = strongroom_core::token::Presented { hash: strongroom_core::token::TokenHash([7; 32]), ..access };
    assert!(store.vault_lookup(forged, "n".into(), Some([2; 32])).await.unwrap().is_none());
    assert_eq!(store.lookup_by_association("m".into(), None).await.unwrap(), vec![(b, ob)]);
    assert_eq!(
        store.dissociate(b, Some("n".into()), Some([9; 32]), w.clone(), ev(EventKind::VaultDissociated)).await.unwrap(),
        Checked::Done(0)
    );
    assert_eq!(
        store.dissociate(b, Some("n".into()), Some([2; 32]), w.clone(), ev(EventKind::VaultDissociated)).await.unwrap(),
        Checked::Done(1)
    );
    assert_eq!(store.dissociate(b, None, None, w.clone(), ev(EventKind::VaultDissociated)).await.unwrap(), Checked::Done(1));
    assert!(store.associations(b).await.unwrap().is_empty());

    // Types, owners, and deletion with the last owner.
    assert_eq!(store.mutate_entry(a, 1_073_741_856, w.clone(), ev(EventKind::VaultMutated)).await.unwrap(), Checked::Done(true));
    let f = VaultFilter { vault_type: Some(1_073_741_856), ..Default::default() };
    assert_eq!(store.vault_ids(f).await.unwrap(), vec![a]);
    let f = VaultFilter { owner_key: Some("\\ved\\policy\\b".into()), ..Default::default() };
    assert_eq!(store.vault_ids(f).await.unwrap(), vec![b]);
    assert_eq!(
        store.add_owner(a, folder("\\VED\\Policy\\C"), w.clone(), ev(EventKind::VaultOwnerAdded)).await.unwrap(),
        Checked::Done(AddOwner::Added)
    );
    assert_eq!(
        store.add_owner(a, folder("\\ved\\policy\\c"), w.clone(), ev(EventKind::VaultOwnerAdded)).await.unwrap(),
        Checked::Done(AddOwner::AlreadyOwner)
    );
    assert_eq!(
        store.add_owner(VaultId(999), folder("\\VED\\X"), w.clone(), ev(EventKind::VaultOwnerAdded)).await.unwrap(),
        Checked::Done(AddOwner::NoEntry)
    );
    let Checked::Done(r) = store.remove_owner(None, folder("\\VED\\Policy\\A"), w.clone(), ev(EventKind::VaultOwnerRemoved)).await.unwrap()
    else {
        panic!("denied")
    };
    assert_eq!((r.removed, r.deleted.len()), (2, 0));
    let Checked::Done(r) =
        store.remove_owner(Some(b), folder("\\VED\\Policy\\B"), w.clone(), ev(EventKind::VaultOwnerRemoved)).await.unwrap()
    else {
        panic!("denied")
    };
    assert_eq!((r.removed, r.deleted), (1, vec![b]));
    assert!(entry_of(&*store, access, b).await.is_none());
    let entries = store.vault_ids(VaultFilter::default()).await.unwrap().len() as u64;
    assert!(entries > 0);
    assert_eq!(store.key_names_in_use().await.unwrap(), vec![("Software:Default".to_owned(), entries)], "every entry, counted");
    assert!(store.vault_ids(VaultFilter { orphans_only: true, ..Default::default() }).await.unwrap().is_empty());

    // Re-sealing is conditional on the key the item was read under.
    store
        .insert_data_key(
            DataKeyRecord { id: 2, key_name: SOFTWARE.into(), wrapped: vec![7; 72], created_at: T0 },
            ev(EventKind::VaultKeyCreated),
        )
        .await
        .unwrap();
    let old = store.sealed_on_old_keys(SOFTWARE.into(), 2, 100).await.unwrap();
    assert_eq!(old.len(), 2, "{old:?}");
    assert_eq!(store.sealed_on_old_keys(SOFTWARE.to_uppercase(), 2, 100).await.unwrap(), old, "key names match in any case");
    let items: Vec<(SealedItem, i64, Vec<u8>)> = old.iter().cloned().map(|i| (i, 2, vec![5; 50])).collect();
    // A value written after the items were read is not overwritten.
    let changed = old.iter().find_map(|i| match i {
        SealedItem::Association { vault_id, name, .. } => Some((*vault_id, name.clone())),
        SealedItem::Data { .. } => None,
    });
    let (cv, cn) = changed.expect("an association on key 1");
    let mut newer = assoc(&cn, 9);
    newer.key_id = 1;
    assert_eq!(
        store.put_association(cv, newer, w.clone(), ev(EventKind::VaultAssociated)).await.unwrap(),
        Checked::Done(PutAssociation::Stored)
    );
    assert_eq!(store.reseal(items.clone(), ev(EventKind::VaultResealed)).await.unwrap(), 1, "the changed value is left alone");
    let kept = store.associations(cv).await.unwrap().into_iter().find(|x| x.name == cn).unwrap();
    assert_eq!((kept.key_id, kept.sealed), (1, vec![9; 40]), "the newer value survives the re-seal");
    let old = store.sealed_on_old_keys(SOFTWARE.into(), 2, 100).await.unwrap();
    let items: Vec<(SealedItem, i64, Vec<u8>)> = old.iter().cloned().map(|i| (i, 2, vec![5; 50])).collect();
    assert_eq!(store.reseal(items.clone(), ev(EventKind::VaultResealed)).await.unwrap(), 1, "read again, re-sealed");
    assert_eq!(store.reseal(items, ev(EventKind::VaultResealed)).await.unwrap(), 0, "already on key 2");
    assert!(store.sealed_on_old_keys(SOFTWARE.into(), 2, 100).await.unwrap().is_empty());
    assert_eq!(entry_of(&*store, access, a).await.unwrap().key_id, 2);
    // Moving one entry under another named key: conditional on the key its data was read under.
    let hsm = "PKCS11:hsm";
    store
        .insert_data_key(
            DataKeyRecord { id: 3, key_name: hsm.into(), wrapped: vec![6; 60], created_at: T0 },
            ev(EventKind::VaultKeyCreated),
        )
        .await
        .unwrap();
    let data = SealedItem::Data { vault_id: a, key_id: 2, sealed: vec![5; 50] };
    let of_a: Vec<(SealedItem, i64, Vec<u8>)> = store
        .associations(a)
        .await
        .unwrap()
        .into_iter()
        .map(|x| {
            let item = SealedItem::Association { vault_id: a, name: x.name, value_type: x.value_type, key_id: x.key_id, sealed: x.sealed };
            (item, 3, vec![4; 40])
        })
        .collect();
    assert!(!of_a.is_empty(), "entry a has associations to move with it");
    let rekey = |items: Vec<(SealedItem, i64, Vec<u8>)>| {
        let (store, w) = (store.clone(), w.clone());
        async move { store.rekey_entry(a, hsm.into(), items, Some(w), ev(EventKind::VaultResealed)).await.unwrap() }
    };
    // Every association must come along, as read: one left out, or one
    // changed since, and nothing is written.
    let mut partial = vec![(data.clone(), 3, vec![4; 50])];
    partial.extend(of_a.iter().skip(1).cloned());
    assert_eq!(rekey(partial).await, Checked::Done(false), "an association left behind: nothing written");
    let mut stale = vec![(data.clone(), 3, vec![4; 50])];
    stale.extend(of_a.iter().cloned());
    if let Some((SealedItem::Association { sealed, .. }, _, _)) = stale.get_mut(1) {
        sealed[0] ^= 1;
    }
    assert_eq!(rekey(stale).await, Checked::Done(false), "an association changed since it was read: nothing written");
    assert_eq!(entry_of(&*store, access, a).await.unwrap().key_name, SOFTWARE, "still under its key");
    let mut whole = vec![(data.clone(), 3, vec![4; 50])];
    whole.extend(of_a.iter().cloned());
    assert_eq!(rekey(whole).await, Checked::Done(true));
    let e = entry_of(&*store, access, a).await.unwrap();
    assert_eq!((e.key_name.as_str(), e.key_id, e.sealed), (hsm, 3, vec![4; 50]));
    assert!(
        store.associations(a).await.unwrap().iter().all(|x| (x.key_id, &x.sealed) == (3, &vec![4; 40])),
        "its associations moved with it"
    );
    let again = rekey(vec![(data, 3, vec![3; 50])]).await;
    assert_eq!(again, Checked::Done(false), "no longer under key 2: nothing written");
    assert!(store.sealed_on_old_keys(hsm.into(), 3, 100).await.unwrap().is_empty());
    assert!(store.sealed_on_old_keys(SOFTWARE.into(), 2, 100).await.unwrap().is_empty());
    // The entries under a named key, page by page (`admin keys move`).
    let moved = SealedItem::Data { vault_id: a, key_id: 3, sealed: vec![4; 50] };
    assert_eq!(store.entries_under_key(hsm.into(), VaultId(0), 10).await.unwrap(), vec![moved.clone()]);
    assert!(store.entries_under_key(hsm.into(), a, 10).await.unwrap().is_empty(), "only VaultIDs above `after`");
    assert_eq!(store.entries_under_key("pkcs11:HSM".into(), VaultId(0), 10).await.unwrap().len(), 1, "key names match in any case");
    let (mut paged, mut after) = (Vec::new(), VaultId(0));
    loop {
        let page = store.entries_under_key(SOFTWARE.into(), after, 1).await.unwrap();
        let Some(SealedItem::Data { vault_id, .. }) = page.last() else { break };
        assert_eq!(page.len(), 1);
        after = *vault_id;
        paged.push(after);
    }
    let mut software: Vec<VaultId> = store.vault_ids(VaultFilter::default()).await.unwrap().into_iter().filter(|v| *v != a).collect();
    software.sort();
    assert_eq!(paged, software);
    // The administrator moves it back, without a grant to check.
    let mut items = vec![(moved, 2, vec![5; 50])];
    items.extend(store.associations(a).await.unwrap().into_iter().map(|x| {
        (
            SealedItem::Association { vault_id: a, name: x.name, value_type: x.value_type, key_id: x.key_id, sealed: x.sealed },
            2,
            vec![5; 40],
        )
    }));
    let back = store.rekey_entry(a, SOFTWARE.into(), items, None, ev(EventKind::VaultResealed)).await.unwrap();
    assert_eq!(back, Checked::Done(true));
    assert_eq!(entry_of(&*store, access, a).await.unwrap().key_name, SOFTWARE);
    let mut current = store.vault_context(access, None).await.unwrap().unwrap().current_keys;
    current.sort();
    assert_eq!(current, vec![(hsm.to_owned(), 3), (SOFTWARE.to_owned(), 2)]);
    // Every change wrote its event, and only changes did.
    let head = store.event_head().await.unwrap();
    let events = store.events(EventFilter { limit: 1000, ..Default::default() }).await.unwrap();
    assert_eq!(verify_chain(&events, head).unwrap(), 27, "21 vault changes, 3 folders, the integration, the writer and its grant");
    let deleted = events.iter().filter(|e| e.event.kind == EventKind::VaultDeleted).count();
    assert_eq!(deleted, 1);
}

pub(crate) async fn device_start_quota(store: Arc<dyn Store>) {
    let rng = rng();
    let rule = Rule { limit: 3, window_secs: 60, lockout_secs: 0 };
    let quota = || Some(("device:addr:x".to_owned(), rule));
    for n in 0..3u8 {
        store.insert_device(device(&rng, n), ev(EventKind::DeviceAuthorizationStarted), quota()).await.unwrap();
    }
    let over = store.insert_device(device(&rng, 3), ev(EventKind::DeviceAuthorizationStarted), quota()).await;
    assert!(matches!(over, Err(StoreError::QuotaExceeded)), "{over:?}");
    assert!(device_of(&*store, device(&rng, 3).code_hash).await.is_none(), "nothing written past the quota");
    let starts = store.events(EventFilter { kind: Some("device.started".into()), limit: 10, ..Default::default() }).await.unwrap();
    assert_eq!(starts.len(), 3);
    // Another key is not affected; a new window starts afresh.
    store
        .insert_device(device(&rng, 4), ev(EventKind::DeviceAuthorizationStarted), Some(("device:addr:y".to_owned(), rule)))
        .await
        .unwrap();
    let mut later = device(&rng, 5);
    later.created_at = T0.plus_secs(61);
    later.expires_at = T0.plus_secs(361);
    store.insert_device(later, Event::new(EventKind::DeviceAuthorizationStarted, T0.plus_secs(61)), quota()).await.unwrap();
}

/// A write re-checks the writer's rights in its own transaction: rights
/// removed (or a grant revoked) after the context read are never bypassed.
pub(crate) async fn vault_writes_recheck_rights(store: Arc<dyn Store>) {
    use strongroom_core::vault::Rights;
    use strongroom_store::{Checked, PutAssociation};
    first_data_key(&*store).await;
    let (admin, _) = writer(&*store, true).await;
    let (w, access) = writer(&*store, false).await;
    let team = folder("\\VED\\Policy\\Team");
    store.create_folders(crate::cases::lineage(&folder("\\VED\\Policy\\Team\\App")), ev(EventKind::FolderCreated)).await.unwrap();
    store.set_rights(team.clone(), w.user_id.clone(), Rights::READ.union(Rights::WRITE), ev(EventKind::RightsChanged)).await.unwrap();
    let id = store.allocate_vault_id().await.unwrap();
    // Write inherited from the folder above the owner.
    let done = store.insert_entry(entry(id, &["\\VED\\Policy\\Team\\App"]), w.clone(), ev(EventKind::VaultAdded)).await.unwrap();
    assert_eq!(done, Checked::Done(true));
    // The context read says the writer may write...
    let ctx = store.vault_context(access, Some(id)).await.unwrap().unwrap();
    assert_eq!(ctx.rights, vec![(team.key().to_owned(), Rights::READ.union(Rights::WRITE))]);
    assert_eq!(ctx.current_keys, vec![(SOFTWARE.to_owned(), 1)]);
    assert!(ctx.entry.is_some());
    let put = |n: &str, h: u8, who: strongroom_store::Writer| {
        let store = store.clone();
        let a = assoc(n, h);
        async move { store.put_association(id, a, who, ev(EventKind::VaultAssociated)).await.unwrap() }
    };
    assert_eq!(put("n", 1, w.clone()).await, Checked::Done(PutAssociation::Stored));
    // ...then an administrator removes the rights: the next write is refused, nothing written.
    store.set_rights(team.clone(), w.user_id.clone(), Rights::READ, ev(EventKind::RightsChanged)).await.unwrap();
    assert_eq!(put("n", 2, w.clone()).await, Checked::Denied);
    assert_eq!(store.dissociate(id, None, None, w.clone(), ev(EventKind::VaultDissociated)).await.unwrap(), Checked::Denied);
    assert_eq!(store.associations(id).await.unwrap(), vec![assoc("n", 1)], "the denied writes changed nothing");
    // A master admin may; a revoked grant may not, whatever the rights.
    assert_eq!(put("n", 3, admin.clone()).await, Checked::Done(PutAssociation::Stored));
    store.set_rights(team.clone(), w.user_id.clone(), Rights::WRITE, ev(EventKind::RightsChanged)).await.unwrap();
    assert_eq!(put("n", 4, w.clone()).await, Checked::Done(PutAssociation::Stored));
    store.revoke_grant(w.grant_id.clone(), T0.plus_secs(1), ev(EventKind::GrantRevoked)).await.unwrap();
    assert_eq!(put("n", 5, w.clone()).await, Checked::Denied);
    // Rights on a sibling whose name is a prefix do not count (\Team vs \TeamB).
    let (w2, _) = {
        let rng = rng();
        let u = User {
            id: UserId::generate(&rng),
            name: "other".into(),
            disabled: false,
            master_admin: false,
            created_at: T0,
            signed_in_at: None,
        };
        store.create_user(u.clone(), "$argon2id$fake".into(), ev(EventKind::UserCreated)).await.unwrap();
        let mut g = Grant::new(&rng, "app", u.id.clone(), Scope::parse("restricted:manage").unwrap(), T0, TokenSettings::default());
        first_pair(&rng, &mut g);
        store.insert_grant(g.clone(), ev(EventKind::TokenIssued)).await.unwrap();
        (strongroom_store::Writer { grant_id: g.id, user_id: u.id }, ())
    };
    store.create_folders(crate::cases::lineage(&folder("\\VED\\Policy\\Tea")), ev(EventKind::FolderCreated)).await.unwrap();
    store.set_rights(folder("\\VED\\Policy\\Tea"), w2.user_id.clone(), Rights::WRITE, ev(EventKind::RightsChanged)).await.unwrap();
    assert_eq!(put("n", 6, w2).await, Checked::Denied);
}

#[derive(Debug, Default)]
struct Batches(std::sync::Mutex<Vec<usize>>);

impl strongroom_store::StoreObserver for Batches {
    fn batch(&self, jobs: usize, _elapsed: std::time::Duration, committed: bool) {
        assert!(committed);
        self.0.lock().unwrap().push(jobs);
    }
}

pub(crate) async fn readiness_and_pool(store: Arc<dyn Store>) {
    store.ready().await.unwrap();
    let idle = store.pool_status();
    assert!(idle.max >= 1 && idle.in_use <= idle.max && idle.waiting == 0, "{idle:?}");
    let batches = Arc::new(Batches::default());
    store.observe(batches.clone());
    let e = Event::new(EventKind::LoginFailed, UnixTime::from_secs(1_700_000_000));
    store.append_event(e).await.unwrap();
    let seen = batches.0.lock().unwrap().clone();
    // SQLite's writer commits every write in batches; PostgreSQL commits an
    // event of its own alone, and batches only refreshes and Associate.
    if store.describe().starts_with("sqlite") {
        assert!(!seen.is_empty() && seen.iter().all(|n| *n >= 1), "{seen:?}");
    } else {
        assert!(seen.is_empty(), "{seen:?}");
    }
    // An association is group-committed on both.
    use strongroom_store::{Checked, PutAssociation};
    first_data_key(&*store).await;
    let (w, _) = writer(&*store, true).await;
    store.create_folders(crate::cases::lineage(&folder("\\VED\\Policy\\A")), ev(EventKind::FolderCreated)).await.unwrap();
    let id = store.allocate_vault_id().await.unwrap();
    store.insert_entry(entry(id, &["\\VED\\Policy\\A"]), w.clone(), ev(EventKind::VaultAdded)).await.unwrap();
    let before = batches.0.lock().unwrap().len();
    let put = store.put_association(id, assoc("n", 1), w, ev(EventKind::VaultAssociated)).await.unwrap();
    assert_eq!(put, Checked::Done(PutAssociation::Stored));
    let seen = batches.0.lock().unwrap().clone();
    assert!(seen.len() > before && seen[before..].iter().all(|n| *n >= 1), "the association's batch was reported: {seen:?}");
}

/// Writes that lock the same row from both sides of the event chain's head
/// never deadlock: refreshes racing a revocation of their grant, and
/// associations racing another write to their entry. On PostgreSQL a lock
/// taken in two orders fails one side with a deadlock error after
/// `deadlock_timeout`; every call here must answer.
pub(crate) async fn racing_writes_on_one_row_all_answer(store: Arc<dyn Store>) {
    use strongroom_core::vault::VaultId;
    use strongroom_store::Checked;
    let rng = Arc::new(rng());
    first_data_key(&*store).await;
    let (w, _) = writer(&*store, true).await;
    store.create_folders(crate::cases::lineage(&folder("\\VED\\Policy\\A")), ev(EventKind::FolderCreated)).await.unwrap();
    let alice = user(&*store, &rng, "alice").await;
    for trial in 0..20_i64 {
        let mut grant = Grant::new(&*rng, "app", alice.id.clone(), Scope::parse("restricted").unwrap(), T0, TokenSettings::default());
        let first = first_pair(&*rng, &mut grant);
        store.insert_grant(grant.clone(), ev(EventKind::TokenIssued)).await.unwrap();
        let id: VaultId = store.allocate_vault_id().await.unwrap();
        assert_eq!(
            store.insert_entry(entry(id, &["\\VED\\Policy\\A"]), w.clone(), ev(EventKind::VaultAdded)).await.unwrap(),
            Checked::Done(true)
        );
        let mut tasks: Vec<tokio::task::JoinHandle<()>> = Vec::new();
        for k in 0..8_u8 {
            let (store, rng, g, w) = (store.clone(), rng.clone(), grant.clone(), w.clone());
            let presented = first.refresh_hash().unwrap();
            tasks.push(tokio::spawn(async move {
                let t = IssuedTokens::mint(&TokenKey::new(KEY), &*rng, &g, T0.plus_secs(1));
                store.advance_pair(g.id.clone(), 0, PairChange::rotation(&g, presented, &t), ev(EventKind::TokenRefreshed)).await.unwrap();
                store.put_association(id, assoc(&format!("n{k}"), k), w, ev(EventKind::VaultAssociated)).await.unwrap();
            }));
        }
        for k in 0..4_i32 {
            let (store, g, w) = (store.clone(), grant.clone(), w.clone());
            tasks.push(tokio::spawn(async move {
                if k == 0 {
                    store.revoke_grant(g.id.clone(), T0.plus_secs(1), ev(EventKind::GrantRevoked)).await.unwrap();
                }
                store.mutate_entry(id, 40 + k, w, ev(EventKind::VaultMutated)).await.unwrap();
            }));
        }
        for t in tasks {
            t.await.unwrap_or_else(|e| panic!("trial {trial}: a racing write failed: {e}"));
        }
        let ctx = store.refresh_context(first.refresh_presented().unwrap()).await.unwrap().unwrap();
        assert!(ctx.grant.revoked_at.is_some(), "trial {trial}: the revocation took effect");
    }
    let events = store.events(EventFilter { limit: 10_000, ..Default::default() }).await.unwrap();
    verify_chain(&events, store.event_head().await.unwrap()).unwrap();
}

/// Many associations at once, as group commits take them (on PostgreSQL
/// several in one statement): every writer gets its own answer (stored, the
/// same value again, no such entry, no right to write), exactly what was
/// stored is there, one event per stored value, and the chain verifies.
pub(crate) async fn simultaneous_associations_each_get_their_answer(store: Arc<dyn Store>) {
    use strongroom_core::vault::{Rights, VaultId};
    use strongroom_store::{Checked, PutAssociation};
    first_data_key(&*store).await;
    let (admin, _) = writer(&*store, true).await;
    let (other, _) = writer(&*store, false).await;
    for f in ["\\VED\\Policy\\A", "\\VED\\Policy\\B"] {
        store.create_folders(crate::cases::lineage(&folder(f)), ev(EventKind::FolderCreated)).await.unwrap();
    }
    // `other` may write in A only.
    store.set_rights(folder("\\VED\\Policy\\A"), other.user_id.clone(), Rights::WRITE, ev(EventKind::RightsChanged)).await.unwrap();
    let mut ids = Vec::new();
    for owner in ["\\VED\\Policy\\A", "\\VED\\Policy\\B", "\\VED\\Policy\\A", "\\VED\\Policy\\B"] {
        let id = store.allocate_vault_id().await.unwrap();
        store.insert_entry(entry(id, &[owner]), admin.clone(), ev(EventKind::VaultAdded)).await.unwrap();
        ids.push(id);
    }
    // One value that is there already (sent again below: Identical).
    let already = store.put_association(ids[0], assoc("same", 7), admin.clone(), ev(EventKind::VaultAssociated)).await.unwrap();
    assert_eq!(already, Checked::Done(PutAssociation::Stored));
    let missing = VaultId(ids[3].0 + 1000);
    let batches = Arc::new(Batches::default());
    store.observe(batches.clone());
    let mut expected = Vec::new();
    // Rounds 0-2 mix every answer (a batch with one that writes nothing is
    // rolled back and run again a job at a time); rounds 3-5 only store.
    for round in 0..6u8 {
        let mut tasks = Vec::new();
        for k in 0..24u8 {
            // One job a round sends the value already there: two in one
            // batch would name the same (entry, name) and not be grouped.
            let kind = if round >= 3 || (k % 6 == 5 && k != 5) { k % 3 } else { k % 6 };
            let (entry_id, who, name, h, want) = match kind {
                // Distinct names on every entry, by the administrator.
                0..=2 => (ids[usize::from(k % 4)], admin.clone(), format!("r{round}-k{k}"), k + 1, Checked::Done(PutAssociation::Stored)),
                // `other` on entries in A (allowed) and in B (denied).
                3 => {
                    let id = ids[usize::from(k % 4)];
                    let allowed = id == ids[0] || id == ids[2];
                    let want = if allowed { Checked::Done(PutAssociation::Stored) } else { Checked::Denied };
                    (id, other.clone(), format!("o{round}-k{k}"), k + 1, want)
                }
                4 => (missing, admin.clone(), format!("m{round}-k{k}"), k + 1, Checked::Done(PutAssociation::NoEntry)),
                _ => (ids[0], admin.clone(), "same".to_owned(), 7, Checked::Done(PutAssociation::Identical)),
            };
            if want == Checked::Done(PutAssociation::Stored) {
                expected.push((entry_id, name.clone(), h));
            }
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                let got = store.put_association(entry_id, assoc(&name, h), who, ev(EventKind::VaultAssociated)).await.unwrap();
                (name, got, want)
            }));
        }
        for t in tasks {
            let (name, got, want) = t.await.unwrap();
            assert_eq!(got, want, "round {round}: {name}");
        }
    }
    for id in &ids {
        let stored = store.associations(*id).await.unwrap();
        for (e, name, h) in expected.iter().filter(|(e, _, _)| e == id) {
            let a = stored.iter().find(|a| &a.name == name).unwrap_or_else(|| panic!("{name} on {e:?} missing"));
            assert_eq!(a.lookup, [*h; 32], "{name}");
        }
        let extra: Vec<_> = stored
            .iter()
            .filter(|a| a.name != "same" && !expected.iter().any(|(e, n, _)| e == id && n == &a.name))
            .map(|a| &a.name)
            .collect();
        assert!(extra.is_empty(), "stored without being acknowledged: {extra:?}");
    }
    let sizes = batches.0.lock().unwrap().clone();
    assert!(sizes.iter().any(|n| *n >= 4), "simultaneous writes were committed together: {sizes:?}");
    let events = store.events(EventFilter { kind: Some("vault.associated".into()), limit: 10_000, ..Default::default() }).await.unwrap();
    assert_eq!(events.len(), expected.len() + 1, "one event per stored value");
    let all = store.events(EventFilter { limit: 10_000, ..Default::default() }).await.unwrap();
    verify_chain(&all, store.event_head().await.unwrap()).unwrap();
}

/// The master key's check value is recorded once, by the first of any number
/// of simultaneous openers, with one event; every other caller, then and
/// later, gets the recorded value back whatever it offered.
pub(crate) async fn the_master_key_check_is_recorded_once(store: Arc<dyn Store>) {
    let recorded = ev(EventKind::MasterKeyRecorded);
    let tasks: Vec<_> = (0..8_u8)
        .map(|k| {
            let (store, event) = (store.clone(), recorded.clone());
            tokio::spawn(async move { (k, store.record_key_check([k; 32], event).await.unwrap()) })
        })
        .collect();
    let mut answers = Vec::new();
    for t in tasks {
        answers.push(t.await.unwrap());
    }
    let firsts: Vec<u8> = answers.iter().filter(|(_, a)| a.is_none()).map(|(k, _)| *k).collect();
    assert_eq!(firsts.len(), 1, "exactly one opener records its value: {answers:?}");
    let first = [firsts[0]; 32];
    assert!(answers.iter().all(|(_, a)| a.is_none_or(|v| v == first)), "the others see the recorded value: {answers:?}");
    assert_eq!(store.record_key_check([0xee; 32], recorded.clone()).await.unwrap(), Some(first), "a later, other key is told the first");
    assert_eq!(store.record_key_check(first, recorded).await.unwrap(), Some(first));
    let events = store
        .events(EventFilter { kind: Some(EventKind::MasterKeyRecorded.as_str().into()), limit: 100, ..Default::default() })
        .await
        .unwrap();
    assert_eq!(events.len(), 1, "one event, for the recording");
    let all = store.events(EventFilter { limit: 1000, ..Default::default() }).await.unwrap();
    verify_chain(&all, store.event_head().await.unwrap()).unwrap();
}

/// The reads PostgreSQL's reader coalesces that answer many rows a key (an
/// integration with its allowed users and groups, a JWT issuer with its
/// mappings and their clients, the entries with an association and their
/// owners), made many at once: each caller gets what it gets alone, in the
/// same order; a key nobody has gets nothing.
pub(crate) async fn many_row_reads_at_once_each_get_their_own(store: Arc<dyn Store>) {
    use std::collections::HashMap;
    use strongroom_core::identity::{Group, GroupId};
    use strongroom_core::machine::MappingRule;
    let rng = Arc::new(rng());
    let mut users = Vec::new();
    for i in 0..5 {
        users.push(user(&*store, &rng, &format!("u{i}")).await.id);
    }
    let mut groups = Vec::new();
    for i in 0..3 {
        let g = Group { id: GroupId::generate(&*rng), name: format!("g{i}"), created_at: T0 };
        store.create_group(g.clone(), ev(EventKind::GroupCreated)).await.unwrap();
        groups.push(g.id);
    }
    let clients: Vec<String> = (0..8).map(|i| format!("app{i}")).collect();
    for (i, client) in clients.iter().enumerate() {
        let mut app = integration(client);
        app.allowed_users = AllowedUsers::Only(users.iter().rev().take(i % 5).cloned().collect());
        app.allowed_groups = groups.iter().rev().take(i % 4).cloned().collect();
        store.create_integration(app, ev(EventKind::IntegrationCreated)).await.unwrap();
    }
    // Issuers with one to four mappings each, made in the reverse of their names' order.
    let mut issuers = Vec::new();
    for k in 0..4 {
        let mut iss = crate::machines::issuer();
        (iss.name, iss.issuer) = (format!("iss{k}"), format!("https://iss{k}.invalid"));
        store.save_jwt_issuer(iss.clone(), ev(EventKind::JwtIssuerSaved)).await.unwrap();
        for j in (0..=k).rev() {
            let mut m = crate::machines::jwt_mapping();
            m.name = format!("m{k}-{j}");
            if let MappingRule::Jwt { issuer, .. } = &mut m.rule {
                issuer.clone_from(&iss.name);
            }
            m.client_ids = clients.iter().rev().skip(j).take(j % 3 + 1).cloned().collect();
            store.save_mapping(m, ev(EventKind::MappingSaved)).await.unwrap();
        }
        issuers.push(iss.issuer);
    }
    // Entries with associations: names shared by several entries, each with one to three owners.
    first_data_key(&*store).await;
    let (w, access) = writer(&*store, true).await;
    let owners = ["\\VED\\Policy\\C", "\\VED\\Policy\\A", "\\VED\\Policy\\B"];
    for f in owners {
        store.create_folders(lineage(&folder(f)), ev(EventKind::FolderCreated)).await.unwrap();
    }
    for n in 0..9 {
        let id = store.allocate_vault_id().await.unwrap();
        store.insert_entry(entry(id, &owners[..=n % 3]), w.clone(), ev(EventKind::VaultAdded)).await.unwrap();
        let name = format!("n{}", n % 3);
        store.put_association(id, assoc(&name, u8::try_from(n % 2).unwrap()), w.clone(), ev(EventKind::VaultAssociated)).await.unwrap();
    }
    let lookups: Vec<(String, Option<[u8; 32]>)> =
        (0..4).flat_map(|n| [(format!("n{n}"), None), (format!("n{n}"), Some([0; 32])), (format!("n{n}"), Some([1; 32]))]).collect();

    // Each read alone first: what each caller must get when they are many.
    let mut alone_apps = HashMap::new();
    for c in clients.iter().chain([&"nobody".to_owned()]) {
        alone_apps.insert(c.clone(), store.integration(c.clone()).await.unwrap());
    }
    assert_eq!(alone_apps.values().flatten().map(|i| i.allowed_groups.len()).sum::<usize>(), 12, "1+2+3, twice");
    let mut alone_issuers = HashMap::new();
    for i in issuers.iter().chain([&"https://nobody.invalid".to_owned()]) {
        alone_issuers.insert(i.clone(), store.jwt_context(i.clone()).await.unwrap());
    }
    let names: Vec<String> = alone_issuers.values().flatten().flat_map(|(_, ms)| ms.iter().map(|m| m.name.clone())).collect();
    assert_eq!(names.len(), 1 + 2 + 3 + 4, "every mapping of every issuer");
    let mut alone_lookups = HashMap::new();
    for l in &lookups {
        alone_lookups.insert(l.clone(), store.vault_lookup(access, l.0.clone(), l.1).await.unwrap().unwrap().1);
    }
    let found: usize = alone_lookups.values().map(Vec::len).sum();
    assert_eq!(found, 9 + 9, "each entry by its name, and by its name and value");
    assert!(alone_lookups.values().flatten().any(|(_, o)| o.len() == 3), "an entry with three owners");

    for round in 0..3 {
        let mut tasks: Vec<tokio::task::JoinHandle<()>> = Vec::new();
        for copy in 0..2 {
            for (client, want) in &alone_apps {
                let (store, client, want) = (store.clone(), client.clone(), want.clone());
                tasks.push(tokio::spawn(async move {
                    let got = store.integration(client.clone()).await.unwrap();
                    assert_eq!(got, want, "round {round}, copy {copy}: integration {client} as read alone");
                }));
            }
            for (iss, want) in &alone_issuers {
                let (store, iss, want) = (store.clone(), iss.clone(), want.clone());
                tasks.push(tokio::spawn(async move {
                    let got = store.jwt_context(iss.clone()).await.unwrap();
                    assert_eq!(got, want, "round {round}, copy {copy}: issuer {iss} and its mappings as read alone");
                }));
            }
            for (l, want) in &alone_lookups {
                let (store, l, want) = (store.clone(), l.clone(), want.clone());
                tasks.push(tokio::spawn(async move {
                    let (_, got) = store.vault_lookup(access, l.0.clone(), l.1).await.unwrap().unwrap();
                    assert_eq!(got, want, "round {round}, copy {copy}: lookup {l:?} as read alone");
                }));
            }
        }
        for t in tasks {
            t.await.unwrap_or_else(|e| panic!("round {round}: a read failed: {e}"));
        }
    }
}
