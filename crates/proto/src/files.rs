//! Files only their owner may read: the data directory, the master key, the
//! database, TLS keys, backups, the client's token cache. Created with their
//! mode from the start, whatever the umask, never widened afterwards.

use std::io::Write as _;
use std::path::Path;

/// Creates `dir` and its missing parents with mode 0700. An existing
/// directory is left as it is.
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

/// Creates `path` with `mode` (never more than it, whatever the umask),
/// writes `data` and syncs it; fails if `path` exists.
pub fn write_new(path: &Path, data: &[u8], mode: u32) -> std::io::Result<()> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    write_with(opts, path, data, mode)
}

/// [`write_new`] with mode 0600.
pub fn write_private(path: &Path, data: &[u8]) -> std::io::Result<()> {
    write_new(path, data, 0o600)
}

/// Writes `data` to `path` and syncs it, replacing what it held; a new file
/// gets mode 0600 (an existing one keeps its mode).
pub fn overwrite_private(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    write_with(opts, path, data, 0o600)
}

/// Opens `path` to read and write, creating it empty with mode 0600 if it
/// does not exist (an existing one keeps its mode and contents): a lock file.
pub fn open_private(path: &Path) -> std::io::Result<std::fs::File> {
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        opts.mode(0o600);
    }
    opts.open(path)
}

fn write_with(mut opts: std::fs::OpenOptions, path: &Path, data: &[u8], mode: u32) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        opts.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut f = opts.open(path)?;
    f.write_all(data)?;
    f.sync_all()
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn private_files_and_directories_are_private_from_the_start() {
        let root = std::env::temp_dir().join(format!("strongroom-files-{}", std::process::id()));
        let dir = root.join("a").join("b");
        create_private_dir(&dir).unwrap();
        assert_eq!((mode(&root.join("a")), mode(&dir)), (0o700, 0o700));
        let f = dir.join("key");
        write_private(&f, b"secret").unwrap();
        assert_eq!(mode(&f), 0o600);
        assert_eq!(write_private(&f, b"again").unwrap_err().kind(), std::io::ErrorKind::AlreadyExists);
        overwrite_private(&f, b"new").unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), b"new");
        let lock = dir.join("lock");
        drop(open_private(&lock).unwrap());
        assert_eq!((mode(&lock), std::fs::metadata(&lock).unwrap().len()), (0o600, 0));
        std::fs::write(&lock, b"1").unwrap();
        drop(open_private(&lock).unwrap());
        assert_eq!(std::fs::read(&lock).unwrap(), b"1", "an existing file is kept as it is");
        write_new(&dir.join("cert"), b"public", 0o644).unwrap();
        assert_eq!(mode(&dir.join("cert")), 0o644);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
