//! The server's master key and the keys derived from it.
//!
//! The master key is 32 random bytes, kept hex-encoded in
//! `<data_dir>/master.key` (created 0600 on first start) or given in
//! `STRONGROOM_MASTER_KEY`. Replicas sharing a PostgreSQL database must share
//! it. Each use gets its own key, derived with HMAC-SHA256 and a label.

use std::fmt;
use std::path::Path;
use zeroize::Zeroizing;

use strongroom_core::event::{Event, EventKind};
use strongroom_core::hex;
use strongroom_core::random::{Random, bytes};
use strongroom_core::time::UnixTime;
use strongroom_core::token::TokenKey;
use strongroom_store::{Store, StoreError};

pub const MASTER_KEY_FILE: &str = "master.key";
pub const MASTER_KEY_ENV: &str = "STRONGROOM_MASTER_KEY";

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("{0}")]
    Io(String),
    #[error("the master key must be 64 hexadecimal characters")]
    Format,
    #[error("{path} is open to group or other users (mode {mode:o}), so it is not used: run `chmod 600 {path}`")]
    TooOpen { path: String, mode: u32 },
    #[error(
        "{from} is not the key this store was first opened with, so nothing is done with it{removed}: give the store's key \
         (replicas share one key; after a restore, put back the key backed up with the store)"
    )]
    NotThisStore { from: String, removed: String },
    #[error("checking it against the store: {0}")]
    Check(#[from] StoreError),
    /// [`load_existing`]: neither the variable nor the file.
    #[error("no master key: {path} does not exist and {MASTER_KEY_ENV} is not set")]
    Missing { path: String },
}

/// Keys derived from the master key.
pub struct Keys {
    /// Hashes tokens, device codes and user codes for storage.
    pub token: TokenKey,
    /// Signs the approval page's anti-forgery tokens and consent tickets.
    pub page: [u8; 32],
    /// Wraps the vault's data keys.
    pub vault_kek: [u8; 32],
    /// Keys the hashes association values are looked up by.
    pub vault_lookup: [u8; 32],
    /// Recorded by the store the first time it is opened, so that another
    /// master key is refused ([`bind`]); says nothing of the key.
    pub check: [u8; 32],
}

impl fmt::Debug for Keys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Keys(<redacted>)")
    }
}

fn derive(master: &[u8; 32], label: &str) -> [u8; 32] {
    strongroom_core::mac::hmac_sha256_of(master, &[label.as_bytes()])
}

impl Keys {
    pub fn from_master(master: &[u8; 32]) -> Keys {
        Keys {
            token: TokenKey::new(derive(master, "strongroom/token-hash/v1")),
            page: derive(master, "strongroom/page/v1"),
            vault_kek: derive(master, "strongroom/vault-kek/v1"),
            vault_lookup: derive(master, "strongroom/vault-lookup/v1"),
            check: derive(master, "strongroom/key-check/v1"),
        }
    }
}

/// A master key as written: 64 hexadecimal digits (surrounding white space
/// aside), nothing else: no sign, no prefix, no space inside.
fn parse_hex(s: &str) -> Result<Zeroizing<[u8; 32]>, KeyError> {
    let mut out = Zeroizing::new([0u8; 32]);
    if hex::decode_into(s.trim(), &mut *out) { Ok(out) } else { Err(KeyError::Format) }
}

/// Where the master key came from, for the start-up log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    Env,
    File(String),
    Created(String),
}

impl KeySource {
    /// For the event that records the key: where it came from, without the path.
    fn kind(&self) -> &'static str {
        match self {
            KeySource::Env => "source=environment",
            KeySource::File(_) => "source=file",
            KeySource::Created(_) => "source=created",
        }
    }
}

/// Loads the master key from the environment value, else from the data
/// directory, creating it there on first start.
pub fn load_or_create(data_dir: &Path, env_value: Option<String>, rng: &dyn Random) -> Result<(Keys, KeySource), KeyError> {
    if let Some(v) = env_value {
        let master = parse_hex(&v)?;
        return Ok((Keys::from_master(&master), KeySource::Env));
    }
    let path = data_dir.join(MASTER_KEY_FILE);
    let shown = path.display().to_string();
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            check_private(&path)?;
            let master = parse_hex(&text)?;
            Ok((Keys::from_master(&master), KeySource::File(shown)))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            create_private_dir(data_dir).map_err(|e| KeyError::Io(format!("creating {}: {e}", data_dir.display())))?;
            let master = Zeroizing::new(bytes::<32>(rng));
            let text: Zeroizing<String> = Zeroizing::new(hex::encode(&*master));
            write_private(&path, text.as_bytes()).map_err(|e| KeyError::Io(format!("writing {shown}: {e}")))?;
            Ok((Keys::from_master(&master), KeySource::Created(shown)))
        }
        Err(e) => Err(KeyError::Io(format!("reading {shown}: {e}"))),
    }
}

/// Like [`load_or_create`], for a store that exists already: a missing key
/// file is [`KeyError::Missing`], never created (`admin` commands).
pub fn load_existing(data_dir: &Path, env_value: Option<String>) -> Result<(Keys, KeySource), KeyError> {
    if let Some(v) = env_value {
        let master = parse_hex(&v)?;
        return Ok((Keys::from_master(&master), KeySource::Env));
    }
    let path = data_dir.join(MASTER_KEY_FILE);
    let shown = path.display().to_string();
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            check_private(&path)?;
            let master = parse_hex(&text)?;
            Ok((Keys::from_master(&master), KeySource::File(shown)))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(KeyError::Missing { path: shown }),
        Err(e) => Err(KeyError::Io(format!("reading {shown}: {e}"))),
    }
}

/// Ties the master key to the store: the first opener records the key's
/// check value, and every later one must bring the same key. A replica or an
/// admin command given another key would otherwise hash tokens and
/// association values under a key no one else uses (its tokens working only
/// there, its associations never found elsewhere) and seal nothing anyone
/// else can open. A key file `load_or_create` has just made for a store that
/// already has its key is removed again. True when this call recorded the key.
pub async fn bind(store: &dyn Store, keys: &Keys, source: &KeySource, now: UnixTime) -> Result<bool, KeyError> {
    let event = Event::new(EventKind::MasterKeyRecorded, now).detail(source.kind());
    let Some(recorded) = store.record_key_check(keys.check, event).await? else {
        return Ok(true);
    };
    if recorded == keys.check {
        return Ok(false);
    }
    let (from, removed) = match source {
        KeySource::Env => (format!("the key in {MASTER_KEY_ENV}"), String::new()),
        KeySource::File(p) => (p.clone(), String::new()),
        KeySource::Created(p) => match std::fs::remove_file(p) {
            Ok(()) => (format!("the key just created at {p}"), "; it was removed again".to_owned()),
            Err(e) => (format!("the key just created at {p}"), format!("; it could not be removed ({e}): remove it")),
        },
    };
    Err(KeyError::NotThisStore { from, removed })
}

/// Where the master key would come from, checked the way `serve` checks
/// it but never created or shown: for `strongroom config check`.
pub fn describe_source(data_dir: &Path, env_value: Option<String>) -> Result<String, KeyError> {
    if let Some(v) = env_value {
        parse_hex(&v)?;
        return Ok(format!("from {MASTER_KEY_ENV} (valid, not shown)"));
    }
    let path = data_dir.join(MASTER_KEY_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            check_private(&path)?;
            parse_hex(&text)?;
            Ok(format!("{} (valid, mode 0600 or stricter, not shown)", path.display()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(format!("{} (created at first start)", path.display())),
        Err(e) => Err(KeyError::Io(format!("reading {}: {e}", path.display()))),
    }
}

pub use strongroom_proto::files::{create_private_dir, write_new, write_private};

/// Refuses a secret file (the master key, a PKCS#11 PIN file) that group or
/// other users may read or write, naming it and the `chmod` that fixes it.
pub fn check_private(path: &Path) -> Result<(), KeyError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(path).map_err(|e| KeyError::Io(format!("{}: {e}", path.display())))?.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(KeyError::TooOpen { path: path.display().to_string(), mode });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The operating system's random source, as the server's.
    #[derive(Debug)]
    struct OsRandom;

    impl Random for OsRandom {
        fn fill(&self, dest: &mut [u8]) {
            getrandom::getrandom(dest).unwrap();
        }
    }

    #[test]
    fn created_once_then_reloaded_with_the_same_keys() {
        let dir = tempfile::tempdir().unwrap();
        let (k1, s1) = load_or_create(dir.path(), None, &OsRandom).unwrap();
        assert!(matches!(s1, KeySource::Created(_)));
        let (k2, s2) = load_or_create(dir.path(), None, &OsRandom).unwrap();
        assert!(matches!(s2, KeySource::File(_)));
        assert_eq!(k1.page, k2.page);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(dir.path().join(MASTER_KEY_FILE)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
            std::fs::set_permissions(dir.path().join(MASTER_KEY_FILE), std::fs::Permissions::from_mode(0o644)).unwrap();
            let err = load_or_create(dir.path(), None, &OsRandom).unwrap_err();
            assert!(matches!(err, KeyError::TooOpen { mode: 0o644, .. }), "{err}");
            let shown = dir.path().join(MASTER_KEY_FILE).display().to_string();
            assert!(err.to_string().contains(&format!("chmod 600 {shown}")), "{err}");
            // Group-writable only is refused too; owner-only read is enough.
            std::fs::set_permissions(dir.path().join(MASTER_KEY_FILE), std::fs::Permissions::from_mode(0o620)).unwrap();
            assert!(matches!(load_or_create(dir.path(), None, &OsRandom), Err(KeyError::TooOpen { .. })));
            std::fs::set_permissions(dir.path().join(MASTER_KEY_FILE), std::fs::Permissions::from_mode(0o400)).unwrap();
            assert!(load_or_create(dir.path(), None, &OsRandom).is_ok());
            // The key from the environment is used without looking at the file.
            std::fs::set_permissions(dir.path().join(MASTER_KEY_FILE), std::fs::Permissions::from_mode(0o644)).unwrap();
            assert!(load_or_create(dir.path(), Some("ab".repeat(32)), &OsRandom).is_ok());
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_new_data_directory_is_private() {
        use std::os::unix::fs::PermissionsExt as _;
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("a").join("data");
        load_or_create(&data, None, &OsRandom).unwrap();
        for d in [root.path().join("a"), data.clone()] {
            assert_eq!(std::fs::metadata(&d).unwrap().permissions().mode() & 0o777, 0o700, "{}", d.display());
        }
        assert_eq!(std::fs::metadata(data.join(MASTER_KEY_FILE)).unwrap().permissions().mode() & 0o777, 0o600);
    }

    #[tokio::test]
    async fn a_store_refuses_any_master_key_but_the_one_it_was_first_opened_with() {
        let dir = tempfile::tempdir().unwrap();
        let store = strongroom_store::open(&dir.path().join("strongroom.db").to_string_lossy()).await.unwrap();
        let now = UnixTime::from_secs(1_800_000_000);
        let (keys, created) = load_or_create(dir.path(), None, &OsRandom).unwrap();
        assert!(bind(&*store, &keys, &created, now).await.unwrap(), "the first opener records its key");
        let (again, file) = load_or_create(dir.path(), None, &OsRandom).unwrap();
        assert!(!bind(&*store, &again, &file, now).await.unwrap(), "the same key again: nothing recorded");

        let other = "ab".repeat(32);
        let (wrong, env) = load_or_create(dir.path(), Some(other.clone()), &OsRandom).unwrap();
        let err = bind(&*store, &wrong, &env, now).await.unwrap_err();
        assert!(matches!(err, KeyError::NotThisStore { .. }), "{err}");
        assert!(err.to_string().contains(MASTER_KEY_ENV) && !err.to_string().contains(&other), "{err}");

        // A key made by this very start for a store that has one is taken away again.
        let elsewhere = tempfile::tempdir().unwrap();
        let (fresh, made) = load_or_create(elsewhere.path(), None, &OsRandom).unwrap();
        assert!(matches!(made, KeySource::Created(_)));
        let err = bind(&*store, &fresh, &made, now).await.unwrap_err();
        assert!(err.to_string().contains("removed again"), "{err}");
        assert!(!elsewhere.path().join(MASTER_KEY_FILE).exists());
        // The store's own key file is never touched.
        assert!(dir.path().join(MASTER_KEY_FILE).exists());
        let events = store
            .events(strongroom_store::EventFilter { kind: Some("store.master_key_recorded".into()), limit: 10, ..Default::default() })
            .await
            .unwrap();
        assert_eq!(events.len(), 1);
    }

    #[test]
    fn an_existing_key_is_loaded_and_a_missing_one_never_made() {
        let dir = tempfile::tempdir().unwrap();
        let err = load_existing(dir.path(), None).unwrap_err();
        assert!(matches!(err, KeyError::Missing { .. }) && err.to_string().contains(MASTER_KEY_ENV), "{err}");
        assert!(!dir.path().join(MASTER_KEY_FILE).exists());
        let (made, _) = load_or_create(dir.path(), None, &OsRandom).unwrap();
        let (loaded, source) = load_existing(dir.path(), None).unwrap();
        assert!(matches!(source, KeySource::File(_)));
        assert_eq!(made.page, loaded.page);
        assert_eq!(load_existing(dir.path(), Some("ab".repeat(32))).unwrap().1, KeySource::Env);
    }

    #[test]
    fn env_keys_must_be_hex() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(load_or_create(dir.path(), Some("xyz".into()), &OsRandom), Err(KeyError::Format)));
        let (_, src) = load_or_create(dir.path(), Some("ab".repeat(32)), &OsRandom).unwrap();
        assert_eq!(src, KeySource::Env);
        assert!(!dir.path().join(MASTER_KEY_FILE).exists());
        assert!(!format!("{:?}", Keys::from_master(&[1; 32])).contains('1'));
    }

    /// 64 characters that `u8::from_str_radix` would read pair by pair
    /// ("+a" is 10) are still not a key: only the text Strongroom writes is.
    #[test]
    fn a_master_key_in_any_but_canonical_text_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        for bad in [format!("+a{}", "ab".repeat(31)), format!("{} ", "ab".repeat(31)) + "a", format!("0x{}", "ab".repeat(31))] {
            assert_eq!(bad.len(), 64);
            assert!(matches!(load_or_create(dir.path(), Some(bad.clone()), &OsRandom), Err(KeyError::Format)), "{bad:?}");
        }
        // Surrounding white space (a newline at the end of the file) is fine, and either case.
        assert!(load_or_create(dir.path(), Some(format!(" {}\n", "AB".repeat(32))), &OsRandom).is_ok());
        std::fs::write(dir.path().join(MASTER_KEY_FILE), format!("+a{}\n", "ab".repeat(31))).unwrap();
        std::fs::set_permissions(dir.path().join(MASTER_KEY_FILE), std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        assert!(matches!(load_or_create(dir.path(), None, &OsRandom), Err(KeyError::Format)));
    }
}
