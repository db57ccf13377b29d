//! A change of permissions made for a delegated caller re-checks, in its
//! own transaction, that the caller is still enabled and a Master Admin or
//! holds ManagePermissions on the folder or above it (granted to them or to
//! a group they are a member of now): a right removed before the write is
//! never bypassed, also when the removal races the change. And a change on
//! a folder that is not there (deleted meanwhile) is `NoFolder`, never a
//! store failure.

use std::sync::Arc;

use strongroom_core::event::{Event, EventKind};
use strongroom_core::identity::{Group, GroupId, User, UserId};
use strongroom_core::vault::{FolderPath, Rights};
use strongroom_store::{EventFilter, FolderDeletion, Holder, RightsChange, RightsOutcome, Store};

use crate::cases::{T0, ev, folder, lineage, rng, user};

async fn rights_events(store: &dyn Store) -> Vec<(i64, String)> {
    store
        .events(EventFilter { limit: 10_000, ..Default::default() })
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.event.kind == EventKind::RightsChanged)
        .map(|e| (e.seq, e.event.detail))
        .collect()
}

fn changed(detail: &str) -> Event {
    ev(EventKind::RightsChanged).detail(detail)
}

async fn set(store: &dyn Store, f: &FolderPath, holder: Holder, rights: Rights, by: Option<&UserId>, detail: &str) -> RightsOutcome {
    store.change_rights(f.clone(), holder, RightsChange::Set(rights), by.cloned(), changed(detail)).await.unwrap()
}

pub(crate) async fn a_delegated_permission_change_rechecks_the_managers_right(store: Arc<dyn Store>) {
    let rng = rng();
    let team = folder("\\VED\\Policy\\Team");
    store.create_folders(lineage(&team), ev(EventKind::FolderCreated)).await.unwrap();
    let policy = folder("\\VED\\Policy");
    let mgr = user(&*store, &rng, "mgr").await;
    let target = Holder::User(user(&*store, &rng, "target").await.id);
    let by = Some(&mgr.id);
    let entry = |store: Arc<dyn Store>| async move { store.explicit_rights("\\ved\\policy\\team".into()).await.unwrap() };

    // Nothing held: refused, nothing written, no event.
    let c = |change| store.change_rights(team.clone(), target.clone(), change, by.cloned(), changed("by mgr"));
    assert_eq!(c(RightsChange::Create(Rights::READ)).await.unwrap(), RightsOutcome::Denied);
    assert!(rights_events(&*store).await.is_empty());
    // Write is not ManagePermissions.
    set(&*store, &policy, Holder::User(mgr.id.clone()), Rights::WRITE.union(Rights::VIEW), None, "cli").await;
    assert_eq!(c(RightsChange::Create(Rights::READ)).await.unwrap(), RightsOutcome::Denied);
    // ManagePermissions granted above the folder, to them: allowed.
    set(&*store, &policy, Holder::User(mgr.id.clone()), Rights::MANAGE_PERMISSIONS, None, "cli").await;
    assert_eq!(c(RightsChange::Create(Rights::READ)).await.unwrap(), RightsOutcome::Changed);
    assert_eq!(c(RightsChange::Create(Rights::READ)).await.unwrap(), RightsOutcome::Unchanged, "the entry is there");
    // Removed: the next change is refused and writes nothing, whatever its kind.
    set(&*store, &policy, Holder::User(mgr.id.clone()), Rights::NONE, None, "cli").await;
    let before = rights_events(&*store).await.len();
    assert_eq!(c(RightsChange::Replace(Rights::WRITE)).await.unwrap(), RightsOutcome::Denied);
    assert_eq!(c(RightsChange::Delete).await.unwrap(), RightsOutcome::Denied);
    assert_eq!(set(&*store, &team, target.clone(), Rights::ALL, by, "by mgr").await, RightsOutcome::Denied);
    assert_eq!(entry(store.clone()).await, [(target.clone(), Rights::READ)]);
    assert_eq!(rights_events(&*store).await.len(), before, "no event for a refused change");

    // Through a group they are a member of now, on the folder itself.
    let g = Group { id: GroupId::generate(&rng), name: "managers".into(), created_at: T0 };
    store.create_group(g.clone(), ev(EventKind::GroupCreated)).await.unwrap();
    set(&*store, &team, Holder::Group(g.id.clone()), Rights::MANAGE_PERMISSIONS, None, "cli").await;
    assert_eq!(c(RightsChange::Replace(Rights::WRITE)).await.unwrap(), RightsOutcome::Denied, "not a member yet");
    assert!(store.add_member(g.id.clone(), mgr.id.clone(), ev(EventKind::GroupMemberAdded)).await.unwrap());
    assert_eq!(c(RightsChange::Replace(Rights::WRITE)).await.unwrap(), RightsOutcome::Changed);
    assert!(store.remove_member(g.id.clone(), mgr.id.clone(), ev(EventKind::GroupMemberRemoved)).await.unwrap());
    assert_eq!(c(RightsChange::Replace(Rights::READ)).await.unwrap(), RightsOutcome::Denied, "the membership is gone");
    assert_eq!(entry(store.clone()).await, [(target.clone(), Rights::WRITE), (Holder::Group(g.id.clone()), Rights::MANAGE_PERMISSIONS)]);

    // A sibling's right covers nothing here (`\VED\Policy\Tea` is not above `Team`).
    let tea = folder("\\VED\\Policy\\Tea");
    store.create_folders(lineage(&tea), ev(EventKind::FolderCreated)).await.unwrap();
    set(&*store, &tea, Holder::User(mgr.id.clone()), Rights::MANAGE_PERMISSIONS, None, "cli").await;
    assert_eq!(c(RightsChange::Replace(Rights::READ)).await.unwrap(), RightsOutcome::Denied);

    // Held, but disabled: refused.
    set(&*store, &team, Holder::User(mgr.id.clone()), Rights::MANAGE_PERMISSIONS, None, "cli").await;
    assert_eq!(c(RightsChange::Replace(Rights::READ)).await.unwrap(), RightsOutcome::Changed);
    store.set_user_disabled("mgr".into(), true, ev(EventKind::UserDisabled)).await.unwrap();
    assert_eq!(c(RightsChange::Replace(Rights::WRITE)).await.unwrap(), RightsOutcome::Denied);

    // A Master Admin needs no right; nobody (the CLI) is not checked.
    let root =
        User { id: UserId::generate(&rng), name: "root".into(), disabled: false, master_admin: true, created_at: T0, signed_in_at: None };
    store.create_user(root.clone(), "$argon2id$fake".into(), ev(EventKind::UserCreated)).await.unwrap();
    assert_eq!(set(&*store, &team, target.clone(), Rights::WRITE, Some(&root.id), "by root").await, RightsOutcome::Changed);
    assert_eq!(set(&*store, &team, target.clone(), Rights::READ, None, "cli").await, RightsOutcome::Changed);
    // An unknown user holds nothing.
    let ghost = UserId::generate(&rng);
    assert_eq!(set(&*store, &team, target.clone(), Rights::ALL, Some(&ghost), "ghost").await, RightsOutcome::Denied);
    assert!(entry(store.clone()).await.contains(&(target, Rights::READ)));
}

/// Many rounds of a manager's change racing the removal of their right
/// (directly held in even rounds, through a group in odd ones): whenever
/// the change was accepted, its event precedes the removal's in the log.
pub(crate) async fn a_racing_removal_of_the_managers_right_is_never_bypassed(store: Arc<dyn Store>) {
    let rng = rng();
    let team = folder("\\VED\\Policy\\Team");
    store.create_folders(lineage(&team), ev(EventKind::FolderCreated)).await.unwrap();
    let mgr = user(&*store, &rng, "mgr").await;
    let target = Holder::User(user(&*store, &rng, "target").await.id);
    let g = Group { id: GroupId::generate(&rng), name: "managers".into(), created_at: T0 };
    store.create_group(g.clone(), ev(EventKind::GroupCreated)).await.unwrap();
    set(&*store, &team, Holder::Group(g.id.clone()), Rights::MANAGE_PERMISSIONS, None, "cli").await;
    let (mut accepted, mut denied) = (0, 0);
    for round in 0..40 {
        let via_group = round % 2 == 1;
        if via_group {
            store.add_member(g.id.clone(), mgr.id.clone(), ev(EventKind::GroupMemberAdded)).await.unwrap();
        } else {
            set(&*store, &team, Holder::User(mgr.id.clone()), Rights::MANAGE_PERMISSIONS, None, "grant").await;
        }
        let change = {
            let (store, team, target, mgr) = (store.clone(), team.clone(), target.clone(), mgr.id.clone());
            let rights = if round % 4 < 2 { Rights::READ } else { Rights::WRITE };
            tokio::spawn(async move { set(&*store, &team, target, rights, Some(&mgr), &format!("change {round}")).await })
        };
        let removal = {
            let (store, team, mgr, g) = (store.clone(), team.clone(), mgr.id.clone(), g.id.clone());
            tokio::spawn(async move {
                if via_group {
                    let e = ev(EventKind::GroupMemberRemoved).detail(format!("removal {round}"));
                    assert!(store.remove_member(g, mgr, e).await.unwrap());
                } else {
                    set(&*store, &team, Holder::User(mgr), Rights::NONE, None, &format!("removal {round}")).await;
                }
            })
        };
        let outcome = change.await.unwrap();
        removal.await.unwrap();
        let log = store.events(EventFilter { limit: 10_000, ..Default::default() }).await.unwrap();
        let seq_of = |d: &str| log.iter().find(|e| e.event.detail == d).map(|e| e.seq);
        let removed = seq_of(&format!("removal {round}")).expect("the removal's event");
        match outcome {
            RightsOutcome::Changed => {
                accepted += 1;
                let at = seq_of(&format!("change {round}")).expect("an accepted change has its event");
                assert!(at < removed, "round {round}: the change ({at}) was accepted after the removal ({removed})");
            }
            RightsOutcome::Denied => {
                denied += 1;
                assert_eq!(seq_of(&format!("change {round}")), None, "round {round}: a refused change has no event");
            }
            other => panic!("round {round}: {other:?}"),
        }
    }
    assert_eq!(accepted + denied, 40);
    // After the last removal nothing is held: refused.
    assert_eq!(set(&*store, &team, target, Rights::ALL, Some(&mgr.id), "late").await, RightsOutcome::Denied);
}

pub(crate) async fn a_permission_change_on_a_missing_folder_is_not_found(store: Arc<dyn Store>) {
    let rng = rng();
    let alice = Holder::User(user(&*store, &rng, "alice").await.id);
    let nope = folder("\\VED\\Policy\\Nope");
    for change in
        [RightsChange::Create(Rights::READ), RightsChange::Replace(Rights::READ), RightsChange::Delete, RightsChange::Set(Rights::READ)]
    {
        let out = store.change_rights(nope.clone(), alice.clone(), change, None, changed("cli")).await.unwrap();
        assert_eq!(out, RightsOutcome::NoFolder, "{change:?}");
    }
    assert!(store.explicit_rights(nope.key().to_owned()).await.unwrap().is_empty());
    assert!(rights_events(&*store).await.is_empty(), "nothing written, no event");

    // Racing the folder's deletion: each change is made before it (and goes with the folder) or finds no folder; never a failure.
    for round in 0..20 {
        let f = folder(&format!("\\VED\\Policy\\Gone{round}"));
        store.create_folders(lineage(&f), ev(EventKind::FolderCreated)).await.unwrap();
        let change = {
            let (store, f, alice) = (store.clone(), f.clone(), alice.clone());
            tokio::spawn(async move { store.change_rights(f, alice, RightsChange::Create(Rights::READ), None, changed("race")).await })
        };
        let delete = {
            let (store, f) = (store.clone(), f.clone());
            tokio::spawn(async move { store.delete_folder(f, true, ev(EventKind::FolderDeleted)).await })
        };
        let out = change.await.unwrap().unwrap();
        assert!(matches!(out, RightsOutcome::Changed | RightsOutcome::NoFolder), "round {round}: {out:?}");
        assert!(matches!(delete.await.unwrap().unwrap(), FolderDeletion::Deleted { .. }), "round {round}");
        assert!(store.explicit_rights(f.key().to_owned()).await.unwrap().is_empty(), "round {round}");
    }
}
