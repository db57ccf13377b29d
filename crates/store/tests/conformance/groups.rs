//! Groups in the rights model: members, rights granted to groups adding up
//! with a user's own and inherited down the tree, groups allowed on
//! integrations, and a removal that no write begun after it survives.

use crate::RightsFixtures as _;
use std::sync::Arc;

use strongroom_core::event::EventKind;
use strongroom_core::identity::{Group, GroupId};
use strongroom_core::integration::AllowedUsers;
use strongroom_core::vault::Rights;
use strongroom_store::{Checked, EventFilter, PutAssociation, Store, StoreError};

use crate::cases::{T0, assoc, entry, ev, first_data_key, folder, integration, rng, user, writer};

async fn group(store: &dyn Store, name: &str) -> Group {
    let g = Group { id: GroupId::generate(&rng()), name: name.into(), created_at: T0 };
    store.create_group(g.clone(), ev(EventKind::GroupCreated).object(name)).await.unwrap();
    g
}

fn kinds(events: &[strongroom_core::event::StoredEvent]) -> Vec<EventKind> {
    events.iter().map(|e| e.event.kind).collect()
}

pub(crate) async fn groups_and_their_members(store: Arc<dyn Store>) {
    let rng = rng();
    let alice = user(&*store, &rng, "alice").await;
    let bob = user(&*store, &rng, "bob").await;
    let ops = group(&*store, "Ops").await;
    let dup = Group { id: GroupId::generate(&rng), name: "OPS".into(), created_at: T0 };
    assert!(matches!(store.create_group(dup, ev(EventKind::GroupCreated)).await, Err(StoreError::Conflict)), "names in any case");
    assert_eq!(store.group_by_name("ops".into()).await.unwrap(), Some(ops.clone()));
    assert_eq!(store.group_by_id(ops.id.clone()).await.unwrap(), Some(ops.clone()));
    let before = store.event_head().await.unwrap().0;
    assert!(store.add_member(ops.id.clone(), alice.id.clone(), ev(EventKind::GroupMemberAdded)).await.unwrap());
    assert!(!store.add_member(ops.id.clone(), alice.id.clone(), ev(EventKind::GroupMemberAdded)).await.unwrap(), "already one");
    assert!(store.add_member(ops.id.clone(), bob.id.clone(), ev(EventKind::GroupMemberAdded)).await.unwrap());
    let names: Vec<String> = store.members_of(ops.id.clone()).await.unwrap().into_iter().map(|u| u.name).collect();
    assert_eq!(names, ["alice", "bob"]);
    assert_eq!(store.groups_of(alice.id.clone()).await.unwrap(), vec![ops.clone()]);
    assert_eq!(store.list_groups().await.unwrap(), vec![(ops.clone(), 2)]);
    assert!(store.remove_member(ops.id.clone(), bob.id.clone(), ev(EventKind::GroupMemberRemoved)).await.unwrap());
    assert!(!store.remove_member(ops.id.clone(), bob.id.clone(), ev(EventKind::GroupMemberRemoved)).await.unwrap(), "not one");
    assert!(store.groups_of(bob.id.clone()).await.unwrap().is_empty());
    // An event for each change, none for what changed nothing, on the chain.
    let after = store.events(EventFilter { after_seq: Some(before), limit: 100, ..Default::default() }).await.unwrap();
    assert_eq!(kinds(&after), [EventKind::GroupMemberAdded, EventKind::GroupMemberAdded, EventKind::GroupMemberRemoved]);
    // Deleting the group takes its members, rights and places on integrations.
    store.create_folders(crate::cases::lineage(&folder("\\VED\\Policy\\Ops")), ev(EventKind::FolderCreated)).await.unwrap();
    store.set_group_rights(folder("\\VED\\Policy\\Ops"), ops.id.clone(), Rights::READ, ev(EventKind::RightsChanged)).await.unwrap();
    let mut app = integration("app");
    app.allowed_users = AllowedUsers::Only(vec![]);
    app.allowed_groups = vec![ops.id.clone()];
    store.create_integration(app, ev(EventKind::IntegrationCreated)).await.unwrap();
    assert_eq!(store.integration("app".into()).await.unwrap().unwrap().allowed_groups, vec![ops.id.clone()]);
    assert_eq!(store.delete_group("OPS".into(), ev(EventKind::GroupDeleted)).await.unwrap(), Some(1));
    assert_eq!(store.delete_group("ops".into(), ev(EventKind::GroupDeleted)).await.unwrap(), None);
    assert!(store.groups_of(alice.id.clone()).await.unwrap().is_empty());
    assert!(store.integration("app".into()).await.unwrap().unwrap().allowed_groups.is_empty());
    assert!(store.all_rights().await.unwrap().is_empty());
    let head = store.event_head().await.unwrap();
    strongroom_core::event::verify_chain(&store.events(EventFilter { limit: 1000, ..Default::default() }).await.unwrap(), head).unwrap();
}

pub(crate) async fn group_rights_add_up_and_stop_with_the_membership(store: Arc<dyn Store>) {
    first_data_key(&*store).await;
    let (w, access) = writer(&*store, false).await;
    let team = folder("\\VED\\Policy\\Team");
    store.create_folders(crate::cases::lineage(&folder("\\VED\\Policy\\Team\\App")), ev(EventKind::FolderCreated)).await.unwrap();
    let devs = group(&*store, "devs").await;
    store.set_rights(team.clone(), w.user_id.clone(), Rights::READ, ev(EventKind::RightsChanged)).await.unwrap();
    store.set_group_rights(team.clone(), devs.id.clone(), Rights::WRITE, ev(EventKind::RightsChanged)).await.unwrap();
    let id = store.allocate_vault_id().await.unwrap();
    // Not a member: Read of their own, no Write.
    assert_eq!(
        store.insert_entry(entry(id, &["\\VED\\Policy\\Team\\App"]), w.clone(), ev(EventKind::VaultAdded)).await.unwrap(),
        Checked::Denied
    );
    store.add_member(devs.id.clone(), w.user_id.clone(), ev(EventKind::GroupMemberAdded)).await.unwrap();
    // A member: the group's Write, inherited from the folder above the owner.
    assert_eq!(
        store.insert_entry(entry(id, &["\\VED\\Policy\\Team\\App"]), w.clone(), ev(EventKind::VaultAdded)).await.unwrap(),
        Checked::Done(true)
    );
    let ctx = store.vault_context(access, Some(id)).await.unwrap().unwrap();
    let mut held = ctx.rights.clone();
    held.sort_by_key(|(_, r)| r.bits());
    assert_eq!(held, vec![(team.key().to_owned(), Rights::READ), (team.key().to_owned(), Rights::WRITE)], "the user's own and the group's");
    assert_eq!(store.rights_of(w.user_id.clone()).await.unwrap().len(), 2);
    assert_eq!(store.group_rights_of(devs.id.clone()).await.unwrap(), vec![(team.key().to_owned(), Rights::WRITE)]);
    let all = store.all_rights().await.unwrap();
    assert!(all.contains(&(team.clone(), "devs".to_owned(), Rights::WRITE, true)), "{all:?}");
    assert!(all.contains(&(team.clone(), "writer".to_owned(), Rights::READ, false)), "{all:?}");
    let put = |h: u8| {
        let store = store.clone();
        let w = w.clone();
        async move { store.put_association(id, assoc("n", h), w, ev(EventKind::VaultAssociated)).await.unwrap() }
    };
    assert_eq!(put(1).await, Checked::Done(PutAssociation::Stored));
    // Out of the group: the next write is refused in its own transaction.
    store.remove_member(devs.id.clone(), w.user_id.clone(), ev(EventKind::GroupMemberRemoved)).await.unwrap();
    assert_eq!(put(2).await, Checked::Denied);
    assert_eq!(store.vault_context(access, Some(id)).await.unwrap().unwrap().rights, vec![(team.key().to_owned(), Rights::READ)]);
    // Back in, then the group's rights taken away.
    store.add_member(devs.id.clone(), w.user_id.clone(), ev(EventKind::GroupMemberAdded)).await.unwrap();
    assert_eq!(put(3).await, Checked::Done(PutAssociation::Stored));
    store.set_group_rights(team.clone(), devs.id.clone(), Rights::NONE, ev(EventKind::RightsChanged)).await.unwrap();
    assert_eq!(put(4).await, Checked::Denied);
}

pub(crate) async fn a_group_on_an_integration_admits_its_members_while_they_are_members(store: Arc<dyn Store>) {
    let (w, access) = writer(&*store, false).await;
    let devs = group(&*store, "devs").await;
    // A member first: the integration's change below stops nobody (a change
    // that takes a user off its list revokes their grants, `findings`).
    store.add_member(devs.id.clone(), w.user_id.clone(), ev(EventKind::GroupMemberAdded)).await.unwrap();
    let mut app = store.integration("app".into()).await.unwrap().unwrap();
    app.allowed_users = AllowedUsers::Only(vec![]);
    app.allowed_groups = vec![devs.id.clone()];
    store.update_integration(app, ev(EventKind::IntegrationUpdated)).await.unwrap();
    let standing = || {
        let store = store.clone();
        async move { store.access_context(access).await.unwrap().unwrap().standing.user_allowed }
    };
    assert!(standing().await, "a member");
    assert!(store.access_context(access).await.unwrap().unwrap().check(T0.plus_secs(1)).is_ok());
    store.remove_member(devs.id.clone(), w.user_id.clone(), ev(EventKind::GroupMemberRemoved)).await.unwrap();
    assert!(!standing().await, "removed: the live token no longer stands");
    assert!(store.access_context(access).await.unwrap().unwrap().check(T0.plus_secs(1)).is_err());
    // Leaving a group pauses: a member again, the token stands again.
    store.add_member(devs.id.clone(), w.user_id.clone(), ev(EventKind::GroupMemberAdded)).await.unwrap();
    assert!(standing().await, "a member again");
}

/// Writers race a removal from the group that gives them Write: every
/// write the store committed after the removal's event was refused, none
/// slipped in on a check made before it.
pub(crate) async fn a_removal_from_a_group_wins_against_racing_writes(store: Arc<dyn Store>) {
    first_data_key(&*store).await;
    let (w, _) = writer(&*store, false).await;
    store.create_folders(crate::cases::lineage(&folder("\\VED\\Policy\\Team")), ev(EventKind::FolderCreated)).await.unwrap();
    let devs = group(&*store, "devs").await;
    store.set_group_rights(folder("\\VED\\Policy\\Team"), devs.id.clone(), Rights::WRITE, ev(EventKind::RightsChanged)).await.unwrap();
    store.add_member(devs.id.clone(), w.user_id.clone(), ev(EventKind::GroupMemberAdded)).await.unwrap();
    let id = store.allocate_vault_id().await.unwrap();
    store.insert_entry(entry(id, &["\\VED\\Policy\\Team"]), w.clone(), ev(EventKind::VaultAdded)).await.unwrap();
    let start = store.event_head().await.unwrap().0;
    let writers: Vec<_> = (0..64u8)
        .map(|n| {
            let (store, w) = (store.clone(), w.clone());
            tokio::spawn(async move {
                store
                    .put_association(id, assoc(&format!("n{n}"), n), w, ev(EventKind::VaultAssociated).object(format!("n{n}")))
                    .await
                    .unwrap()
            })
        })
        .collect();
    tokio::task::yield_now().await;
    let removed = store.remove_member(devs.id.clone(), w.user_id.clone(), ev(EventKind::GroupMemberRemoved));
    assert!(removed.await.unwrap());
    // Every write started after the removal answered is refused.
    let late = store.put_association(id, assoc("late", 200), w.clone(), ev(EventKind::VaultAssociated)).await.unwrap();
    assert_eq!(late, Checked::Denied);
    let mut done = 0;
    for t in writers {
        match t.await.unwrap() {
            Checked::Done(_) => done += 1,
            Checked::Denied => {}
        }
    }
    let events = store.events(EventFilter { after_seq: Some(start), limit: 1000, ..Default::default() }).await.unwrap();
    let removal = events.iter().position(|e| e.event.kind == EventKind::GroupMemberRemoved).unwrap();
    let associated: Vec<usize> =
        events.iter().enumerate().filter(|(_, e)| e.event.kind == EventKind::VaultAssociated).map(|(i, _)| i).collect();
    assert_eq!(associated.len(), done, "one event per stored write");
    assert!(associated.iter().all(|i| *i < removal), "a write committed after the removal: {:?}", kinds(&events));
    assert_eq!(store.associations(id).await.unwrap().len(), done);
}

/// `approved_grants`: a person's live grants, with their application's name.
pub(crate) async fn a_persons_approved_grants_are_their_live_ones(store: Arc<dyn Store>) {
    use strongroom_core::grant::Grant;
    use strongroom_core::integration::TokenSettings;
    use strongroom_core::scope::Scope;
    let rng = rng();
    let alice = user(&*store, &rng, "alice").await;
    let bob = user(&*store, &rng, "bob").await;
    store.create_integration(integration("app"), ev(EventKind::IntegrationCreated)).await.unwrap();
    let grant = |u: &strongroom_core::identity::User| {
        let mut g = Grant::new(&rng, "app", u.id.clone(), Scope::parse("restricted").unwrap(), T0, TokenSettings::default());
        crate::cases::first_pair(&rng, &mut g);
        g
    };
    let (g1, g2, g3) = (grant(&alice), grant(&alice), grant(&bob));
    for g in [&g1, &g2, &g3] {
        store.insert_grant(g.clone(), ev(EventKind::TokenIssued)).await.unwrap();
    }
    store.revoke_grant(g2.id.clone(), T0.plus_secs(1), ev(EventKind::GrantRevoked)).await.unwrap();
    let mine = store.approved_grants(alice.id.clone(), T0.plus_secs(2)).await.unwrap();
    assert_eq!(mine.iter().map(|(g, app)| (g.id.clone(), app.as_str())).collect::<Vec<_>>(), vec![(g1.id.clone(), "Test app")]);
    assert!(store.approved_grants(alice.id.clone(), g1.refresh_until).await.unwrap().is_empty(), "ended");
}

/// An OpenID Connect sign-in's state is taken once: of 16 simultaneous
/// callbacks with it, exactly one gets its user code; another browser's,
/// or an expired one, none.
pub(crate) async fn an_oidc_state_is_taken_once_under_concurrency(store: Arc<dyn Store>) {
    let (state, binding) = ([1u8; 32], [2u8; 32]);
    store.insert_oidc_state(state, binding, "BCDF-GHJK".into(), T0.plus_secs(300), T0).await.unwrap();
    assert_eq!(store.take_oidc_state(state, [3u8; 32], T0.plus_secs(1)).await.unwrap(), None, "another browser");
    let takers: Vec<_> = (0..16)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move { store.take_oidc_state(state, binding, T0.plus_secs(1)).await.unwrap() })
        })
        .collect();
    let mut won = Vec::new();
    for t in takers {
        if let Some(code) = t.await.unwrap() {
            won.push(code);
        }
    }
    assert_eq!(won, ["BCDF-GHJK"], "exactly one callback");
    store.insert_oidc_state([4u8; 32], binding, "X".into(), T0.plus_secs(300), T0).await.unwrap();
    assert_eq!(store.take_oidc_state([4u8; 32], binding, T0.plus_secs(300)).await.unwrap(), None, "expired");
    // Expired states are forgotten by the next start.
    store.insert_oidc_state([5u8; 32], binding, "Y".into(), T0.plus_secs(900), T0.plus_secs(600)).await.unwrap();
    assert_eq!(store.take_oidc_state([5u8; 32], binding, T0.plus_secs(601)).await.unwrap().as_deref(), Some("Y"));
}

/// `sync_directory_user`: the person as the directory (or OpenID provider)
/// vouches for them, their groups of that provider set to exactly these,
/// and `signed_in_at` this sync's time (what `oidc.session_secs` counts
/// from); a local user has none.
pub(crate) async fn a_directory_sync_records_when_the_person_signed_in(store: Arc<dyn Store>) {
    use strongroom_core::event::Event;
    use strongroom_core::identity::{User, UserId};
    let rng = rng();
    let local = user(&*store, &rng, "alice").await;
    assert_eq!(store.user_by_id(local.id.clone()).await.unwrap().unwrap().signed_in_at, None);
    let id = UserId::directory("OIDC+sso", "0b5e4bd2-8a4f-4b9e-9a51-4f4b9d5e0c11");
    let person =
        User { id: id.clone(), name: "OIDC+sso:carol".into(), disabled: false, master_admin: false, created_at: T0, signed_in_at: None };
    let devs = Group { id: GroupId::generate(&rng), name: "OIDC+sso:devs".into(), created_at: T0 };
    let at = |s: i64| Event::new(EventKind::DirectorySynced, T0.plus_secs(s));
    let first = store.sync_directory_user(person.clone(), "OIDC+sso".into(), vec![devs.clone()], at(10)).await.unwrap();
    assert_eq!(first.signed_in_at, Some(T0.plus_secs(10)));
    assert_eq!(store.user_by_id(id.clone()).await.unwrap(), Some(first.clone()));
    assert_eq!(store.groups_of(id.clone()).await.unwrap().into_iter().map(|g| g.name).collect::<Vec<_>>(), ["OIDC+sso:devs"]);
    // The next sign-in, out of the group: the time moves, the membership goes.
    let again = store.sync_directory_user(person, "OIDC+sso".into(), Vec::new(), at(50)).await.unwrap();
    assert_eq!(again.signed_in_at, Some(T0.plus_secs(50)));
    assert_eq!(store.user_by_id(id.clone()).await.unwrap().unwrap().signed_in_at, Some(T0.plus_secs(50)));
    assert!(store.groups_of(id).await.unwrap().is_empty());
}

/// `grants.last_addr`: the client address of a grant's last token issue,
/// "from where" on the person's page. Written with the grant, then by the
/// refresh's one conditional write (no statement of its own); a change that
/// names no address keeps it; read back by `approved_grants` and the
/// refresh context.
pub(crate) async fn a_grants_last_address_follows_its_token_issues(store: Arc<dyn Store>) {
    use strongroom_core::grant::{Grant, IssuedTokens};
    use strongroom_core::integration::TokenSettings;
    use strongroom_core::scope::Scope;
    use strongroom_core::token::TokenKey;
    use strongroom_store::PairChange;
    let rng = rng();
    let alice = user(&*store, &rng, "alice").await;
    store.create_integration(integration("app"), ev(EventKind::IntegrationCreated)).await.unwrap();
    let mut g = Grant::new(&rng, "app", alice.id.clone(), Scope::parse("restricted").unwrap(), T0, TokenSettings::default());
    let first = crate::cases::first_pair(&rng, &mut g);
    g.last_addr = Some("192.0.2.1".into());
    store.insert_grant(g.clone(), ev(EventKind::TokenIssued)).await.unwrap();
    let shown = || async { store.approved_grants(alice.id.clone(), T0.plus_secs(5)).await.unwrap().remove(0).0.last_addr };
    assert_eq!(shown().await.as_deref(), Some("192.0.2.1"));
    // A refresh from elsewhere: its statement writes the address.
    let presented = first.refresh_presented().unwrap();
    let ctx = store.refresh_context(presented).await.unwrap().unwrap();
    assert_eq!(ctx.grant.last_addr.as_deref(), Some("192.0.2.1"));
    let second = IssuedTokens::mint(&TokenKey::new(crate::cases::KEY), &rng, &ctx.grant, T0.plus_secs(1));
    let change = PairChange::rotation(&ctx.grant, presented.hash, &second).from_addr("2001:db8::7");
    assert!(store.advance_pair(ctx.grant.id.clone(), ctx.grant.version, change, ev(EventKind::TokenRefreshed)).await.unwrap());
    assert_eq!(shown().await.as_deref(), Some("2001:db8::7"));
    // A change without an address (none known) keeps the last one.
    let ctx = store.refresh_context(second.refresh_presented().unwrap()).await.unwrap().unwrap();
    assert_eq!(ctx.grant.last_addr.as_deref(), Some("2001:db8::7"));
    let third = IssuedTokens::mint(&TokenKey::new(crate::cases::KEY), &rng, &ctx.grant, T0.plus_secs(2));
    let change = PairChange::replacing(&ctx.grant, &third).from_addr("");
    assert!(store.advance_pair(ctx.grant.id.clone(), ctx.grant.version, change, ev(EventKind::RefreshRetried)).await.unwrap());
    assert_eq!(shown().await.as_deref(), Some("2001:db8::7"));
}
