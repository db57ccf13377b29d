//! Cases for what the row codec and the error kinds promise on every
//! backend: rows the codec makes (the benchmark's bulk loads) read back
//! through the store as the store would have written them; a duplicate key
//! and a broken reference are told apart; failures are counted by kind, and
//! the answers callers expect (a duplicate, a used-up quota) are not.

use std::sync::{Arc, Mutex};

use strongroom_core::event::{Event, EventKind};
use strongroom_core::grant::Grant;
use strongroom_core::grant::device::{DeviceAuthorization, DeviceState};
use strongroom_core::identity::{User, UserId};
use strongroom_core::integration::{AllowedUsers, GrantTypes, Integration, TokenOverrides, TokenSettings};
use strongroom_core::random::Random;
use strongroom_core::scope::Scope;
use strongroom_core::throttle::Rule;
use strongroom_core::token::{TokenHash, TokenKey, TokenKind};
use strongroom_core::vault::value::ValueType;
use strongroom_core::vault::{FolderPath, VaultId};
use strongroom_store::transfer::{self, Cell, Row, Table, Transfer};
use strongroom_store::{DataKeyRecord, ErrorKind, Store, StoreError, StoreObserver, StoredAssociation, VaultEntry};

use crate::cases::{T0, device, ev, first_pair, rng};

fn hash(n: u8) -> TokenHash {
    TokenKey::new([3; 32]).hash(TokenKind::Access, &format!("token {n}"))
}

async fn user_and_app(store: &dyn Store, rng: &dyn Random) -> User {
    let u =
        User { id: UserId::generate(rng), name: "codec".into(), disabled: false, master_admin: false, created_at: T0, signed_in_at: None };
    store.create_user(u.clone(), "$argon2id$fake".into(), ev(EventKind::UserCreated)).await.unwrap();
    let app = Integration {
        client_id: "app".into(),
        name: "App".into(),
        max_scope: Scope::parse("restricted:manage").unwrap(),
        allowed_users: AllowedUsers::Everyone,
        allowed_groups: Vec::new(),
        grant_types: GrantTypes::default(),
        overrides: TokenOverrides::default(),
        disabled: false,
        version: 0,
    };
    store.create_integration(app, ev(EventKind::IntegrationCreated)).await.unwrap();
    u
}

/// `name`'s table.
pub(crate) fn table(name: &str) -> &'static Table {
    transfer::TABLES.iter().find(|t| t.name == name).copied().unwrap()
}

/// Loads rows of several tables, each table's in one call, in the order given.
async fn load(copier: &dyn Transfer, rows: Vec<(&'static Table, Row)>) -> Result<(), StoreError> {
    let mut tables: Vec<(&'static Table, Vec<Row>)> = Vec::new();
    for (t, r) in rows {
        match tables.iter_mut().find(|(x, _)| x.name == t.name) {
            Some((_, v)) => v.push(r),
            None => tables.push((t, vec![r])),
        }
    }
    for (t, rows) in tables {
        copier.load(t, rows).await?;
    }
    Ok(())
}

/// A grant, a device code, an entry with an owner and an association, made
/// as rows by the codec and loaded by the copier, read back through the
/// store's own methods as they would have been written by them.
pub(crate) async fn rows_made_by_the_codec_read_back_through_the_store(store: Arc<dyn Store>, copier: Arc<dyn Transfer>) {
    let rng = rng();
    let u = user_and_app(&*store, &rng).await;
    let mut grant = Grant::new(&rng, "app", u.id.clone(), Scope::parse("restricted:manage").unwrap(), T0, TokenSettings::default());
    let tokens = first_pair(&rng, &mut grant);
    load(&*copier, vec![transfer::grant_row(&grant)]).await.unwrap();
    let access = store.access_context(tokens.access_presented()).await.unwrap().expect("the loaded grant's access token is known");
    assert_eq!(access.grant, grant);
    assert_eq!((access.token_issued_at, access.token_expires, access.user_name.as_str()), (T0, T0.plus_secs(3600), "codec"));
    let refresh = store.refresh_context(tokens.refresh_presented().unwrap()).await.unwrap().expect("its refresh token is known");
    assert_eq!(refresh.grant, grant);

    let device = DeviceAuthorization {
        code_hash: hash(3),
        user_code_hash: hash(4),
        client_id: "app".into(),
        scope: Scope::parse("restricted").unwrap(),
        state: DeviceState::Approved { user_id: u.id.clone() },
        created_at: T0,
        expires_at: T0.plus_secs(300),
        interval_secs: 5,
        last_poll_at: None,
        version: 0,
    };
    load(&*copier, vec![transfer::device_row(&device)]).await.unwrap();
    let ctx = store.device_context(hash(3)).await.unwrap().unwrap();
    assert_eq!((ctx.device, ctx.grant), (device, None));

    let folder = FolderPath::parse("\\VED\\Policy\\Codec").unwrap();
    store.create_folders(crate::cases::lineage(&folder), ev(EventKind::FolderCreated)).await.unwrap();
    let key = DataKeyRecord { id: 1, key_name: "Software:Default".into(), wrapped: vec![1; 48], created_at: T0 };
    store.insert_data_key(key, ev(EventKind::VaultKeyCreated)).await.unwrap();
    let id = VaultId(7_000);
    let entry = VaultEntry {
        vault_id: id,
        vault_type: 32,
        key_name: "Software:Default".into(),
        key_id: 1,
        sealed: vec![9; 40],
        owners: vec![folder.clone()],
        created_at: T0,
    };
    let a = StoredAssociation { name: "Serial".into(), value_type: ValueType::String, key_id: 1, sealed: vec![8; 30], lookup: [5; 32] };
    let mut rows = transfer::entry_rows(&entry);
    rows.push(transfer::association_row(id, &a));
    load(&*copier, rows).await.unwrap();
    assert_eq!(store.owners_of(vec![id]).await.unwrap(), vec![(id, vec![folder])]);
    assert_eq!(store.associations(id).await.unwrap(), vec![a.clone()]);
    assert_eq!(store.lookup_by_association("Serial".into(), Some(a.lookup)).await.unwrap().len(), 1);
    let ctx = store.vault_context(tokens.access_presented(), Some(id)).await.unwrap().unwrap();
    assert_eq!(ctx.entry, Some(entry));
}

/// A row whose key exists is a `Conflict`; a row naming a parent that does
/// not exist is another failure (`Other`), on both backends alike. An
/// integration's update keeps its creation time.
pub(crate) async fn a_duplicate_key_and_a_broken_reference_are_told_apart(store: Arc<dyn Store>, copier: Arc<dyn Transfer>) {
    let rng = rng();
    let u = user_and_app(&*store, &rng).await;
    let mut grant = Grant::new(&rng, "app", u.id.clone(), Scope::parse("restricted").unwrap(), T0, TokenSettings::default());
    first_pair(&rng, &mut grant);
    let rows = vec![transfer::grant_row(&grant)];
    load(&*copier, rows.clone()).await.unwrap();
    let again = load(&*copier, rows).await.unwrap_err();
    assert!(matches!(again, StoreError::Conflict), "{again:?}");
    assert_eq!(again.kind(), ErrorKind::Conflict);

    let orphan = VaultId(9_999);
    let a = StoredAssociation { name: "Serial".into(), value_type: ValueType::String, key_id: 1, sealed: vec![8; 30], lookup: [5; 32] };
    let broken = load(&*copier, vec![transfer::association_row(orphan, &a)]).await.unwrap_err();
    assert_eq!(broken.kind(), ErrorKind::Other, "a value of no entry is not a duplicate: {broken:?}");
    assert!(store.associations(orphan).await.unwrap().is_empty(), "nothing of the failed load is stored");

    let integrations = strongroom_store::transfer::TABLES.iter().find(|t| t.name == "integrations").unwrap();
    let created = |rows: &[Row]| rows[0][integrations.columns.iter().position(|(c, _)| *c == "created_at").unwrap()].clone();
    let before = copier.dump(integrations, None, 10).await.unwrap();
    assert_eq!(created(&before), Cell::Int(T0.millis()));
    let mut app = store.integration("app".into()).await.unwrap().unwrap();
    app.name = "Renamed".into();
    let later = Event::new(EventKind::IntegrationUpdated, T0.plus_secs(86_400));
    assert!(store.update_integration(app, later).await.unwrap());
    let after = copier.dump(integrations, None, 10).await.unwrap();
    assert_eq!(created(&after), created(&before), "an update keeps the creation time");
    assert_eq!(store.integration("app".into()).await.unwrap().unwrap().name, "Renamed");
}

#[derive(Debug, Default)]
struct Failures(Mutex<Vec<ErrorKind>>);

impl StoreObserver for Failures {
    fn batch(&self, _jobs: usize, _elapsed: std::time::Duration, _committed: bool) {}
    fn failed(&self, kind: ErrorKind) {
        self.0.lock().unwrap().push(kind);
    }
}

/// The observer hears of every failure with its kind, and of none of the
/// answers callers expect: a duplicate name, a used-up quota.
pub(crate) async fn failures_are_counted_by_kind_and_expected_answers_are_not(store: Arc<dyn Store>) {
    let rng = rng();
    let failures = Arc::new(Failures::default());
    store.observe(failures.clone());
    let u = user_and_app(&*store, &rng).await;
    let dup = User { id: UserId::generate(&rng), ..u.clone() };
    assert!(matches!(store.create_user(dup, "x".into(), ev(EventKind::UserCreated)).await, Err(StoreError::Conflict)));
    let start = |n: u8| device(&rng, n);
    let one = Rule { limit: 1, window_secs: 600, lockout_secs: 0 };
    store.insert_device(start(1), ev(EventKind::DeviceAuthorizationStarted), Some(("q".into(), one))).await.unwrap();
    let over = store.insert_device(start(2), ev(EventKind::DeviceAuthorizationStarted), Some(("q".into(), one))).await;
    assert!(matches!(over, Err(StoreError::QuotaExceeded)), "{over:?}");
    assert!(failures.0.lock().unwrap().is_empty(), "expected answers are not failures: {:?}", failures.0.lock().unwrap());

    // A code no one may move back to pending: refused by the store, counted.
    let refused = store.decide_device(start(1).code_hash, 0, DeviceState::Pending, ev(EventKind::DeviceApproved)).await.unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::Other);
    assert!(!refused.is_transient() && !refused.is_retryable());
    assert_eq!(*failures.0.lock().unwrap(), vec![ErrorKind::Other]);
}
