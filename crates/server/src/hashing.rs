//! Password checks on a few dedicated threads.
//!
//! An argon2id check allocates 19 MiB. Run on tokio's blocking pool, every
//! check may land on a different thread and so in a different malloc arena,
//! and the process kept growing by megabytes per login (measured: 10 MiB to
//! 577 MiB resident over 40 sequential logins). A fixed set of threads reuses
//! its own arenas, which bounds the memory, and the queue in front of them
//! bounds the CPU spent on hashing.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

use strongroom_core::password;
use strongroom_core::secret::Secret;

type Job = Box<dyn FnOnce() + Send>;

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
                loop {
                    let job = match rx.lock() {
                        Ok(guard) => guard.recv(),
                        Err(_) => return,
                    };
                    match job {
                        Ok(job) => job(),
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
        let job: Job = Box::new(move || {
            let _ = reply.send(password::verify(&password, &phc));
        });
        // A full queue waits (without blocking the async threads) until a
        // place frees up.
        let sender = self.jobs.clone();
        tokio::task::spawn_blocking(move || sender.send(job)).await.map_err(|_| HashPoolGone)?.map_err(|_| HashPoolGone)?;
        rx.await.map_err(|_| HashPoolGone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn checks_run_on_the_pool() {
        let pool = HashPool::new(2, 4);
        let phc = password::hash(&Secret::new("pw-123456"), &crate::state::OsRandom).unwrap();
        let (a, b) = tokio::join!(pool.verify(Secret::new("pw-123456"), phc.clone()), pool.verify(Secret::new("nope"), phc));
        assert!(a.unwrap());
        assert!(!b.unwrap());
    }
}
