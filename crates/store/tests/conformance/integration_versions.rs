//! An integration's version: every change is one conditional write over the
//! version it read, so administrators changing one integration at once never
//! lose each other's changes.

use std::sync::Arc;

use strongroom_core::event::{EventKind, StoredEvent};
use strongroom_core::integration::{AllowedUsers, Integration};
use strongroom_core::scope::Scope;
use strongroom_store::{EventFilter, Store};

use super::cases::{ev, integration, rng, user};

/// A change each updater makes: a different field each.
type Change = Box<dyn Fn(&mut Integration) + Send + Sync>;

pub(crate) async fn concurrent_integration_updates_keep_every_change(store: Arc<dyn Store>) {
    let rng = rng();
    let alice = user(&*store, &rng, "alice").await;
    let mut i = integration("app");
    i.allowed_users = AllowedUsers::Only(vec![]);
    store.create_integration(i, ev(EventKind::IntegrationCreated)).await.unwrap();
    let alice_id = alice.id.clone();
    let changes: Vec<Change> = vec![
        Box::new(|i| i.name = "Renamed".into()),
        Box::new(|i| i.max_scope = Scope::parse("restricted:manage,delete").unwrap()),
        Box::new(|i| i.disabled = true),
        Box::new(|i| i.grant_types.device = false),
        Box::new(|i| i.grant_types.password = true),
        Box::new(|i| i.overrides.access_validity = Some(61)),
        Box::new(|i| i.overrides.grant_validity = Some(86_401)),
        Box::new(|i| i.overrides.refreshable = Some(false)),
        Box::new(|i| i.overrides.device_code_validity = Some(301)),
        Box::new(|i| i.overrides.poll_interval = Some(7)),
        Box::new(|i| i.overrides.retry_window = Some(9)),
        Box::new(move |i| i.allowed_users = AllowedUsers::Only(vec![alice_id.clone()])),
    ];
    let n = changes.len();
    let barrier = Arc::new(tokio::sync::Barrier::new(n));
    let mut tasks = Vec::new();
    for change in changes {
        let (store, barrier) = (store.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            // Read, change, write if still at the version read; a lost race reads again.
            let mut lost = 0u32;
            loop {
                let mut i = store.integration("app".into()).await.unwrap().unwrap();
                change(&mut i);
                if store.update_integration(i, ev(EventKind::IntegrationUpdated)).await.unwrap() {
                    return lost;
                }
                lost += 1;
                assert!(lost < 1000, "an updater never won");
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let i = store.integration("app".into()).await.unwrap().unwrap();
    assert_eq!(i.name, "Renamed");
    assert_eq!(i.max_scope, Scope::parse("restricted:manage,delete").unwrap());
    assert!(i.disabled);
    assert!(!i.grant_types.device);
    assert!(i.grant_types.password);
    assert_eq!(i.overrides.access_validity, Some(61));
    assert_eq!(i.overrides.grant_validity, Some(86_401));
    assert_eq!(i.overrides.refreshable, Some(false));
    assert_eq!(i.overrides.device_code_validity, Some(301));
    assert_eq!(i.overrides.poll_interval, Some(7));
    assert_eq!(i.overrides.retry_window, Some(9));
    assert_eq!(i.allowed_users, AllowedUsers::Only(vec![alice.id.clone()]));
    assert_eq!(i.version, n as i64, "one version per winning write");
    // One event per change that was written, none for a lost race.
    let filter = EventFilter { kind: Some("integration.updated".into()), limit: 1000, ..Default::default() };
    let events: Vec<StoredEvent> = store.events(filter).await.unwrap();
    assert_eq!(events.len(), n);
    // A write over a version read before the last change is refused and changes nothing.
    let mut stale = i.clone();
    stale.version -= 1;
    stale.name = "Stale".into();
    assert!(!store.update_integration(stale, ev(EventKind::IntegrationUpdated)).await.unwrap());
    assert_eq!(store.integration("app".into()).await.unwrap().unwrap(), i);
}
