//! Password checks on a few dedicated threads, each with one reusable
//! argon2 memory buffer.
//!
//! An argon2id check needs 19 MiB of working memory. Run on tokio's blocking
//! pool, every check may land on a different thread and so in a different
//! malloc arena, and the process kept growing by megabytes per login
//! (measured: 10 MiB to 577 MiB resident over 40 sequential logins). With a
//! fixed set of threads the growth was bounded but still large: each check
//! allocated and freed its 19 MiB, glibc's dynamic mmap threshold then kept
//! such blocks on the heap, and the server sat at 190-230 MiB after a few
//! dozen logins.
//!
//! So each hashing thread owns one block buffer, allocated on its first
//! check and sized for the parameters Strongroom hashes with
//! ([`password::MEMORY_KIB`] and friends), and computes argon2id into it
//! ([`Argon2::hash_password_into_with_memory`]). A stored hash with other
//! parameters (more memory, another variant) still verifies, through the
//! ordinary allocating path. The queue in front of the threads bounds the CPU
//! spent on hashing.

use argon2::password_hash::PasswordHash;
use argon2::{Algorithm, Argon2, Block, Params, Version};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use subtle::ConstantTimeEq as _;
use tokio::sync::oneshot;

use strongroom_core::password;
use strongroom_core::secret::Secret;

type Job = Box<dyn FnOnce(&mut Verifier) + Send>;

/// A handle on the hashing threads; cheap to clone.
#[derive(Clone, Debug)]
pub struct HashPool {
    jobs: mpsc::SyncSender<Job>,
}

#[derive(Debug, thiserror::Error)]
#[error("the password hashing threads are gone")]
pub struct HashPoolGone;

impl HashPool {
    /// Starts `threads` hashing threads with a queue of `queue` waiting checks.
    /// If no thread can be started, checks fail (they never hang).
    pub fn new(threads: usize, queue: usize) -> HashPool {
        let (tx, rx) = mpsc::sync_channel::<Job>(queue);
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..threads.max(1) {
            let rx = rx.clone();
            let started = std::thread::Builder::new().name(format!("password-{i}")).spawn(move || {
                let mut verifier = Verifier::new();
                loop {
                    let job = match rx.lock() {
                        Ok(guard) => guard.recv(),
                        Err(_) => return,
                    };
                    match job {
                        Ok(job) => job(&mut verifier),
                        Err(_) => return,
                    }
                }
            });
            if let Err(e) = started {
                tracing::error!(error = %e, "cannot start a password thread");
            }
        }
        HashPool { jobs: tx }
    }

    /// Checks `password` against a PHC string on a hashing thread.
    pub async fn verify(&self, password: Secret, phc: String) -> Result<bool, HashPoolGone> {
        let (reply, rx) = oneshot::channel();
        let job: Job = Box::new(move |verifier| {
            let _ = reply.send(verifier.verify(&password, &phc).0);
        });
        // A full queue waits (without blocking the async threads) until a
        // place frees up.
        let sender = self.jobs.clone();
        tokio::task::spawn_blocking(move || sender.send(job)).await.map_err(|_| HashPoolGone)?.map_err(|_| HashPoolGone)?;
        rx.await.map_err(|_| HashPoolGone)
    }
}

/// Which way a check went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Path {
    /// argon2id computed in the thread's own buffer.
    Buffer,
    /// Anything else (other variant, more memory, unparsable): the
    /// allocating [`password::verify`].
    Fallback,
}

/// One hashing thread's state: the reusable argon2 memory.
pub(crate) struct Verifier {
    blocks: Vec<Block>,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier").field("blocks", &self.blocks.len()).finish()
    }
}

/// Blocks needed by the parameters Strongroom hashes with.
fn own_block_count() -> usize {
    Params::new(password::MEMORY_KIB, password::ITERATIONS, password::PARALLELISM, None)
        .map_or(password::MEMORY_KIB as usize, |p| p.block_count())
}

impl Verifier {
    /// The buffer is allocated on the first check, so an idle server stays small.
    pub(crate) fn new() -> Verifier {
        Verifier { blocks: Vec::new() }
    }

    /// Checks a password against a PHC string, and says which path it took.
    pub(crate) fn verify(&mut self, pw: &Secret, phc: &str) -> (bool, Path) {
        if pw.expose().len() > password::MAX_PASSWORD_LEN {
            return (false, Path::Fallback);
        }
        match self.verify_in_buffer(pw, phc) {
            Some(ok) => (ok, Path::Buffer),
            None => (password::verify(pw, phc), Path::Fallback),
        }
    }

    /// `None` when the hash is not one the buffer serves.
    fn verify_in_buffer(&mut self, pw: &Secret, phc: &str) -> Option<bool> {
        let parsed = PasswordHash::new(phc).ok()?;
        if Algorithm::try_from(parsed.algorithm).ok()? != Algorithm::Argon2id {
            return None;
        }
        let version = match parsed.version {
            Some(v) => Version::try_from(v).ok()?,
            None => Version::default(),
        };
        let params = Params::try_from(&parsed).ok()?;
        let expected = parsed.hash?;
        let mut salt = [0u8; 64];
        let salt = parsed.salt?.decode_b64(&mut salt).ok()?;
        let needed = params.block_count();
        if needed > own_block_count() {
            return None;
        }
        if self.blocks.len() < needed {
            self.blocks = vec![Block::default(); own_block_count()];
        }
        let mut out = [0u8; 64];
        let out = out.get_mut(..expected.len())?;
        let computed = Argon2::new(Algorithm::Argon2id, version, params).hash_password_into_with_memory(
            pw.expose().as_bytes(),
            salt,
            out,
            &mut self.blocks[..needed],
        );
        // The blocks hold values derived from the password: clear them
        // (a memset, a few per cent of the hash's own time).
        self.blocks[..needed].fill(Block::default());
        match computed {
            Ok(()) => Some(bool::from(out.ct_eq(expected.as_bytes()))),
            // Inputs argon2 refuses (a salt too short, say) verify nothing,
            // as on the allocating path.
            Err(_) => Some(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn checks_run_on_the_pool() {
        let pool = HashPool::new(2, 4);
        let phc = password::hash(&Secret::new("pw-123456"), &crate::OsRandom).unwrap();
        let (a, b) = tokio::join!(pool.verify(Secret::new("pw-123456"), phc.clone()), pool.verify(Secret::new("nope"), phc));
        assert!(a.unwrap());
        assert!(!b.unwrap());
    }

    #[test]
    fn own_hashes_verify_in_the_buffer() {
        let mut v = Verifier::new();
        let phc = password::hash(&Secret::new("correct horse"), &crate::OsRandom).unwrap();
        assert_eq!(v.verify(&Secret::new("correct horse"), &phc), (true, Path::Buffer));
        assert_eq!(v.verify(&Secret::new("correct horsE"), &phc), (false, Path::Buffer));
        assert_eq!(v.verify(&Secret::new("correct horse"), &phc), (true, Path::Buffer), "the reused buffer still works");
        assert_eq!(v.blocks.len(), 19 * 1024);
        // The hash checked for unknown users takes the same path (and time).
        assert_eq!(v.verify(&Secret::new("x"), password::dummy_hash()), (false, Path::Buffer));
    }

    fn phc_with(alg: Algorithm, m: u32, t: u32, p: u32, pw: &str) -> String {
        use argon2::password_hash::{PasswordHasher as _, SaltString};
        let params = Params::new(m, t, p, None).unwrap();
        let salt = SaltString::encode_b64(b"0123456789abcdef").unwrap();
        Argon2::new(alg, Version::V0x13, params).hash_password(pw.as_bytes(), &salt).unwrap().to_string()
    }

    #[test]
    fn other_parameters_still_verify() {
        let mut v = Verifier::new();
        // Smaller: fits the buffer.
        let small = phc_with(Algorithm::Argon2id, 4096, 3, 2, "pw");
        assert_eq!(v.verify(&Secret::new("pw"), &small), (true, Path::Buffer));
        assert_eq!(v.verify(&Secret::new("pW"), &small), (false, Path::Buffer));
        // Larger than the buffer: the allocating path.
        let large = phc_with(Algorithm::Argon2id, 32 * 1024, 1, 1, "pw");
        assert_eq!(v.verify(&Secret::new("pw"), &large), (true, Path::Fallback));
        assert_eq!(v.verify(&Secret::new("pW"), &large), (false, Path::Fallback));
        // Another variant: the allocating path.
        let argon2i = phc_with(Algorithm::Argon2i, 1024, 2, 1, "pw");
        assert_eq!(v.verify(&Secret::new("pw"), &argon2i), (true, Path::Fallback));
        assert_eq!(v.verify(&Secret::new("pW"), &argon2i), (false, Path::Fallback));
        // Garbage verifies nothing.
        assert_eq!(v.verify(&Secret::new("pw"), "not a phc string"), (false, Path::Fallback));
        assert!(!v.verify(&Secret::new("x".repeat(password::MAX_PASSWORD_LEN + 1)), &small).0);
    }
}
