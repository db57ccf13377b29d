//! Migrations on databases that already hold data: 0004 (named keys), 0010 (folder GUIDs) and 0014 (the grants of before 0007's
//! tokens that name their grant are ended).

use rusqlite::Connection;

use super::{MIGRATIONS, migrate};

#[test]
fn entries_from_before_named_keys_are_under_software_default() {
    let c = Connection::open_in_memory().unwrap();
    c.execute_batch("PRAGMA foreign_keys=ON; CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)")
        .unwrap();
    for m in MIGRATIONS.iter().filter(|m| m.version <= 3) {
        c.execute_batch(m.sql).unwrap();
        c.execute("INSERT INTO schema_migrations VALUES (?1, ?2, 0)", rusqlite::params![m.version, m.name]).unwrap();
    }
    c.execute_batch(
        "INSERT INTO data_keys (id, wrapped, created_at) VALUES (1, x'00', 0); \
         INSERT INTO vault_entries (vault_id, vault_type, key_name, key_id, sealed, created_at) VALUES (1, 32, 'whatever:the client sent', 1, x'00', 0);",
    )
    .unwrap();
    migrate(&c).unwrap();
    let names: (String, String) = c
        .query_row(
            "SELECT (SELECT key_name FROM data_keys WHERE id = 1), (SELECT key_name FROM vault_entries WHERE vault_id = 1)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(names, ("Software:Default".to_owned(), "Software:Default".to_owned()));
}

/// A store file at migration 6 with two live grants as the server wrote
/// them then (their tokens of the old layout in `access_tokens` and
/// `refresh_tokens`), brought to migration 13 with one of them refreshed
/// since (its slot given with its first new pair, its rows of before kept)
/// and a grant born with its slot beside them, then opened by this version:
/// migration 0014 ends both grants of before (deletes them: no event can be
/// written from SQL) and drops the old tables. Their tokens, old and new,
/// are unknown; the grant born with its slot works on through the store's
/// own methods.
#[tokio::test]
async fn the_grants_of_before_locators_are_ended_by_the_upgrade() {
    use strongroom_core::event::{Event, EventKind};
    use strongroom_core::grant::refresh::Refresh;
    use strongroom_core::grant::{Grant, IssuedTokens, Pair};
    use strongroom_core::identity::UserId;
    use strongroom_core::integration::TokenSettings;
    use strongroom_core::random::Random;
    use strongroom_core::scope::Scope;
    use strongroom_core::time::UnixTime;
    use strongroom_core::token::{Locator, TokenKey, TokenKind, looks_like_token};

    #[derive(Debug)]
    struct Counting(std::sync::atomic::AtomicU8);
    impl Random for Counting {
        fn fill(&self, dest: &mut [u8]) {
            for b in dest {
                *b = self.0.fetch_add(37, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }
    let rng = Counting(std::sync::atomic::AtomicU8::new(1));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    let key = TokenKey::new([5; 32]);
    let now = UnixTime::from_secs(1_900_000_000);
    let ms = now.millis();
    // Tokens of the old layout: 34 random bytes, no locator.
    let old = |c: &str, kind: TokenKind| {
        let t = format!("{}==", c.repeat(46));
        assert!(looks_like_token(&t) && key.presented(kind, &t).is_none(), "not located, so never looked up");
        (t.clone(), key.hash(kind, &t).0.to_vec())
    };
    let (a1, r1, a2, r2) =
        (old("Q", TokenKind::Access), old("Q", TokenKind::Refresh), old("g", TokenKind::Access), old("g", TokenKind::Refresh));
    let c = Connection::open(&path).unwrap();
    c.execute_batch("PRAGMA foreign_keys=ON; CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)")
        .unwrap();
    let migrate_to = |version: i64| {
        for m in MIGRATIONS.iter().filter(|m| m.version <= version) {
            if c.query_row("SELECT count(*) FROM schema_migrations WHERE version = ?1", [m.version], |r| r.get::<_, i64>(0)).unwrap() == 0 {
                c.execute_batch(m.sql).unwrap();
                c.execute("INSERT INTO schema_migrations VALUES (?1, ?2, 0)", rusqlite::params![m.version, m.name]).unwrap();
            }
        }
    };
    migrate_to(6);
    c.execute("INSERT INTO users (id, name, name_key, password_hash, created_at) VALUES ('u1', 'Ann', 'ann', 'x', ?1)", [ms]).unwrap();
    c.execute(
        "INSERT INTO integrations (client_id, name, max_scope, allow_all_users, created_at) VALUES ('app', 'App', 'restricted', 1, ?1)",
        [ms],
    )
    .unwrap();
    for (id, (_, a), (_, r)) in [("g1", &a1, &r1), ("g2", &a2, &r2)] {
        c.execute(
            "INSERT INTO grants (id, client_id, user_id, scope, created_at, refresh_until, refreshable, access_issued_at, access_validity, \
             refresh_hash, access_hash, pair_used, version) VALUES (?1, 'app', 'u1', 'restricted', ?2, ?3, 1, ?2, 3600, ?4, ?5, 1, 3)",
            rusqlite::params![id, ms, ms + 86_400_000, r, a],
        )
        .unwrap();
        c.execute("INSERT INTO access_tokens VALUES (?1, ?2, ?3, ?4)", rusqlite::params![a, id, ms, ms + 3_600_000]).unwrap();
        c.execute("INSERT INTO refresh_tokens VALUES (?1, ?2, ?3, NULL)", rusqlite::params![r, id, ms]).unwrap();
    }
    migrate_to(13);
    // g2 was refreshed after 0007: its slot and new pair in its row, its rows of before kept.
    let refreshed = Locator { slot: 42, generation: 1 };
    let g2_access = key.mint_at(&rng, TokenKind::Access, refreshed);
    let g2_hash = key.hash(TokenKind::Access, g2_access.expose());
    c.execute(
        "UPDATE grants SET slot = ?1, generation = ?2, access_hash = ?3, pair_used = 0, version = 4 WHERE id = 'g2'",
        rusqlite::params![refreshed.slot, refreshed.generation, g2_hash.0.to_vec()],
    )
    .unwrap();
    // A grant born with its slot, as the store writes one.
    let user = UserId::from_stored("u1".into());
    let mut born = Grant::new(&rng, "app", user, Scope::parse("restricted").unwrap(), now, TokenSettings::default());
    let first = IssuedTokens::mint(&key, &rng, &born, now);
    born.pair = Pair::first(&first);
    c.execute(&crate::schema::GRANTS.insert(), rusqlite::params_from_iter(crate::codec::grant_row(&born).iter())).unwrap();
    drop(c);

    let store = crate::open(path.to_str().unwrap()).await.unwrap();
    let later = now.plus_secs(60);
    let grants = store.list_grants(true, later).await.unwrap();
    assert_eq!(grants.iter().map(|g| g.grant.id.as_str()).collect::<Vec<_>>(), [born.id.as_str()], "both grants of before are gone");
    let g2_presented = strongroom_core::token::Presented { hash: g2_hash, at: refreshed };
    assert!(store.access_context(g2_presented).await.unwrap().is_none(), "the new pair of a grant of before ended with it");
    let c = Connection::open(&path).unwrap();
    let left: i64 =
        c.query_row("SELECT count(*) FROM sqlite_master WHERE name IN ('access_tokens', 'refresh_tokens')", [], |r| r.get(0)).unwrap();
    assert_eq!(left, 0, "the tables of the old layout are dropped");

    let ctx = store.access_context(first.access_presented()).await.unwrap().expect("the grant born with its slot is found");
    assert!(ctx.check(later).is_ok(), "and works");
    let rc = store.refresh_context(first.refresh_presented().unwrap()).await.unwrap().unwrap();
    assert_eq!(rc.decide("app", later, 30), Refresh::Rotate);
    let t = IssuedTokens::mint(&key, &rng, &rc.grant, later);
    let change = crate::PairChange::rotation(&rc.grant, rc.presented.hash, &t);
    assert!(store.advance_pair(rc.grant.id.clone(), rc.grant.version, change, Event::new(EventKind::TokenRefreshed, later)).await.unwrap());
    assert!(store.access_context(t.access_presented()).await.unwrap().is_some_and(|c| c.check(later).is_ok()), "its next pair works");
}

/// Folders of before 0010 (the `\VED` tree as objects) get a GUID each: the
/// roots their fixed ones, every other folder a distinct random version 4
/// UUID; their keys, rights and owners stay as they were.
#[test]
fn folders_from_before_the_tree_get_guids() {
    let c = Connection::open_in_memory().unwrap();
    c.execute_batch("PRAGMA foreign_keys=ON; CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)")
        .unwrap();
    for m in MIGRATIONS.iter().filter(|m| m.version <= 9) {
        c.execute_batch(m.sql).unwrap();
        c.execute("INSERT INTO schema_migrations VALUES (?1, ?2, 0)", rusqlite::params![m.version, m.name]).unwrap();
    }
    for p in ["\\VED", "\\VED\\Policy", "\\VED\\Policy\\A", "\\VED\\Policy\\B", "\\VED\\Other"] {
        c.execute("INSERT INTO folders (path_key, path, created_at) VALUES (lower(?1), ?1, 0)", [p]).unwrap();
    }
    migrate(&c).unwrap();
    let mut s = c.prepare("SELECT path_key, guid FROM folders ORDER BY path_key").unwrap();
    let rows: Vec<(String, String)> = s.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect();
    assert_eq!(rows[0], ("\\ved".to_owned(), strongroom_core::tree::VED_GUID.to_owned()));
    assert_eq!(rows[2], ("\\ved\\policy".to_owned(), strongroom_core::tree::POLICY_GUID.to_owned()));
    let random: Vec<&String> = rows.iter().map(|(_, g)| g).filter(|g| !g.starts_with("00000000-")).collect();
    assert_eq!(random.len(), 3);
    for g in &random {
        let parts: Vec<usize> = g.split('-').map(str::len).collect();
        assert_eq!(parts, [8, 4, 4, 4, 12], "{g}");
        assert!(g.chars().all(|ch| ch == '-' || ch.is_ascii_digit() || ('a'..='f').contains(&ch)), "{g}");
        assert_eq!((&g[14..15], "89ab".contains(&g[19..20])), ("4", true), "version 4, RFC 4122 variant: {g}");
    }
    assert!(random[0] != random[1] && random[1] != random[2] && random[0] != random[2]);
}
