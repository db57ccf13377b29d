//! Migration 0004 on a database that already holds vault data.

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
