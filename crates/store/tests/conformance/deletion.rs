//! Deleting users, integrations and folders, and reading events newest first.

use crate::RightsFixtures as _;
use std::sync::Arc;

use strongroom_core::event::{EventKind, verify_chain};
use strongroom_core::grant::device::DeviceState;
use strongroom_core::grant::{Grant, IssuedTokens};
use strongroom_core::integration::{AllowedUsers, TokenSettings};
use strongroom_core::scope::Scope;
use strongroom_core::vault::Rights;
use strongroom_store::{Checked, Deletion, EventFilter, FolderDeletion, Store};

use crate::cases::{T0, entry, ev, first_data_key, first_pair, folder, integration, rng, user, writer};

/// A grant of `user` on `client_id` with its first pair.
async fn grant(
    store: &dyn Store,
    rng: &crate::cases::Rng,
    client_id: &str,
    user: &strongroom_core::identity::User,
) -> (Grant, IssuedTokens) {
    let mut g = Grant::new(rng, client_id, user.id.clone(), Scope::parse("restricted").unwrap(), T0, TokenSettings::default());
    let t = first_pair(rng, &mut g);
    store.insert_grant(g.clone(), ev(EventKind::TokenIssued)).await.unwrap();
    (g, t)
}

async fn events_of(store: &dyn Store, kind: &str) -> Vec<strongroom_core::event::StoredEvent> {
    store.events(EventFilter { kind: Some(kind.into()), limit: 1000, ..Default::default() }).await.unwrap()
}

async fn chain_intact(store: &dyn Store) {
    let all = store.events(EventFilter { limit: 10_000, ..Default::default() }).await.unwrap();
    verify_chain(&all, store.event_head().await.unwrap()).unwrap();
}

pub(crate) async fn deleting_a_user_ends_their_grants_and_takes_their_rights(store: Arc<dyn Store>) {
    let rng = rng();
    let alice = user(&*store, &rng, "Alice").await;
    let bob = user(&*store, &rng, "bob").await;
    store.create_integration(integration("app"), ev(EventKind::IntegrationCreated)).await.unwrap();
    let mut listed = integration("listed");
    listed.allowed_users = AllowedUsers::Only(vec![alice.id.clone(), bob.id.clone()]);
    store.create_integration(listed, ev(EventKind::IntegrationCreated)).await.unwrap();
    let (live, live_t) = grant(&*store, &rng, "app", &alice).await;
    let (ended, _) = grant(&*store, &rng, "listed", &alice).await;
    assert!(store.revoke_grant(ended.id.clone(), T0, ev(EventKind::GrantRevoked)).await.unwrap());
    let (_, bobs) = grant(&*store, &rng, "app", &bob).await;
    // A device code alice approved and nobody exchanged yet.
    let code = crate::cases::device(&rng, 1);
    store.insert_device(code.clone(), ev(EventKind::DeviceAuthorizationStarted), None).await.unwrap();
    let approved = DeviceState::Approved { user_id: alice.id.clone() };
    assert!(store.decide_device(code.code_hash, 0, approved, ev(EventKind::DeviceApproved)).await.unwrap());
    let team = folder("\\VED\\Policy\\Team A");
    store.create_folders(crate::cases::lineage(&team), ev(EventKind::FolderCreated)).await.unwrap();
    store.set_rights(team.clone(), alice.id.clone(), Rights::READ, ev(EventKind::RightsChanged)).await.unwrap();
    store.set_rights(team, bob.id.clone(), Rights::READ, ev(EventKind::RightsChanged)).await.unwrap();
    let revoked_before = events_of(&*store, "grant.revoked").await.len();
    // A lock and a known address of alice's name.
    let slot = strongroom_core::throttle::Slot {
        key: "pw:pair:10.0.0.1 alice".into(),
        subject: Some("alice".into()),
        rule: strongroom_core::throttle::Rule { limit: 1, window_secs: 60, lockout_secs: 600 },
        reset_on_success: true,
    };
    store.begin_attempt(vec![slot.clone()], T0).await.unwrap();
    store.attempt_failed(vec![slot], ev(EventKind::LoginFailed)).await.unwrap();
    let known = strongroom_core::throttle::password_slots("alice", "10.0.0.2", false);
    store.begin_attempt(known.clone(), T0).await.unwrap();
    assert!(store.attempt_succeeded(known, Some(("alice".into(), "10.0.0.2".into())), None, T0).await.unwrap());
    assert_eq!(store.locks(T0).await.unwrap().len(), 1);

    let done = store.delete_user("ALICE".into(), ev(EventKind::UserDeleted).object("Alice")).await.unwrap();
    assert!(store.locks(T0).await.unwrap().is_empty(), "a later user of the name inherits no lock");
    assert!(!store.login_context("alice".into(), "10.0.0.2".into()).await.unwrap().known_origin, "nor a known address");
    assert_eq!(done, Some(Deletion { grants_ended: 1, codes_dropped: 1, rights_removed: 1 }));
    assert!(store.user_by_name("alice".into()).await.unwrap().is_none());
    assert!(store.user_by_id(alice.id.clone()).await.unwrap().is_none());
    assert!(store.access_context(live_t.access_presented()).await.unwrap().is_none(), "the access token died with the grant");
    let ctx = store.refresh_context(live_t.refresh_presented().unwrap()).await.unwrap().unwrap();
    assert_eq!(ctx.grant.id, live.id);
    assert_eq!(ctx.grant.revoked_at, Some(T0), "the refresh token's grant is revoked, its row kept as a tombstone");
    assert!(store.device_context(code.code_hash).await.unwrap().is_none(), "the approved code cannot be exchanged");
    // Bob is untouched: his grant works, his rights and his place on the list stay.
    assert!(store.access_context(bobs.access_presented()).await.unwrap().is_some());
    let rights: Vec<String> = store.all_rights().await.unwrap().into_iter().map(|(_, u, _, _)| u).collect();
    assert_eq!(rights, ["bob"]);
    let list = store.integration("listed".into()).await.unwrap().unwrap().allowed_users;
    assert_eq!(list, AllowedUsers::Only(vec![bob.id.clone()]));
    // Events: one grant.revoked for the live grant only, then user.deleted with the counts.
    let revoked = events_of(&*store, "grant.revoked").await;
    assert_eq!(revoked.len(), revoked_before + 1);
    assert_eq!(revoked.last().unwrap().event.object, live.id.as_str());
    let deleted = events_of(&*store, "user.deleted").await;
    assert_eq!(deleted.len(), 1);
    assert_eq!(
        (deleted[0].event.object.as_str(), deleted[0].event.detail.as_str()),
        ("Alice", "grants_ended=1 codes_dropped=1 rights_removed=1")
    );
    assert!(deleted[0].seq > revoked.last().unwrap().seq, "one transaction: the grants end, then the user goes");
    // Again: nobody to delete, nothing written.
    let head = store.event_head().await.unwrap();
    assert_eq!(store.delete_user("alice".into(), ev(EventKind::UserDeleted)).await.unwrap(), None);
    assert_eq!(store.event_head().await.unwrap(), head);
    // The name is free again; the new alice has nothing of the old one.
    let again = user(&*store, &rng, "alice").await;
    assert!(store.rights_of(again.id).await.unwrap().is_empty());
    chain_intact(&*store).await;
}

pub(crate) async fn deleting_an_integration_ends_its_grants_and_codes(store: Arc<dyn Store>) {
    let rng = rng();
    let alice = user(&*store, &rng, "alice").await;
    let mut app = integration("app");
    app.allowed_users = AllowedUsers::Only(vec![alice.id.clone()]);
    store.create_integration(app, ev(EventKind::IntegrationCreated)).await.unwrap();
    store.create_integration(integration("other"), ev(EventKind::IntegrationCreated)).await.unwrap();
    let (doomed, doomed_t) = grant(&*store, &rng, "app", &alice).await;
    let (_, kept) = grant(&*store, &rng, "other", &alice).await;
    let pending = crate::cases::device(&rng, 2);
    store.insert_device(pending.clone(), ev(EventKind::DeviceAuthorizationStarted), None).await.unwrap();

    let done = store.delete_integration("app".into(), ev(EventKind::IntegrationDeleted).client_id("app")).await.unwrap();
    assert_eq!(done, Some(Deletion { grants_ended: 1, codes_dropped: 1, rights_removed: 0 }));
    assert!(store.integration("app".into()).await.unwrap().is_none());
    assert!(store.access_context(doomed_t.access_presented()).await.unwrap().is_none_or(|c| c.check(T0.plus_secs(1)).is_err()));
    assert!(store.refresh_context(doomed_t.refresh_presented().unwrap()).await.unwrap().unwrap().grant.revoked_at.is_some());
    assert!(store.device_context(pending.code_hash).await.unwrap().is_none());
    assert!(store.access_context(kept.access_presented()).await.unwrap().is_some(), "another integration's grant lives");
    assert!(store.user_by_name("alice".into()).await.unwrap().is_some());
    let revoked = events_of(&*store, "grant.revoked").await;
    assert_eq!(revoked.len(), 1);
    assert_eq!(revoked[0].event.object, doomed.id.as_str());
    assert!(revoked[0].event.detail.contains("integration deleted"), "{}", revoked[0].event.detail);
    let deleted = events_of(&*store, "integration.deleted").await;
    assert_eq!((deleted.len(), deleted[0].event.client_id.as_str()), (1, "app"));
    assert_eq!(store.delete_integration("app".into(), ev(EventKind::IntegrationDeleted)).await.unwrap(), None);
    assert_eq!(events_of(&*store, "integration.deleted").await.len(), 1);
    // The client id can be registered again; the old grant stays ended.
    store.create_integration(integration("app"), ev(EventKind::IntegrationCreated)).await.unwrap();
    assert!(store.access_context(doomed_t.access_presented()).await.unwrap().is_none_or(|c| c.check(T0.plus_secs(1)).is_err()));
    assert!(store.refresh_context(doomed_t.refresh_presented().unwrap()).await.unwrap().unwrap().grant.revoked_at.is_some());
    chain_intact(&*store).await;
}

pub(crate) async fn a_folder_is_deleted_when_empty_or_with_everything_below_it(store: Arc<dyn Store>) {
    let rng = rng();
    first_data_key(&*store).await;
    let (w, _) = writer(&*store, true).await;
    let alice = user(&*store, &rng, "alice").await;
    for f in ["\\VED\\Policy\\Team A\\App", "\\VED\\Policy\\Team B", "\\VED\\Policy\\Team A2", "\\VED\\Policy\\Empty"] {
        store.create_folders(crate::cases::lineage(&folder(f)), ev(EventKind::FolderCreated)).await.unwrap();
    }
    let mut ids = Vec::new();
    for owners in [
        &["\\VED\\Policy\\Team A\\App"][..],
        &["\\VED\\Policy\\Team A\\App", "\\VED\\Policy\\Team B"],
        &["\\VED\\Policy\\Team A"],
        // A sibling whose name starts with the deleted folder's.
        &["\\VED\\Policy\\Team A2"],
    ] {
        let id = store.allocate_vault_id().await.unwrap();
        assert_eq!(store.insert_entry(entry(id, owners), w.clone(), ev(EventKind::VaultAdded)).await.unwrap(), Checked::Done(true));
        ids.push(id);
    }
    store.set_rights(folder("\\VED\\Policy\\Team A"), alice.id.clone(), Rights::READ, ev(EventKind::RightsChanged)).await.unwrap();
    store.set_rights(folder("\\VED\\Policy\\Team A2"), alice.id.clone(), Rights::READ, ev(EventKind::RightsChanged)).await.unwrap();
    let head = store.event_head().await.unwrap();

    // Not empty: refused with what is in the way, nothing written.
    assert_eq!(
        store.delete_folder(folder("\\ved\\policy\\team a"), false, ev(EventKind::FolderDeleted)).await.unwrap(),
        FolderDeletion::NotEmpty { subfolders: 1, entries: 3 }
    );
    assert_eq!(
        store.delete_folder(folder("\\VED\\Policy\\Team B"), false, ev(EventKind::FolderDeleted)).await.unwrap(),
        FolderDeletion::NotEmpty { subfolders: 0, entries: 1 }
    );
    assert_eq!(store.event_head().await.unwrap(), head);
    assert_eq!(
        store.delete_folder(folder("\\VED\\Policy\\Nowhere"), true, ev(EventKind::FolderDeleted)).await.unwrap(),
        FolderDeletion::NotFound
    );
    // Empty: deleted.
    assert_eq!(
        store.delete_folder(folder("\\VED\\Policy\\Empty"), false, ev(EventKind::FolderDeleted)).await.unwrap(),
        FolderDeletion::Deleted { folders: 1, owners_removed: 0, entries_orphaned: vec![], rights_removed: 0 }
    );
    // Recursive: Team A and App go; entries owned only there stay, as
    // orphans (a folder's Delete right is not the vault's); the one also
    // owned by Team B stays with that owner; Team A2 is untouched.
    let done = store
        .delete_folder(folder("\\VED\\Policy\\Team A"), true, ev(EventKind::FolderDeleted).object("\\VED\\Policy\\Team A"))
        .await
        .unwrap();
    assert_eq!(done, FolderDeletion::Deleted { folders: 2, owners_removed: 3, entries_orphaned: vec![ids[0], ids[2]], rights_removed: 1 });
    let names: Vec<String> = store.folders().await.unwrap().iter().map(|f| f.as_str().to_owned()).collect();
    assert_eq!(names, ["\\VED", "\\VED\\Policy", "\\VED\\Policy\\Team A2", "\\VED\\Policy\\Team B"]);
    let owners = store.owners_of(ids.clone()).await.unwrap();
    assert_eq!(
        owners,
        vec![
            (ids[0], vec![]),
            (ids[1], vec![folder("\\VED\\Policy\\Team B")]),
            (ids[2], vec![]),
            (ids[3], vec![folder("\\VED\\Policy\\Team A2")])
        ]
    );
    let rights: Vec<String> = store.all_rights().await.unwrap().into_iter().map(|(f, _, _, _)| f.as_str().to_owned()).collect();
    assert_eq!(rights, ["\\VED\\Policy\\Team A2"]);
    // The new folder of the same name starts empty and without rights.
    store.create_folders(crate::cases::lineage(&folder("\\VED\\Policy\\Team A")), ev(EventKind::FolderCreated)).await.unwrap();
    assert!(
        store
            .vault_ids(strongroom_store::VaultFilter { owner_key: Some("\\ved\\policy\\team a".into()), ..Default::default() })
            .await
            .unwrap()
            .is_empty()
    );
    let orphans = store.vault_ids(strongroom_store::VaultFilter { orphans_only: true, ..Default::default() }).await.unwrap();
    assert_eq!(orphans, vec![ids[0], ids[2]], "kept, found by OrphanLookup");
    assert!(events_of(&*store, "vault.deleted").await.is_empty());
    let orphaned: Vec<(String, String)> =
        events_of(&*store, "vault.orphaned").await.into_iter().map(|e| (e.event.object, e.event.detail)).collect();
    assert_eq!(orphaned.len(), 2);
    assert_eq!(orphaned[0].0, ids[0].to_string());
    assert!(orphaned[0].1.contains("Team A") && orphaned[0].1.contains("orphan"), "{orphaned:?}");
    let folders: Vec<String> = events_of(&*store, "folder.deleted").await.into_iter().map(|e| e.event.detail).collect();
    assert_eq!(
        folders,
        [
            "recursive=false folders=1 owners_removed=0 entries_orphaned=0 rights_removed=0",
            "recursive=true folders=2 owners_removed=3 entries_orphaned=2 rights_removed=1"
        ]
    );
    chain_intact(&*store).await;
}

pub(crate) async fn events_newest_first_and_before_a_sequence_number(store: Arc<dyn Store>) {
    let rng = rng();
    for n in 0..7 {
        user(&*store, &rng, &format!("u{n}")).await;
    }
    let seqs = |f: EventFilter| {
        let store = store.clone();
        async move { store.events(f).await.unwrap().into_iter().map(|e| e.seq).collect::<Vec<i64>>() }
    };
    assert_eq!(seqs(EventFilter { limit: 3, ..Default::default() }).await, [1, 2, 3]);
    assert_eq!(seqs(EventFilter { limit: 3, newest_first: true, ..Default::default() }).await, [7, 6, 5]);
    assert_eq!(seqs(EventFilter { limit: 3, newest_first: true, before_seq: Some(5), ..Default::default() }).await, [4, 3, 2]);
    assert_eq!(seqs(EventFilter { limit: 10, after_seq: Some(2), before_seq: Some(5), ..Default::default() }).await, [3, 4]);
    let filtered = EventFilter { limit: 10, newest_first: true, object: Some("u3".into()), ..Default::default() };
    assert_eq!(seqs(filtered).await, [4], "u3's creation names it");
}
