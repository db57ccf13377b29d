//! Groups administered over the API (`GroupStore`): a group made
//! with its owners, team and members in one transaction; batches of
//! membership changes; renames; and many adds and removes of one member at
//! once ending where the event log says.

use std::sync::Arc;

use strongroom_core::event::{Event, EventKind};
use strongroom_core::identity::{Group, GroupId, UserId};
use strongroom_store::{EventFilter, MemberChange, Store, StoreError, Team};

use crate::cases::{T0, ev, rng, user};

fn change(user: &UserId, join: bool) -> MemberChange {
    let kind = if join { EventKind::GroupMemberAdded } else { EventKind::GroupMemberRemoved };
    MemberChange { user: user.clone(), join, event: ev(kind).detail(format!("user={}", user.as_str())) }
}

fn kinds(events: &[strongroom_core::event::StoredEvent]) -> Vec<EventKind> {
    events.iter().map(|e| e.event.kind).collect()
}

async fn events_after(store: &dyn Store, seq: i64) -> Vec<strongroom_core::event::StoredEvent> {
    store.events(EventFilter { after_seq: Some(seq), limit: 10_000, ..Default::default() }).await.unwrap()
}

pub(crate) async fn groups_made_with_members_owners_and_teams(store: Arc<dyn Store>) {
    let rng = rng();
    let alice = user(&*store, &rng, "alice").await;
    let bob = user(&*store, &rng, "bob").await;
    let before = store.event_head().await.unwrap().0;
    let team = Team { description: "the platform team".into(), products: vec!["TLS".into(), "SSH".into()] };
    let g = Group { id: GroupId::generate(&rng), name: "Platform".into(), created_at: T0 };
    let members = vec![change(&alice.id, true), change(&bob.id, true), change(&alice.id, true)];
    store.create_group_with(g.clone(), vec![bob.id.clone()], Some(team.clone()), members, ev(EventKind::GroupCreated)).await.unwrap();
    // The group's event, then one per member who joined (alice once).
    assert_eq!(
        kinds(&events_after(&*store, before).await),
        [EventKind::GroupCreated, EventKind::GroupMemberAdded, EventKind::GroupMemberAdded]
    );
    let names: Vec<String> = store.members_of(g.id.clone()).await.unwrap().into_iter().map(|u| u.name).collect();
    assert_eq!(names, ["alice", "bob"]);
    assert_eq!(store.group_owners(g.id.clone()).await.unwrap(), vec![bob.clone()]);
    assert!(store.owns_group(g.id.clone(), bob.id.clone()).await.unwrap());
    assert!(!store.owns_group(g.id.clone(), alice.id.clone()).await.unwrap());
    assert_eq!(store.team(g.id.clone()).await.unwrap(), Some(team));

    // A plain group: no team, no owners. Names are shared with users, in any case.
    let plain = Group { id: GroupId::generate(&rng), name: "plain".into(), created_at: T0 };
    store.create_group_with(plain.clone(), vec![], None, vec![], ev(EventKind::GroupCreated)).await.unwrap();
    assert_eq!(store.team(plain.id.clone()).await.unwrap(), None);
    let head = store.event_head().await.unwrap().0;
    let taken = Group { id: GroupId::generate(&rng), name: "ALICE".into(), created_at: T0 };
    let made = store.create_group_with(taken, vec![], None, vec![change(&bob.id, true)], ev(EventKind::GroupCreated)).await;
    assert!(matches!(made, Err(StoreError::Conflict)), "a user's name: {made:?}");
    let again = Group { id: GroupId::generate(&rng), name: "PLATFORM".into(), created_at: T0 };
    let made = store.create_group_with(again, vec![], None, vec![change(&bob.id, true)], ev(EventKind::GroupCreated)).await;
    assert!(matches!(made, Err(StoreError::Conflict)), "a group's name: {made:?}");
    assert_eq!(store.event_head().await.unwrap().0, head, "a refused creation writes nothing");

    // A batch: each change one conditional write, an event only for a change.
    let changes = vec![change(&alice.id, false), change(&alice.id, false), change(&bob.id, true), change(&alice.id, true)];
    assert_eq!(store.change_members(g.id.clone(), changes.clone(), Some(alice.id.clone())).await.unwrap(), None, "alice owns nothing");
    assert_eq!(store.event_head().await.unwrap().0, head, "a refused batch writes nothing");
    assert_eq!(store.change_members(g.id.clone(), changes, Some(bob.id.clone())).await.unwrap(), Some(vec![true, false, false, true]));
    assert_eq!(kinds(&events_after(&*store, head).await), [EventKind::GroupMemberRemoved, EventKind::GroupMemberAdded]);
    let gone = GroupId::generate(&rng);
    assert_eq!(store.change_members(gone.clone(), vec![change(&alice.id, true)], None).await.unwrap(), None);

    // Renames: to a free name; not to a user's or a group's.
    let head = store.event_head().await.unwrap().0;
    assert!(store.rename_group(g.id.clone(), "Platform-Team".into(), ev(EventKind::GroupRenamed)).await.unwrap());
    assert_eq!(store.group_by_name("platform-team".into()).await.unwrap().map(|x| x.id), Some(g.id.clone()));
    assert_eq!(store.group_by_name("platform".into()).await.unwrap(), None);
    assert!(matches!(store.rename_group(g.id.clone(), "Bob".into(), ev(EventKind::GroupRenamed)).await, Err(StoreError::Conflict)));
    assert!(matches!(store.rename_group(g.id.clone(), "PLAIN".into(), ev(EventKind::GroupRenamed)).await, Err(StoreError::Conflict)));
    assert!(!store.rename_group(gone, "x".into(), ev(EventKind::GroupRenamed)).await.unwrap());
    assert_eq!(kinds(&events_after(&*store, head).await), [EventKind::GroupRenamed]);

    // Deleting the group takes its owners and team with it.
    store.delete_group("platform-team".into(), ev(EventKind::GroupDeleted)).await.unwrap();
    assert!(store.group_owners(g.id.clone()).await.unwrap().is_empty());
    assert_eq!(store.team(g.id.clone()).await.unwrap(), None);
    assert!(store.list_users().await.unwrap().len() == 2, "members remain");
}

/// Many adds and removes of one member at once: the membership ends as the
/// last change the event log records says, and every change recorded is
/// one that changed something (adds and removes alternate in the log).
pub(crate) async fn racing_membership_changes_end_as_the_log_says(store: Arc<dyn Store>) {
    let rng = rng();
    let alice = user(&*store, &rng, "alice").await;
    let g = Group { id: GroupId::generate(&rng), name: "racers".into(), created_at: T0 };
    store.create_group_with(g.clone(), vec![], None, vec![], ev(EventKind::GroupCreated)).await.unwrap();
    let before = store.event_head().await.unwrap().0;
    let mut tasks = Vec::new();
    for i in 0..48 {
        let (store, g, u) = (store.clone(), g.id.clone(), alice.id.clone());
        tasks.push(tokio::spawn(async move {
            let join = i % 2 == 0;
            let via_batch = i % 3 == 0;
            if via_batch {
                store.change_members(g, vec![change(&u, join)], None).await.unwrap().unwrap()[0]
            } else if join {
                store.add_member(g, u.clone(), Event::new(EventKind::GroupMemberAdded, T0)).await.unwrap()
            } else {
                store.remove_member(g, u.clone(), Event::new(EventKind::GroupMemberRemoved, T0)).await.unwrap()
            }
        }));
    }
    let mut changed = 0;
    for t in tasks {
        changed += usize::from(t.await.unwrap());
    }
    let log = kinds(&events_after(&*store, before).await);
    assert_eq!(log.len(), changed, "one event per change that changed something");
    for pair in log.windows(2) {
        assert_ne!(pair[0], pair[1], "two adds (or removes) in a row: a change recorded that changed nothing: {log:?}");
    }
    let member = !store.members_of(g.id.clone()).await.unwrap().is_empty();
    assert_eq!(member, log.last() == Some(&EventKind::GroupMemberAdded), "the membership is what the last event says: {log:?}");
}
