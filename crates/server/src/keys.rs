//! The server's master key and the keys derived from it.
//!
//! The master key is 32 random bytes, kept hex-encoded in
//! `<data_dir>/master.key` (created 0600 on first start) or given in
//! `STRONGROOM_MASTER_KEY`. Replicas sharing a PostgreSQL database must share
//! it. Each use gets its own key, derived with HMAC-SHA256 and a label.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use std::fmt;
use std::io::Write as _;
use std::path::Path;
use zeroize::Zeroizing;

use strongroom_core::random::{Random, bytes};
use strongroom_core::token::TokenKey;

pub const MASTER_KEY_FILE: &str = "master.key";
pub const MASTER_KEY_ENV: &str = "STRONGROOM_MASTER_KEY";

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("{0}")]
    Io(String),
    #[error("the master key must be 64 hexadecimal characters")]
    Format,
    #[error("{path} is open to group or other users (mode {mode:o}); refusing to start: run `chmod 600 {path}`")]
    TooOpen { path: String, mode: u32 },
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
}

impl fmt::Debug for Keys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Keys(<redacted>)")
    }
}

fn derive(master: &[u8; 32], label: &str) -> [u8; 32] {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(master).unwrap_or_else(|_| unreachable_hmac());
    mac.update(label.as_bytes());
    mac.finalize().into_bytes().into()
}

#[allow(clippy::panic)]
fn unreachable_hmac() -> Hmac<Sha256> {
    panic!("HMAC-SHA256 accepts keys of every length")
}

impl Keys {
    pub fn from_master(master: &[u8; 32]) -> Keys {
        Keys {
            token: TokenKey::new(derive(master, "strongroom/token-hash/v1")),
            page: derive(master, "strongroom/page/v1"),
            vault_kek: derive(master, "strongroom/vault-kek/v1"),
            vault_lookup: derive(master, "strongroom/vault-lookup/v1"),
        }
    }
}

fn parse_hex(s: &str) -> Result<Zeroizing<[u8; 32]>, KeyError> {
    let s = s.trim();
    if s.len() != 64 {
        return Err(KeyError::Format);
    }
    let mut out = Zeroizing::new([0u8; 32]);
    for (i, chunk) in s.as_bytes().chunks(2).enumerate() {
        let hex = std::str::from_utf8(chunk).map_err(|_| KeyError::Format)?;
        out[i] = u8::from_str_radix(hex, 16).map_err(|_| KeyError::Format)?;
    }
    Ok(out)
}

/// Where the master key came from, for the start-up log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    Env,
    File(String),
    Created(String),
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
            let hex: Zeroizing<String> = Zeroizing::new(master.iter().map(|b| format!("{b:02x}")).collect());
            write_private(&path, hex.as_bytes()).map_err(|e| KeyError::Io(format!("writing {shown}: {e}")))?;
            Ok((Keys::from_master(&master), KeySource::Created(shown)))
        }
        Err(e) => Err(KeyError::Io(format!("reading {shown}: {e}"))),
    }
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

/// Creates `dir` and its missing parents with mode 0700 (the data
/// directory). An existing directory is left as it is.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        b.mode(0o700);
    }
    b.create(dir)
}

/// Creates `path` with mode 0600 and writes `data`; fails if it exists.
pub fn write_private(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        opts.mode(0o600);
    }
    let mut f = opts.open(path)?;
    f.write_all(data)?;
    f.sync_all()
}

fn check_private(path: &Path) -> Result<(), KeyError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(path).map_err(|e| KeyError::Io(e.to_string()))?.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(KeyError::TooOpen { path: path.display().to_string(), mode });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::OsRandom;

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

    #[test]
    fn env_keys_must_be_hex() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(load_or_create(dir.path(), Some("xyz".into()), &OsRandom), Err(KeyError::Format)));
        let (_, src) = load_or_create(dir.path(), Some("ab".repeat(32)), &OsRandom).unwrap();
        assert_eq!(src, KeySource::Env);
        assert!(!dir.path().join(MASTER_KEY_FILE).exists());
        assert!(!format!("{:?}", Keys::from_master(&[1; 32])).contains('1'));
    }
}
