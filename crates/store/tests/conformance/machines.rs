//! Machines without a stored secret: JWT issuers and mappings round-trip,
//! the JWT replay record makes a JWT single-use (one conditional insert,
//! attacked by simultaneous writers; on PostgreSQL through two stores, as
//! two replicas), an expired record is taken over, a machine identity gets
//! its row at its first grant and may use what its mapping allows, and
//! removing a mapping ends its identities' grants.

use std::sync::Arc;

use strongroom_core::event::EventKind;
use strongroom_core::grant::{Grant, IssuedTokens};
use strongroom_core::identity::User;
use strongroom_core::integration::TokenSettings;
use strongroom_core::machine::{Algorithm, CertField, Condition, JwtIssuer, KeySource, Mapping, MappingRule};
use strongroom_core::scope::Scope;
use strongroom_store::{EventFilter, IssuerRemoval, MachineGrant, MachineIssue, Replay, Store};

use crate::cases::{Rng, T0, ev, first_pair, integration, rng};

pub(crate) fn issuer() -> JwtIssuer {
    JwtIssuer {
        name: "gh".into(),
        issuer: "https://token.actions.githubusercontent.com".into(),
        keys: KeySource::Discovery("https://token.actions.githubusercontent.com/.well-known/openid-configuration".into()),
        audiences: vec!["strongroom".into(), "other".into()],
        algorithms: vec![Algorithm::RS256, Algorithm::EdDSA],
        clock_skew: 30,
        max_lifetime: 900,
        created_at: T0,
    }
}

pub(crate) fn jwt_mapping() -> Mapping {
    Mapping {
        name: "deploy".into(),
        rule: MappingRule::Jwt {
            issuer: "gh".into(),
            conditions: vec![Condition::parse("repository=org/*").unwrap(), Condition::parse("ref=refs/heads/main").unwrap()],
            identity_claim: "sub".into(),
        },
        client_ids: vec!["app".into()],
        max_scope: Scope::parse("restricted").unwrap(),
        created_at: T0,
    }
}

pub(crate) fn machine_grant(rng: &Rng, mapping: &Mapping, subject: &str, jti: Option<&str>) -> MachineGrant {
    machine_grant_and_tokens(rng, mapping, subject, jti).0
}

fn machine_grant_and_tokens(rng: &Rng, mapping: &Mapping, subject: &str, jti: Option<&str>) -> (MachineGrant, IssuedTokens) {
    let settings = TokenSettings { refreshable: false, grant_validity: 3600, ..TokenSettings::default() };
    let mut grant = Grant::new(rng, "app", mapping.identity(subject), Scope::parse("restricted").unwrap(), T0, settings);
    let tokens = first_pair(rng, &mut grant);
    let replay = jti.map(|j| Replay { issuer: "gh".into(), key: format!("jti:{j}"), expires: T0.plus_secs(300) });
    (MachineGrant { grant, mapping: mapping.name.clone(), replay }, tokens)
}

pub(crate) async fn machine_config(store: Arc<dyn Store>) {
    store.create_integration(integration("app"), ev(EventKind::IntegrationCreated)).await.unwrap();
    store.save_jwt_issuer(issuer(), ev(EventKind::JwtIssuerSaved)).await.unwrap();
    assert_eq!(store.jwt_issuers().await.unwrap(), vec![issuer()]);
    let mut changed = issuer();
    changed.audiences = vec!["strongroom".into()];
    changed.created_at = T0.plus_secs(5);
    store.save_jwt_issuer(changed.clone(), ev(EventKind::JwtIssuerSaved)).await.unwrap();
    changed.created_at = T0;
    assert_eq!(store.jwt_issuers().await.unwrap(), vec![changed.clone()], "replaced, creation time kept");
    store.save_mapping(jwt_mapping(), ev(EventKind::MappingSaved)).await.unwrap();
    let cert = Mapping {
        name: "agents".into(),
        rule: MappingRule::Cert { ca_bundle: "-----BEGIN CERTIFICATE-----\n...".into(), field: CertField::Upn },
        client_ids: vec![],
        max_scope: Scope::parse("restricted").unwrap(),
        created_at: T0,
    };
    store.save_mapping(cert.clone(), ev(EventKind::MappingSaved)).await.unwrap();
    assert_eq!(store.mappings().await.unwrap(), vec![cert, jwt_mapping()]);
    let (found, mappings) = store.jwt_context(changed.issuer.clone()).await.unwrap().unwrap();
    assert_eq!((found, mappings), (changed, vec![jwt_mapping()]));
    assert!(store.jwt_context("https://other".into()).await.unwrap().is_none());
    assert_eq!(store.remove_jwt_issuer("gh".into(), ev(EventKind::JwtIssuerRemoved)).await.unwrap(), IssuerRemoval::InUse(1));
    assert_eq!(store.remove_mapping("deploy".into(), ev(EventKind::MappingRemoved)).await.unwrap(), Some(0));
    assert_eq!(store.remove_mapping("deploy".into(), ev(EventKind::MappingRemoved)).await.unwrap(), None);
    assert_eq!(store.remove_jwt_issuer("gh".into(), ev(EventKind::JwtIssuerRemoved)).await.unwrap(), IssuerRemoval::Removed);
    assert_eq!(store.remove_jwt_issuer("gh".into(), ev(EventKind::JwtIssuerRemoved)).await.unwrap(), IssuerRemoval::NotFound);
    let chain = store.events(EventFilter { limit: 1000, ..Default::default() }).await.unwrap();
    assert_eq!(
        chain.iter().filter(|e| e.event.kind == EventKind::MappingRemoved).count(),
        1,
        "a removal that found nothing writes nothing"
    );
}

pub(crate) async fn configured(store: &dyn Store) {
    // Nobody on its list: a machine identity is allowed through its mapping only.
    let mut app = integration("app");
    app.allowed_users = strongroom_core::integration::AllowedUsers::Only(Vec::new());
    store.create_integration(app, ev(EventKind::IntegrationCreated)).await.unwrap();
    store.save_jwt_issuer(issuer(), ev(EventKind::JwtIssuerSaved)).await.unwrap();
    store.save_mapping(jwt_mapping(), ev(EventKind::MappingSaved)).await.unwrap();
}

pub(crate) async fn machine_grants_and_their_identities(store: Arc<dyn Store>) {
    let rng = rng();
    configured(&*store).await;
    let m = jwt_mapping();
    let (g, access) = machine_grant_and_tokens(&rng, &m, "repo:org/app:ref:refs/heads/main", Some("a"));
    assert_eq!(store.insert_machine_grant(g.clone(), ev(EventKind::TokenIssued)).await.unwrap(), MachineIssue::Issued);
    // The identity's row, and its standing: allowed on the mapping's integration.
    let u = store.user_by_id(g.grant.user_id.clone()).await.unwrap().unwrap();
    assert_eq!(u.name, "jwt+deploy:repo:org/app:ref:refs/heads/main");
    let ctx = store.access_context(access.access_presented()).await.unwrap().unwrap();
    assert!(ctx.check(T0).is_ok(), "the machine's access token works");
    assert!(ctx.standing.user_allowed, "the mapping allows its integration");
    // The same JWT again: refused, nothing written.
    let again = machine_grant(&rng, &m, "repo:org/app:ref:refs/heads/main", Some("a"));
    let events = store.events(EventFilter { limit: 1000, ..Default::default() }).await.unwrap().len();
    assert_eq!(store.insert_machine_grant(again, ev(EventKind::TokenIssued)).await.unwrap(), MachineIssue::Replayed);
    assert_eq!(store.events(EventFilter { limit: 1000, ..Default::default() }).await.unwrap().len(), events);
    // A second grant of the identity: no second row, no second identity event.
    let second = machine_grant(&rng, &m, "repo:org/app:ref:refs/heads/main", Some("b"));
    assert_eq!(store.insert_machine_grant(second, ev(EventKind::TokenIssued)).await.unwrap(), MachineIssue::Issued);
    let added = store
        .events(EventFilter { limit: 1000, ..Default::default() })
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.event.kind == EventKind::MachineIdentityAdded)
        .count();
    assert_eq!(added, 1);
    // A record past its JWT's expiry is taken over.
    let mut late = machine_grant(&rng, &m, "repo:org/app:ref:refs/heads/main", Some("a"));
    let mut at = ev(EventKind::TokenIssued);
    at.at = T0.plus_secs(301);
    late.replay.as_mut().unwrap().expires = T0.plus_secs(900);
    assert_eq!(store.insert_machine_grant(late, at).await.unwrap(), MachineIssue::Issued);
    // A disabled identity gets nothing.
    store.set_user_disabled(u.name.clone(), true, ev(EventKind::UserDisabled)).await.unwrap();
    let d = machine_grant(&rng, &m, "repo:org/app:ref:refs/heads/main", Some("c"));
    assert_eq!(store.insert_machine_grant(d, ev(EventKind::TokenIssued)).await.unwrap(), MachineIssue::Disabled);
    // A subject differing only in case from an existing identity's name.
    let other = machine_grant(&rng, &m, "REPO:org/app:ref:refs/heads/main", Some("d"));
    assert_eq!(store.insert_machine_grant(other, ev(EventKind::TokenIssued)).await.unwrap(), MachineIssue::IdentityTaken);
    // An administrator names an identity before its first grant (to grant it rights).
    let named = User {
        id: m.identity("repo:org/lib"),
        name: "jwt+deploy:repo:org/lib".into(),
        disabled: false,
        master_admin: false,
        created_at: T0,
        signed_in_at: None,
    };
    assert!(store.add_machine_identity(named.clone(), "deploy".into(), ev(EventKind::MachineIdentityAdded)).await.unwrap());
    assert!(store.add_machine_identity(named, "deploy".into(), ev(EventKind::MachineIdentityAdded)).await.unwrap(), "again: nothing new");
    // Removing the mapping ends its identities' grants and their standing.
    store.set_user_disabled(u.name.clone(), false, ev(EventKind::UserEnabled)).await.unwrap();
    let live = machine_grant(&rng, &m, "repo:org/app:ref:refs/heads/main", Some("e"));
    assert_eq!(store.insert_machine_grant(live, ev(EventKind::TokenIssued)).await.unwrap(), MachineIssue::Issued);
    assert_eq!(store.remove_mapping("deploy".into(), ev(EventKind::MappingRemoved)).await.unwrap(), Some(1));
    let ctx = store.access_context(access.access_presented()).await.unwrap().unwrap();
    assert!(!ctx.standing.user_allowed, "no mapping, no integration");
    let all = store.events(EventFilter { limit: 1000, ..Default::default() }).await.unwrap();
    strongroom_core::event::verify_chain(&all, store.event_head().await.unwrap()).unwrap();
}

/// Simultaneous presentations of one JWT, each its own write: exactly one
/// grant, on every try. `stores` are handles on one database (on PostgreSQL
/// two pools, as two replicas).
pub(crate) async fn one_jwt_is_accepted_once(stores: Vec<Arc<dyn Store>>) {
    let rng = rng();
    configured(&*stores[0]).await;
    let m = jwt_mapping();
    for trial in 0..20 {
        let mut tasks = Vec::new();
        for k in 0..32 {
            let store = stores[k % stores.len()].clone();
            let g = machine_grant(&rng, &m, "repo:org/app:ref:refs/heads/main", Some(&format!("race-{trial}")));
            tasks.push(tokio::spawn(async move { store.insert_machine_grant(g, ev(EventKind::TokenIssued)).await.unwrap() }));
        }
        let mut issued = 0;
        for t in tasks {
            if t.await.unwrap() == MachineIssue::Issued {
                issued += 1;
            }
        }
        assert_eq!(issued, 1, "trial {trial}");
    }
}

/// Many JWT grants at once, as PostgreSQL's writer puts them in one
/// statement: grants of distinct JWTs for identities that have their rows
/// all land, each once; a disabled identity's are refused and write
/// nothing; a JWT presented twice at once lands once; an identity without
/// its row yet gets it once; one event per grant, and the chain verifies.
pub(crate) async fn jwt_grants_at_once_each_land_once(store: Arc<dyn Store>) {
    let rng = Arc::new(rng());
    configured(&*store).await;
    let m = jwt_mapping();
    let subjects: Vec<String> = (0..8).map(|i| format!("repo:org/app{i}:ref:refs/heads/main")).collect();
    // Each identity's first grant makes its row.
    for (i, s) in subjects.iter().enumerate() {
        let g = machine_grant(&rng, &m, s, Some(&format!("first-{i}")));
        assert_eq!(store.insert_machine_grant(g, ev(EventKind::TokenIssued)).await.unwrap(), MachineIssue::Issued);
    }
    let disabled = format!("jwt+deploy:{}", subjects[7]);
    store.set_user_disabled(disabled, true, ev(EventKind::UserDisabled)).await.unwrap();
    // Round 0: distinct JWTs of enabled identities only (PostgreSQL: one
    // statement a batch). Round 1: every fifth JWT presented twice at once,
    // and the disabled identity's. Round 2: four identities without their
    // row yet among the others.
    for round in 0..3 {
        let before = store.event_head().await.unwrap().0;
        let twice = |k: usize| round == 1 && k.is_multiple_of(5);
        let disabled = |k: usize| round == 1 && k % 8 == 7;
        let new_row = |k: usize| round == 2 && k % 10 == 9;
        let mut tasks = Vec::new();
        for k in 0..40 {
            let subject = match k {
                k if new_row(k) => format!("repo:org/new{k}:ref:refs/heads/main"),
                k if disabled(k) => subjects[7].clone(),
                k => subjects[k % 7].clone(),
            };
            for _ in 0..if twice(k) { 2 } else { 1 } {
                let (store, rng) = (store.clone(), rng.clone());
                let g = machine_grant(&rng, &m, &subject, Some(&format!("r{round}-{k}")));
                let id = g.grant.id.clone();
                tasks.push(tokio::spawn(async move { (k, id, store.insert_machine_grant(g, ev(EventKind::TokenIssued)).await.unwrap()) }));
            }
        }
        let mut issued = std::collections::HashMap::new();
        for t in tasks {
            let (k, id, out) = t.await.unwrap();
            match out {
                // Its replay record is written all the same: the second copy of a JWT presented twice is a replay.
                MachineIssue::Disabled => assert!(disabled(k), "round {round}, JWT {k}: refused as disabled"),
                MachineIssue::Replayed => assert!(twice(k), "round {round}, JWT {k}: refused as a replay, presented once"),
                MachineIssue::Issued => {
                    assert!(!disabled(k), "round {round}, JWT {k}: granted to a disabled identity");
                    assert!(issued.insert(k, id).is_none(), "round {round}, JWT {k}: accepted twice");
                }
                MachineIssue::IdentityTaken => panic!("round {round}, JWT {k}: identity taken"),
            }
        }
        let enabled = (0..40).filter(|k| !disabled(*k)).count();
        assert_eq!(issued.len(), enabled, "round {round}: every JWT of an enabled identity lands once");
        let stored: std::collections::HashSet<_> = store.list_grants(true, T0).await.unwrap().into_iter().map(|s| s.grant.id).collect();
        for (k, id) in &issued {
            assert!(stored.contains(id), "round {round}, JWT {k}: its grant is stored");
        }
        let new_rows = (0..40).filter(|k| new_row(*k)).count();
        let head = store.event_head().await.unwrap();
        assert_eq!(
            usize::try_from(head.0 - before).unwrap(),
            issued.len() + new_rows,
            "round {round}: one event per grant and new identity"
        );
    }
    let all = store.events(EventFilter { limit: 10_000, ..Default::default() }).await.unwrap();
    strongroom_core::event::verify_chain(&all, store.event_head().await.unwrap()).unwrap();
}
