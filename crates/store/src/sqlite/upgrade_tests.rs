//! Migrations on databases that already hold data: 0004 (named keys), 0007 (tokens that name their grant) and 0010 (folder GUIDs).

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

/// A store file at migration 6 with a live grant as the server wrote it
/// then (its tokens of the old layout in `access_tokens` and
/// `refresh_tokens`), opened by this version: migration 0007 runs and the
/// grant keeps working through the store's own methods.
#[tokio::test]
async fn a_grant_of_migration_6_keeps_working_after_the_upgrade() {
    use strongroom_core::grant::refresh::Refresh;
    use strongroom_core::grant::{IssuedTokens, OLDER_ACCESS_KEPT};
    use strongroom_core::random::Random;
    use strongroom_core::time::UnixTime;
    use strongroom_core::token::{Presented, TokenKey, TokenKind, mint_token};

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
    let (access, refresh) = (mint_token(&rng), mint_token(&rng));
    let a = Presented { hash: key.hash(TokenKind::Access, access.expose()), at: None };
    let r = Presented { hash: key.hash(TokenKind::Refresh, refresh.expose()), at: None };
    {
        let c = Connection::open(&path).unwrap();
        c.execute_batch("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)")
            .unwrap();
        for m in MIGRATIONS.iter().filter(|m| m.version <= 6) {
            c.execute_batch(m.sql).unwrap();
            c.execute("INSERT INTO schema_migrations VALUES (?1, ?2, 0)", rusqlite::params![m.version, m.name]).unwrap();
        }
        let ms = now.millis();
        c.execute("INSERT INTO users (id, name, name_key, password_hash, created_at) VALUES ('u1', 'Ann', 'ann', 'x', ?1)", [ms]).unwrap();
        c.execute(
            "INSERT INTO integrations (client_id, name, max_scope, allow_all_users, created_at) VALUES ('app', 'App', 'restricted', 1, ?1)",
            [ms],
        )
        .unwrap();
        c.execute(
            "INSERT INTO grants (id, client_id, user_id, scope, created_at, refresh_until, refreshable, access_issued_at, access_validity, \
             refresh_hash, access_hash, pair_used, version) VALUES ('g1', 'app', 'u1', 'restricted', ?1, ?2, 1, ?1, 3600, ?3, ?4, 1, 3)",
            rusqlite::params![ms, ms + 86_400_000, r.hash.0.to_vec(), a.hash.0.to_vec()],
        )
        .unwrap();
        c.execute("INSERT INTO access_tokens VALUES (?1, 'g1', ?2, ?3)", rusqlite::params![a.hash.0.to_vec(), ms, ms + 3_600_000]).unwrap();
        c.execute("INSERT INTO refresh_tokens VALUES (?1, 'g1', ?2, NULL)", rusqlite::params![r.hash.0.to_vec(), ms]).unwrap();
    }
    let store = crate::open(path.to_str().unwrap()).await.unwrap();
    let later = now.plus_secs(60);
    let ctx = store.access_context(a).await.unwrap().expect("the access token of before is found");
    assert!(ctx.check(later).is_ok(), "and works");
    assert_eq!((ctx.grant.slot, ctx.grant.pair.generation, ctx.grant.version), (None, 0, 3));
    let rc = store.refresh_context(r).await.unwrap().expect("the refresh token of before is found");
    assert_eq!(rc.decide("app", later, 30), Refresh::Rotate);
    let t = IssuedTokens::mint(&key, &rng, &rc.grant, later);
    let change = crate::PairChange::rotation(&rc.grant, r.hash, &t);
    let event = strongroom_core::event::Event::new(strongroom_core::event::EventKind::TokenRefreshed, later);
    assert!(store.advance_pair(rc.grant.id.clone(), rc.grant.version, change, event).await.unwrap());
    let next = store.access_context(t.access_presented()).await.unwrap().expect("the new pair is found by its locator");
    assert!(next.check(later).is_ok());
    assert_eq!(next.grant.slot, Some(t.at.slot));
    assert!(next.grant.older_access.len() < OLDER_ACCESS_KEPT, "the access token of before stays in its row, not the ring");
    assert!(store.access_context(a).await.unwrap().is_some_and(|c| c.check(later).is_ok()), "the old access token works until it expires");
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
