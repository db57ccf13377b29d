//! The `\VED` tree: folders as objects with GUIDs (fixed for the
//! roots, kept for a folder's life), explicit entries listed, and each
//! change of one a conditional write that appends its event only when it
//! changed a row, also when many race on one entry.

use crate::RightsFixtures as _;
use std::sync::Arc;

use strongroom_core::event::EventKind;
use strongroom_core::identity::{Group, GroupId};
use strongroom_core::tree::{ObjectGuid, POLICY_GUID, VED_GUID};
use strongroom_core::vault::Rights;
use strongroom_store::{EventFilter, Holder, RightsChange, RightsOutcome, Store};

use crate::cases::{T0, ev, folder, lineage, rng, user};

async fn changes(store: &dyn Store) -> usize {
    store
        .events(EventFilter { limit: 10_000, ..Default::default() })
        .await
        .unwrap()
        .iter()
        .filter(|e| e.event.kind == EventKind::RightsChanged)
        .count()
}

pub(crate) async fn folders_are_objects_with_guids(store: Arc<dyn Store>) {
    let team = folder("\\VED\\Policy\\Team");
    let l = lineage(&team);
    let guid = l[2].1.clone();
    assert!(store.create_folders(l, ev(EventKind::FolderCreated)).await.unwrap());
    // Made again with other GUIDs: nothing changes identity.
    assert!(!store.create_folders(lineage(&team), ev(EventKind::FolderCreated)).await.unwrap());
    let o = store.folder_object(team.key().to_owned()).await.unwrap().unwrap();
    assert_eq!((o.path.as_str(), &o.guid, o.created_at), ("\\VED\\Policy\\Team", &guid, T0));
    assert_eq!(store.folder_object_by_guid(guid.clone()).await.unwrap().unwrap().path, team);
    assert_eq!(store.folder_object("\\ved".into()).await.unwrap().unwrap().guid.as_str(), VED_GUID);
    assert_eq!(store.folder_object("\\ved\\policy".into()).await.unwrap().unwrap().guid.as_str(), POLICY_GUID);
    assert!(store.folder_object_by_guid(ObjectGuid::parse("{00000000-1111-4111-8111-000000000000}").unwrap()).await.unwrap().is_none());
    let all: Vec<String> = store.folder_objects().await.unwrap().into_iter().map(|o| o.path.as_str().to_owned()).collect();
    assert_eq!(all, ["\\VED", "\\VED\\Policy", "\\VED\\Policy\\Team"]);
}

pub(crate) async fn explicit_entries_change_only_as_asked(store: Arc<dyn Store>) {
    let rng = rng();
    let team = folder("\\VED\\Policy\\Team");
    store.create_folders(lineage(&team), ev(EventKind::FolderCreated)).await.unwrap();
    let alice = user(&*store, &rng, "alice").await;
    let g = Group { id: GroupId::generate(&rng), name: "ops".into(), created_at: T0 };
    store.create_group(g.clone(), ev(EventKind::GroupCreated)).await.unwrap();
    let (u, gr) = (Holder::User(alice.id.clone()), Holder::Group(g.id.clone()));
    let change = |h: &Holder, c| {
        let out = store.change_rights(team.clone(), h.clone(), c, None, ev(EventKind::RightsChanged));
        async move { out.await.map(|o| o == RightsOutcome::Changed) }
    };
    assert!(!change(&u, RightsChange::Replace(Rights::READ)).await.unwrap(), "nothing to replace");
    assert!(!change(&u, RightsChange::Delete).await.unwrap(), "nothing to delete");
    assert_eq!(changes(&*store).await, 0, "no event for a change that did not happen");
    assert!(change(&u, RightsChange::Create(Rights::WRITE)).await.unwrap());
    assert!(!change(&u, RightsChange::Create(Rights::READ)).await.unwrap(), "a second create is refused");
    assert!(change(&gr, RightsChange::Create(Rights::MANAGE_PERMISSIONS)).await.unwrap());
    assert_eq!(
        store.explicit_rights(team.key().to_owned()).await.unwrap(),
        [(u.clone(), Rights::WRITE), (gr.clone(), Rights::MANAGE_PERMISSIONS)]
    );
    assert!(change(&u, RightsChange::Replace(Rights::READ)).await.unwrap());
    assert!(change(&u, RightsChange::Replace(Rights::READ)).await.unwrap(), "the same value replaced is still a replace");
    assert!(change(&gr, RightsChange::Delete).await.unwrap());
    assert_eq!(store.explicit_rights(team.key().to_owned()).await.unwrap(), [(u.clone(), Rights::READ)]);
    assert_eq!(changes(&*store).await, 5);
    // Gone with its folder.
    assert_eq!(
        store
            .change_rights(folder("\\VED\\Policy\\Nope"), u.clone(), RightsChange::Delete, None, ev(EventKind::RightsChanged))
            .await
            .unwrap(),
        RightsOutcome::NoFolder
    );
}

pub(crate) async fn racing_entry_changes_each_happen_once(store: Arc<dyn Store>) {
    let rng = rng();
    let team = folder("\\VED\\Policy\\Team");
    store.create_folders(lineage(&team), ev(EventKind::FolderCreated)).await.unwrap();
    let alice = user(&*store, &rng, "alice").await;
    let h = Holder::User(alice.id.clone());
    for round in 0..10 {
        let creates = (0..8)
            .map(|_| store.change_rights(team.clone(), h.clone(), RightsChange::Create(Rights::READ), None, ev(EventKind::RightsChanged)));
        let won =
            futures_util::future::join_all(creates).await.into_iter().filter(|r| *r.as_ref().unwrap() == RightsOutcome::Changed).count();
        assert_eq!(won, 1, "round {round}: one create wins");
        let deletes =
            (0..8).map(|_| store.change_rights(team.clone(), h.clone(), RightsChange::Delete, None, ev(EventKind::RightsChanged)));
        let won =
            futures_util::future::join_all(deletes).await.into_iter().filter(|r| *r.as_ref().unwrap() == RightsOutcome::Changed).count();
        assert_eq!(won, 1, "round {round}: one delete wins");
    }
    assert_eq!(changes(&*store).await, 20, "one event per change that happened");
}

pub(crate) async fn a_renamed_folder_keeps_its_guid_rights_and_entries(store: Arc<dyn Store>) {
    use strongroom_store::Renamed;
    let rng = rng();
    for f in ["\\VED\\Policy\\Team\\App", "\\VED\\Policy\\Teams", "\\VED\\Policy\\Other"] {
        store.create_folders(lineage(&folder(f)), ev(EventKind::FolderCreated)).await.unwrap();
    }
    let alice = user(&*store, &rng, "alice").await;
    let g = Group { id: GroupId::generate(&rng), name: "ops".into(), created_at: T0 };
    store.create_group(g.clone(), ev(EventKind::GroupCreated)).await.unwrap();
    store.set_rights(folder("\\VED\\Policy\\Team"), alice.id.clone(), Rights::WRITE, ev(EventKind::RightsChanged)).await.unwrap();
    store.set_group_rights(folder("\\VED\\Policy\\Team\\App"), g.id.clone(), Rights::READ, ev(EventKind::RightsChanged)).await.unwrap();
    crate::cases::first_data_key(&*store).await;
    let id = store.allocate_vault_id().await.unwrap();
    let (w, _) = crate::cases::writer(&*store, true).await;
    store.insert_entry(crate::cases::entry(id, &["\\VED\\Policy\\Team\\App"]), w, ev(EventKind::VaultAdded)).await.unwrap();
    let team_guid = store.folder_object("\\ved\\policy\\team".into()).await.unwrap().unwrap().guid;
    let app_guid = store.folder_object("\\ved\\policy\\team\\app".into()).await.unwrap().unwrap().guid;

    let rename = |a: &str, b: &str| store.rename_folder(folder(a), folder(b), ev(EventKind::FolderCreated));
    assert_eq!(rename("\\VED\\Policy\\Nope", "\\VED\\Policy\\X").await.unwrap(), Renamed::NotFound);
    assert_eq!(rename("\\VED\\Policy\\Team", "\\VED\\Policy\\Other").await.unwrap(), Renamed::Exists);
    assert_eq!(rename("\\VED\\Policy\\Team", "\\VED\\Policy\\Team\\App\\In").await.unwrap(), Renamed::Exists, "not into itself");
    // `Teams` shares the prefix `Team` but is not below it: it stays.
    assert_eq!(rename("\\VED\\Policy\\Team", "\\VED\\Policy\\Other\\Moved").await.unwrap(), Renamed::Moved(2));
    let moved = store.folder_object("\\ved\\policy\\other\\moved\\app".into()).await.unwrap().unwrap();
    assert_eq!((moved.path.as_str(), &moved.guid), ("\\VED\\Policy\\Other\\Moved\\App", &app_guid));
    assert_eq!(store.folder_object_by_guid(team_guid).await.unwrap().unwrap().path.as_str(), "\\VED\\Policy\\Other\\Moved");
    assert!(store.folder_object("\\ved\\policy\\team".into()).await.unwrap().is_none());
    assert!(store.folder_object("\\ved\\policy\\teams".into()).await.unwrap().is_some());
    assert_eq!(store.rights_of(alice.id.clone()).await.unwrap(), [("\\ved\\policy\\other\\moved".to_owned(), Rights::WRITE)]);
    assert_eq!(store.group_rights_of(g.id.clone()).await.unwrap(), [("\\ved\\policy\\other\\moved\\app".to_owned(), Rights::READ)]);
    let owners = store.owners_of(vec![id]).await.unwrap();
    assert_eq!(owners[0].1.iter().map(|o| o.as_str().to_owned()).collect::<Vec<_>>(), ["\\VED\\Policy\\Other\\Moved\\App"]);
    let last = store.events(EventFilter { limit: 10_000, ..Default::default() }).await.unwrap().pop().unwrap();
    assert_eq!(last.event.detail, "renamed from \\VED\\Policy\\Team folders=2");
}
