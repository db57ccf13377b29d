//! The token cache: one file per server and client id under the user's
//! config directory, mode 0600, written atomically (a new file, then a
//! rename), holding only what is needed to use and refresh the grant.
//! A sibling `.lock` file serialises refreshes across processes.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use strongroom_proto::files::create_private_dir;

use crate::error::{ClientError, ClientResult};
use crate::tokens::Tokens;

/// The cache format this build writes and reads.
pub const CACHE_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CachedTokens {
    pub version: u32,
    pub server: String,
    pub client_id: String,
    #[serde(flatten)]
    pub tokens: Tokens,
}

#[derive(Debug, Clone)]
pub struct TokenCache {
    path: PathBuf,
    server: String,
    client_id: String,
}

/// The user's config directory for Strongroom: `$STRONGROOM_CONFIG_DIR`,
/// else `$XDG_CONFIG_HOME/strongroom`, else `~/.config/strongroom`.
pub fn config_dir() -> ClientResult<PathBuf> {
    if let Some(d) = std::env::var_os("STRONGROOM_CONFIG_DIR") {
        return Ok(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d).join("strongroom"));
    }
    let home = std::env::var_os("HOME").ok_or_else(|| ClientError::Config("HOME is not set; set STRONGROOM_CONFIG_DIR".into()))?;
    Ok(PathBuf::from(home).join(".config").join("strongroom"))
}

impl TokenCache {
    /// The cache of `client_id` on `server`, under `dir`.
    pub fn new(dir: &Path, server: &str, client_id: &str) -> TokenCache {
        let digest = Sha256::digest(format!("{server}\0{client_id}").as_bytes());
        let name = strongroom_proto::hex::encode(&digest[..12]);
        TokenCache { path: dir.join("tokens").join(format!("{name}.json")), server: server.to_owned(), client_id: client_id.to_owned() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn problem(&self, p: impl Into<String>) -> ClientError {
        ClientError::Cache { path: self.path.display().to_string(), problem: p.into() }
    }

    /// The cached tokens, `None` if there is no cache. A cache that is
    /// readable by others, corrupt, for another server, or from a newer
    /// version is refused with the reason.
    pub fn load(&self) -> ClientResult<Option<Tokens>> {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.problem(e.to_string())),
        };
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&self.path).map_err(|e| self.problem(e.to_string()))?.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                return Err(self.problem(format!("is readable by other users (mode {mode:o}); run chmod 600 on it, or log in again")));
            }
        }
        #[derive(Deserialize)]
        struct Version {
            version: u32,
        }
        let v: Version = serde_json::from_slice(&bytes).map_err(|_| self.problem("is corrupt; log in again"))?;
        if v.version > CACHE_VERSION {
            return Err(self.problem(format!("was written by a newer strongroom (format {}); upgrade", v.version)));
        }
        let c: CachedTokens = serde_json::from_slice(&bytes).map_err(|_| self.problem("is corrupt; log in again"))?;
        if c.server != self.server || c.client_id != self.client_id {
            return Err(self.problem("belongs to another server or client id"));
        }
        Ok(Some(c.tokens))
    }

    /// Replaces the cache atomically with `tokens`.
    pub fn store(&self, tokens: &Tokens) -> ClientResult<()> {
        let dir = self.path.parent().ok_or_else(|| self.problem("has no directory"))?;
        create_private_dir(dir).map_err(|e| self.problem(format!("creating {}: {e}", dir.display())))?;
        let c =
            CachedTokens { version: CACHE_VERSION, server: self.server.clone(), client_id: self.client_id.clone(), tokens: tokens.clone() };
        let bytes = serde_json::to_vec_pretty(&c).map_err(|e| self.problem(e.to_string()))?;
        let tmp = self.path.with_extension(format!("tmp{}", std::process::id()));
        let written = write_private(&tmp, &bytes).and_then(|()| std::fs::rename(&tmp, &self.path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(self.problem(e.to_string()));
        }
        Ok(())
    }

    pub fn delete(&self) -> ClientResult<()> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(self.problem(e.to_string())),
        }
    }

    /// Takes the cross-process refresh lock; released when the file drops.
    pub async fn lock(&self) -> ClientResult<std::fs::File> {
        let dir = self.path.parent().ok_or_else(|| self.problem("has no directory"))?.to_owned();
        let lock_path = self.path.with_extension("lock");
        let shown = lock_path.display().to_string();
        tokio::task::spawn_blocking(move || {
            create_private_dir(&dir)?;
            let f = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&lock_path)?;
            f.lock()?;
            Ok::<_, std::io::Error>(f)
        })
        .await
        .map_err(|e| ClientError::Cache { path: shown.clone(), problem: e.to_string() })?
        .map_err(|e| ClientError::Cache { path: shown, problem: e.to_string() })
    }
}

/// Writes a file readable by its owner only, replacing what it held, and syncs it.
pub use strongroom_proto::files::overwrite_private as write_private;

#[cfg(test)]
mod tests {
    use super::*;
    use strongroom_proto::SecretString;

    fn tokens() -> Tokens {
        Tokens {
            access_token: SecretString("AT==".into()),
            refresh_token: Some(SecretString("RT==".into())),
            expires: 100,
            refresh_until: 1000,
            scope: "restricted".into(),
            identity: "local:{x}".into(),
            obtained_at: 10,
        }
    }

    #[test]
    fn round_trips_privately_and_refuses_bad_files() {
        let dir = tempfile::tempdir().unwrap();
        let cache = TokenCache::new(dir.path(), "https://a", "app");
        assert_eq!(cache.load().unwrap(), None);
        cache.store(&tokens()).unwrap();
        assert_eq!(cache.load().unwrap(), Some(tokens()));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            assert_eq!(std::fs::metadata(cache.path()).unwrap().permissions().mode() & 0o777, 0o600);
            std::fs::set_permissions(cache.path(), std::fs::Permissions::from_mode(0o644)).unwrap();
            let e = cache.load().unwrap_err().to_string();
            assert!(e.contains("readable by other users"), "{e}");
            std::fs::set_permissions(cache.path(), std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        std::fs::write(cache.path(), b"{not json").unwrap();
        assert!(cache.load().unwrap_err().to_string().contains("corrupt"));
        std::fs::write(cache.path(), br#"{"version": 9}"#).unwrap();
        assert!(cache.load().unwrap_err().to_string().contains("newer"));
        cache.store(&tokens()).unwrap();
        let other = TokenCache::new(dir.path(), "https://a", "other-app");
        assert_ne!(other.path(), cache.path());
        cache.delete().unwrap();
        assert_eq!(cache.load().unwrap(), None);
        cache.delete().unwrap();
    }
}
