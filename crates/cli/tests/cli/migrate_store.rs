//! `strongroom admin migrate-store` round trip: a SQLite store filled through
//! the real server (users, integrations, a device login and a refresh, a
//! password grant, folders, rights, vault entries with data and
//! associations, a key rotation, events) is copied to a fresh PostgreSQL
//! schema, served from there, copied back to a new SQLite file and served
//! again. Each time the tokens still verify and refresh, the vault values
//! read back, new VaultIDs continue after the copied ones, and the event
//! chain verifies. A target that holds anything is refused.

use strongroom_proto::vedsdk::{
    AssociationValue, DissociateRequest, LookupByAssociationRequest, ResultResponse, ValueFields, VaultIdsResponse,
};
use strongroom_testkit::api::string;
use strongroom_testkit::{Api, TokensExt as _};

use crate::process::{Server, approve, run};
use crate::replicas::{SCOPE, USER, admin_on, http, pg_url};

const PASSWORD: &str = "a long passphrase";
const FOLDER: &str = "\\VED\\Policy\\Moved";
const SECRET: &[u8] = b"secret data";
/// [`SECRET`], base64.
const DATA: &str = "c2VjcmV0IGRhdGE=";

/// What a client holds across the migrations.
struct Held {
    device_access: String,
    device_refresh: String,
    password_access: String,
    vault_id: i64,
}

/// Everything `held` names works on the server at `base`; a new entry gets
/// VaultID `next_id`. The device grant is refreshed (its new pair is kept).
async fn check(api: &Api, held: &mut Held, next_id: i64, where_: &str) {
    assert_eq!(api.verify(&held.device_access).await, 200, "{where_}: device-login access token");
    assert_eq!(api.verify(&held.password_access).await, 200, "{where_}: password-grant access token");
    let next = api.refresh("moved", &held.device_refresh).await.unwrap_or_else(|f| panic!("{where_}: refresh: {f}"));
    held.device_access = next.access().to_owned();
    held.device_refresh = next.refresh().to_owned();
    let a = &held.device_access;
    let got = api.retrieve(a, held.vault_id).await.unwrap_or_else(|f| panic!("{where_}: {f}"));
    assert_eq!(got.base64_data.expose(), DATA, "{where_}");
    let mut pairs = api.associations(a, held.vault_id).await.unwrap_or_else(|f| panic!("{where_}: {f}"));
    pairs.sort();
    assert_eq!(pairs, vec![("Key Size".to_owned(), "2048".to_owned()), ("Purpose".to_owned(), "moving".to_owned())], "{where_}");
    let by_value = LookupByAssociationRequest { name: "Purpose".into(), value: ValueFields::from(&string("moving")) };
    let found: VaultIdsResponse = api.sdk(a, "LookupByAssociation", &by_value).await.unwrap_or_else(|f| panic!("{where_}: {f}"));
    assert_eq!(found.vault_ids, [held.vault_id], "{where_}: lookup hashes survive");
    let added = api.add(a, FOLDER, "Software:Default", SECRET).await.unwrap_or_else(|f| panic!("{where_}: {f}"));
    assert_eq!(added.vault_id, next_id, "{where_}: the VaultID sequence continues");
}

/// Every row of every table, read through the copier's own interface.
async fn dump_all(url: &str) -> Vec<(&'static str, Vec<strongroom_store::transfer::Row>)> {
    let (_, t) = strongroom_store::transfer::open(url).await.unwrap();
    let mut out = Vec::new();
    for table in strongroom_store::transfer::TABLES {
        out.push((table.name, t.dump(table, None, 100_000).await.unwrap()));
    }
    out
}

/// The two stores hold the same rows, cell for cell (in any order: the
/// backends sort text differently), and the same event head and next VaultID.
async fn assert_same_rows(url_a: &str, url_b: &str, what: &str) {
    let (a, b) = (dump_all(url_a).await, dump_all(url_b).await);
    for ((name, rows_a), (_, rows_b)) in a.iter().zip(&b) {
        assert_eq!(rows_a.len(), rows_b.len(), "{what}: {name}");
        for (i, row) in rows_a.iter().enumerate() {
            assert!(rows_b.contains(row), "{what}: {name} row {i} differs or is missing");
        }
    }
    let (_, ta) = strongroom_store::transfer::open(url_a).await.unwrap();
    let (_, tb) = strongroom_store::transfer::open(url_b).await.unwrap();
    assert_eq!(ta.counters().await.unwrap(), tb.counters().await.unwrap(), "{what}: event head and next VaultID");
}

/// `postgres://USER@HOST:PORT/DB?options=-c%20search_path%3DSCHEMA` (what
/// `fresh_schema_url` makes of the test server's URL) in libpq's
/// `key=value` form.
fn key_value_form(url: &str) -> String {
    let rest = url.strip_prefix("postgres://").unwrap_or_else(|| panic!("not a postgres:// URL: {url}"));
    let (authority, rest) = rest.split_once('/').unwrap();
    let (db, query) = rest.split_once('?').unwrap();
    let (user, host) = authority.split_once('@').unwrap();
    let (host, port) = host.split_once(':').unwrap_or((host, "5432"));
    let schema = query.split("search_path%3D").nth(1).unwrap_or_else(|| panic!("no schema in {url}"));
    format!("host={host} port={port} user={user} dbname={db} options='-c search_path={schema}'")
}

fn migrate(from: &str, to: &str) -> crate::process::Run {
    let dir = tempfile::tempdir().unwrap();
    run(&["admin", "--data-dir", dir.path().to_str().unwrap(), "migrate-store", "--from", from, "--to", to], &[])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_store_round_trip_sqlite_postgres_sqlite_keeps_tokens_values_and_chain() {
    let Some(root) = pg_url("migrate-store") else { return };
    let http = http();

    // A SQLite store, filled through the real server.
    let mut sqlite = Server::start(&["--insecure-http"], &[]);
    let api = Api::with(http.clone(), sqlite.http_base());
    sqlite.admin(&["users", "create", USER, "--master-admin"], &format!("{PASSWORD}\n"));
    sqlite.admin(&["users", "create", "other"], &format!("{PASSWORD}\n"));
    sqlite.admin(
        &["integrations", "create", "moved", "--scope", SCOPE, "--allow-user", USER, "--password-grant", "true", "--retry-window", "5"],
        "",
    );
    sqlite.admin(&["folders", "create", FOLDER], "");
    sqlite.admin(&["rights", "grant", FOLDER, USER, "--rights", "read,write"], "");
    sqlite.admin(&["rights", "grant", FOLDER, "other", "--rights", "view"], "");

    let d = api.device("moved", SCOPE).await;
    let page = approve(&http, &d.verification_uri_complete, USER, PASSWORD, true).await;
    assert!(page.contains("Access approved"), "{page}");
    let first = api.poll("moved", d.device_code.expose()).await.unwrap();
    let rotated = api.refresh("moved", first.refresh()).await.unwrap();
    let pw = api.password_grant("moved", USER, PASSWORD, SCOPE).await;
    let access = rotated.access().to_owned();
    let vault_id = api.add(&access, FOLDER, "Software:Default", SECRET).await.unwrap().vault_id;
    for (name, value) in [("Purpose", string("moving")), ("Key Size", AssociationValue::Int(2048)), ("Gone", string("soon"))] {
        api.associate(&access, vault_id, name, &value).await.unwrap();
    }
    let gone = DissociateRequest { vault_id, name: Some("Gone".into()), value: ValueFields::default() };
    api.sdk::<ResultResponse>(&access, "Dissociate", &gone).await.unwrap();
    sqlite.admin(&["keys", "rotate"], "");
    let mut held =
        Held { device_access: access, device_refresh: rotated.refresh().to_owned(), password_access: pw.access().to_owned(), vault_id };
    let key = std::fs::read_to_string(sqlite.dir.join("master.key")).unwrap().trim().to_owned();
    let sqlite_db = sqlite.dir.join("strongroom.db").to_str().unwrap().to_owned();
    sqlite.kill();

    // A source that does not exist is refused, and not created.
    let missing = sqlite.dir.join("no-such.db");
    let refused = migrate(missing.to_str().unwrap(), &strongroom_store::postgres::testing::fresh_schema_url(&root).await.unwrap());
    assert!(refused.code != 0 && refused.stderr.contains("no-such.db not found"), "{}", refused.stderr);
    assert!(!missing.exists(), "the missing source was not created");

    // SQLite -> PostgreSQL.
    let pg = strongroom_store::postgres::testing::fresh_schema_url(&root).await.unwrap();
    let to_pg = migrate(&sqlite_db, &pg);
    assert_eq!(to_pg.code, 0, "{} {}", to_pg.stdout, to_pg.stderr);
    for table in
        ["users: 2 rows", "integrations: 1 rows", "grants: 2 rows", "folder_rights: 2 rows", "data_keys: 2 rows", "associations: 2 rows"]
    {
        assert!(to_pg.stdout.contains(&format!("copied {table}")), "{table}: {}", to_pg.stdout);
    }
    assert!(to_pg.stdout.contains("event log intact"), "{}", to_pg.stdout);
    assert_same_rows(&sqlite_db, &pg, "SQLite -> PostgreSQL").await;
    let again = migrate(&sqlite_db, &pg);
    assert_ne!(again.code, 0, "a non-empty target is refused");
    assert!(again.stderr.contains("the target store is not empty"), "{}", again.stderr);

    let mut on_pg = Server::start(&["--insecure-http", "--database-url", &pg], &[("STRONGROOM_MASTER_KEY", &key)]);
    check(&Api::with(http.clone(), on_pg.http_base()), &mut held, vault_id + 1, "on PostgreSQL").await;
    let verified = admin_on(&pg, &key, &["events", "verify"], "");
    assert!(verified.contains("event log intact"), "{verified}");
    on_pg.kill();

    // PostgreSQL -> a new SQLite file, the source named in libpq's
    // key=value form this time.
    let back_dir = tempfile::tempdir().unwrap();
    let back = back_dir.path().join("back.db").to_str().unwrap().to_owned();
    let to_sqlite = migrate(&key_value_form(&pg), &back);
    assert_eq!(to_sqlite.code, 0, "{} {}", to_sqlite.stdout, to_sqlite.stderr);
    assert!(to_sqlite.stdout.contains("event log intact"), "{}", to_sqlite.stdout);
    assert_same_rows(&pg, &back, "PostgreSQL -> SQLite").await;
    let refused = migrate(&pg, &back);
    assert!(refused.code != 0 && refused.stderr.contains("the target store is not empty"), "{}", refused.stderr);

    let on_sqlite = Server::start(&["--insecure-http", "--database-url", &back], &[("STRONGROOM_MASTER_KEY", &key)]);
    check(&Api::with(http.clone(), on_sqlite.http_base()), &mut held, vault_id + 2, "back on SQLite").await;
    let verified = admin_on(&back, &key, &["events", "verify"], "");
    assert!(verified.contains("event log intact"), "{verified}");
    eprintln!("migrate-store: SQLite -> PostgreSQL:\n{}PostgreSQL -> SQLite:\n{}{}", to_pg.stdout, to_sqlite.stdout, verified);
    on_sqlite.stop();
}
