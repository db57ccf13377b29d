//! Private keys the server makes for a certificate request, within bounds.
//!
//! An RSA key costs a core for 0.1 s (2048 bits) to several seconds (4096), and the request
//! that asks for one is cheap to send: unbounded, one user's burst of RSA-4096 requests held
//! every core for minutes, the requests timed out, and the keys went on being made for nobody.
//! So RSA keys are made by a [`KeyGenerator`]:
//!
//! - at most `concurrency` at once, on the blocking pool, the others waiting for a turn; a turn
//!   goes to the waiting identity served longest ago, so one caller's queue never stands in
//!   front of another's;
//! - at most `per_identity` in progress (waiting or being made) for one identity, and at most
//!   `waiting` waiting in all: past either the request is refused at once ([`KeyGenError::Busy`],
//!   429 with `Retry-After`), before any work;
//! - a request that is gone (its client left, or the server's request timeout ended it) while
//!   it waits leaves the queue and nothing is made for it; one gone once its key is being made
//!   costs that one key, which still holds its place in the bounds until it is done.
//!
//! An identity can so hold at most `per_identity` of the places, and another identity's request
//! waits for at most the keys being made and one turn of each other identity waiting. EC keys
//! (P-256 and P-384 in microseconds, P-521 in about a millisecond) cost what a signature costs
//! and are made at once.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;

use strongroom_core::cert::KeySpec;
use strongroom_core::random::Random;

use crate::observer::{KeyGenOutcome, Observer};
use crate::pki::{self, PkiError, PrivateKey};

/// The bounds of a [`KeyGenerator`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyGenLimits {
    /// Keys made at once.
    pub concurrency: usize,
    /// Keys in progress (waiting or being made) for one identity.
    pub per_identity: usize,
    /// Keys waiting for their turn, for every identity together.
    pub waiting: usize,
}

impl KeyGenLimits {
    /// The defaults: half the cores make keys (at least one), 2 in progress per identity, 32 waiting.
    pub fn for_this_machine() -> KeyGenLimits {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        KeyGenLimits { concurrency: (cores / 2).max(1), per_identity: 2, waiting: 32 }
    }
}

/// Why no key was made.
#[derive(Debug, thiserror::Error)]
pub enum KeyGenError {
    /// Past a bound: nothing was done; try again in `retry_after_secs` (an estimate).
    #[error("{message}")]
    Busy { message: String, retry_after_secs: u64 },
    #[error(transparent)]
    Pki(#[from] PkiError),
}

/// Makes the keys of central certificate requests ([module docs](self)); cheap to clone.
#[derive(Clone, Debug)]
pub struct KeyGenerator(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    limits: KeyGenLimits,
    turns: Arc<Turns>,
    places: Mutex<Places>,
    observer: Arc<dyn Observer>,
}

/// The keys in progress: in all, and by identity.
#[derive(Debug, Default)]
struct Places {
    total: usize,
    by_identity: HashMap<String, usize>,
}

/// One key's place in the bounds, given back when dropped: by the request that waits (gone
/// before its turn: [`KeyGenOutcome::Abandoned`]) or by the work that made the key.
struct Place {
    inner: Arc<Inner>,
    identity: String,
    started: bool,
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut places = self.inner.places.lock().unwrap_or_else(PoisonError::into_inner);
        places.total = places.total.saturating_sub(1);
        if let Some(n) = places.by_identity.get_mut(&self.identity) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                places.by_identity.remove(&self.identity);
            }
        }
        drop(places);
        if !self.started {
            self.inner.observer.key_generation(KeyGenOutcome::Abandoned);
        }
    }
}

impl KeyGenerator {
    pub fn new(limits: KeyGenLimits, observer: Arc<dyn Observer>) -> KeyGenerator {
        let limits =
            KeyGenLimits { concurrency: limits.concurrency.max(1), per_identity: limits.per_identity.max(1), waiting: limits.waiting };
        KeyGenerator(Arc::new(Inner { limits, turns: Turns::new(limits.concurrency), places: Mutex::default(), observer }))
    }

    pub fn limits(&self) -> KeyGenLimits {
        self.0.limits
    }

    /// A new private key of `spec` for `identity`'s request (see the [module docs](self)).
    pub async fn generate(&self, identity: &str, spec: KeySpec, rng: Arc<dyn Random>) -> Result<PrivateKey, KeyGenError> {
        if !matches!(spec, KeySpec::Rsa(_)) {
            return unbounded(spec, rng).await;
        }
        let mut place = self.take_place(identity)?;
        // Waits its turn; dropped here (the request gone), the place is given back.
        let permit = self.0.turns.clone().take(identity).await.ok_or_else(gone)?;
        let (reply, answer) = oneshot::channel();
        let observer = self.0.observer.clone();
        tokio::task::spawn_blocking(move || {
            if reply.is_closed() {
                // Gone between its turn and a blocking thread: nothing to make.
                drop((place, permit));
                return;
            }
            place.started = true;
            let key = pki::generate_key(spec, &*rng);
            let outcome = if reply.send(key).is_ok() { KeyGenOutcome::Generated } else { KeyGenOutcome::Orphaned };
            // Counted before the place is given back: with none in progress, every outcome is counted.
            observer.key_generation(outcome);
            drop((place, permit));
        });
        Ok(answer.await.map_err(|_| gone())??)
    }

    /// A place for one more key of `identity`'s, or the refusal past a bound.
    fn take_place(&self, identity: &str) -> Result<Place, KeyGenError> {
        let limits = self.0.limits;
        let mut places = self.0.places.lock().unwrap_or_else(PoisonError::into_inner);
        let mine = places.by_identity.get(identity).copied().unwrap_or(0);
        // An estimate: a second per key ahead of this one, per key made at once.
        let retry_after_secs = (places.total / limits.concurrency + 1).min(60) as u64;
        let refusal = if mine >= limits.per_identity {
            Some((
                KeyGenOutcome::RefusedIdentity,
                format!(
                    "At most {} keys are made at once for one caller, and {mine} of yours are in progress: try again in \
                     {retry_after_secs} s, or send a CSR. Nothing was requested.",
                    limits.per_identity
                ),
            ))
        } else if places.total >= limits.concurrency + limits.waiting {
            Some((
                KeyGenOutcome::RefusedBusy,
                format!(
                    "The server is making as many keys as it may ({} at once, {} waiting): try again in {retry_after_secs} s, or \
                     send a CSR. Nothing was requested.",
                    limits.concurrency, limits.waiting
                ),
            ))
        } else {
            None
        };
        if let Some((outcome, message)) = refusal {
            drop(places);
            self.0.observer.key_generation(outcome);
            return Err(KeyGenError::Busy { message, retry_after_secs });
        }
        places.total += 1;
        *places.by_identity.entry(identity.to_owned()).or_default() += 1;
        Ok(Place { inner: self.0.clone(), identity: identity.to_owned(), started: false })
    }

    /// Keys in progress now (waiting or being made), for every identity together.
    pub fn in_progress(&self) -> usize {
        self.0.places.lock().unwrap_or_else(PoisonError::into_inner).total
    }
}

/// Turns to make a key: at most `concurrency` taken at once. A turn that ends goes to the waiting
/// identity served longest ago (one never served first; then the one that asked first), and to
/// its oldest waiter: a caller who floods gets its next turn only after everyone else waiting
/// has had one. A waiter that is gone is skipped.
#[derive(Debug)]
struct Turns {
    concurrency: usize,
    queue: Mutex<Queue>,
}

#[derive(Debug, Default)]
struct Queue {
    taken: usize,
    /// Counts the turns handed out and the waiters queued: when each happened.
    clock: u64,
    /// Each identity's waiters, oldest first, with when they asked.
    waiters: HashMap<String, VecDeque<(u64, oneshot::Sender<Turn>)>>,
    /// The turns each identity holds now.
    held: HashMap<String, usize>,
    /// When each identity that waits or holds a turn was last handed one.
    served: HashMap<String, u64>,
}

impl Queue {
    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// The turn goes to `identity`.
    fn hand(&mut self, identity: &str) {
        *self.held.entry(identity.to_owned()).or_default() += 1;
        let at = self.tick();
        self.served.insert(identity.to_owned(), at);
    }

    /// The waiting identity whose turn is next: served longest ago (never: first), then asked first.
    fn next(&self) -> Option<String> {
        let key = |(who, q): (&String, &VecDeque<(u64, oneshot::Sender<Turn>)>)| {
            (self.served.get(who).copied().unwrap_or(0), q.front().map_or(u64::MAX, |(at, _)| *at))
        };
        self.waiters.iter().min_by_key(|e| key(*e)).map(|(who, _)| who.clone())
    }

    /// Forgets `identity` once it neither waits nor holds a turn.
    fn tidy(&mut self, identity: &str) {
        if self.waiters.get(identity).is_some_and(VecDeque::is_empty) {
            self.waiters.remove(identity);
        }
        if self.held.get(identity) == Some(&0) {
            self.held.remove(identity);
        }
        if !self.waiters.contains_key(identity) && !self.held.contains_key(identity) {
            self.served.remove(identity);
        }
    }
}

/// A turn being used by `identity`; given on to the next waiter when dropped.
#[derive(Debug)]
struct Turn {
    turns: Option<Arc<Turns>>,
    identity: String,
}

impl Drop for Turn {
    fn drop(&mut self) {
        if let Some(t) = self.turns.take() {
            t.give_on(&self.identity);
        }
    }
}

impl Turns {
    fn new(concurrency: usize) -> Arc<Turns> {
        Arc::new(Turns { concurrency, queue: Mutex::default() })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A turn for `identity`: at once if one is free and nobody waits, else when its turn comes.
    /// `None`: the generator is gone.
    async fn take(self: Arc<Self>, identity: &str) -> Option<Turn> {
        let waiting = {
            let mut q = self.lock();
            if q.taken < self.concurrency && q.waiters.is_empty() {
                q.taken += 1;
                q.hand(identity);
                None
            } else {
                let (tx, rx) = oneshot::channel();
                let at = q.tick();
                q.waiters.entry(identity.to_owned()).or_default().push_back((at, tx));
                Some(rx)
            }
        };
        match waiting {
            None => Some(Turn { turns: Some(self), identity: identity.to_owned() }),
            Some(rx) => rx.await.ok(),
        }
    }

    /// `ended`'s turn ends: it goes to the next waiter (skipping those gone), or is free.
    fn give_on(self: &Arc<Self>, ended: &str) {
        let mut q = self.lock();
        if let Some(n) = q.held.get_mut(ended) {
            *n = n.saturating_sub(1);
        }
        q.tidy(ended);
        while let Some(who) = q.next() {
            let next = q.waiters.get_mut(&who).and_then(VecDeque::pop_front);
            q.tidy(&who);
            let Some((_, tx)) = next else { continue };
            match tx.send(Turn { turns: Some(self.clone()), identity: who.clone() }) {
                Ok(()) => {
                    q.hand(&who);
                    return;
                }
                // Gone while it waited: this turn is not used up; it goes on to the next one.
                Err(mut unused) => unused.turns = None,
            }
        }
        q.taken = q.taken.saturating_sub(1);
    }
}

fn gone() -> KeyGenError {
    KeyGenError::Pki(PkiError::Internal("the key generation's thread is gone".into()))
}

/// A key made without bounds, off the async threads: an EC key, or an operator's own act (the
/// CLI on the store, the console's approvals), one at a time by their nature.
pub async fn unbounded(spec: KeySpec, rng: Arc<dyn Random>) -> Result<PrivateKey, KeyGenError> {
    Ok(tokio::task::spawn_blocking(move || pki::generate_key(spec, &*rng)).await.map_err(|_| gone())??)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[derive(Debug, Default)]
    struct Counts([AtomicUsize; 5]);

    impl Observer for Counts {
        fn key_generation(&self, outcome: KeyGenOutcome) {
            self.0[outcome as usize].fetch_add(1, Ordering::SeqCst);
        }
    }

    impl Counts {
        fn of(&self, outcome: KeyGenOutcome) -> usize {
            self.0[outcome as usize].load(Ordering::SeqCst)
        }
    }

    impl KeyGenerator {
        fn in_progress_of(&self, identity: &str) -> usize {
            self.0.places.lock().unwrap().by_identity.get(identity).copied().unwrap_or(0)
        }
    }

    fn generator(limits: KeyGenLimits) -> (KeyGenerator, Arc<Counts>) {
        let counts = Arc::new(Counts::default());
        (KeyGenerator::new(limits, counts.clone()), counts)
    }

    #[tokio::test]
    async fn places_are_bounded_per_identity_and_in_all_and_given_back() {
        let (g, counts) = generator(KeyGenLimits { concurrency: 1, per_identity: 2, waiting: 2 });
        let a1 = g.take_place("alice").unwrap();
        let a2 = g.take_place("alice").unwrap();
        let e = g.take_place("alice").err().unwrap();
        assert!(matches!(&e, KeyGenError::Busy { message, .. } if message.contains("At most 2 keys")), "{e}");
        let b1 = g.take_place("bob").unwrap();
        // 1 at once + 2 waiting = 3 places in all.
        let e = g.take_place("carol").err().unwrap();
        assert!(matches!(&e, KeyGenError::Busy { message, retry_after_secs: 4 } if message.contains("1 at once, 2 waiting")), "{e}");
        assert_eq!((counts.of(KeyGenOutcome::RefusedIdentity), counts.of(KeyGenOutcome::RefusedBusy)), (1, 1));
        drop(a1);
        assert_eq!((g.in_progress(), g.in_progress_of("alice")), (2, 1));
        assert_eq!(counts.of(KeyGenOutcome::Abandoned), 1, "a place given back before its key was started");
        let _c1 = g.take_place("carol").unwrap();
        drop((a2, b1));
        assert_eq!((g.in_progress(), g.in_progress_of("alice")), (1, 0));
        assert!(!g.0.places.lock().unwrap().by_identity.contains_key("alice"), "no identity is kept at 0");
    }

    #[tokio::test]
    async fn ec_keys_are_made_at_once_and_rsa_keys_in_turn() {
        let (g, counts) = generator(KeyGenLimits { concurrency: 1, per_identity: 1, waiting: 0 });
        // The one place is taken: an RSA key is refused, an EC key is made.
        let held = g.take_place("alice").unwrap();
        let rng: Arc<dyn Random> = Arc::new(crate::OsRandom);
        let e = g.generate("alice", KeySpec::Rsa(2048), rng.clone()).await.err().unwrap();
        assert!(matches!(e, KeyGenError::Busy { .. }), "{e}");
        let ec = g.generate("alice", KeySpec::Ec(strongroom_core::cert::Curve::P256), rng.clone()).await.unwrap();
        assert!(!ec.0.is_empty());
        drop(held);
        let rsa = g.generate("alice", KeySpec::Rsa(2048), rng).await.unwrap();
        assert!(rsa.0.len() > 1000);
        // The key is handed over, then counted, then its place given back.
        while g.in_progress() > 0 {
            tokio::task::yield_now().await;
        }
        assert_eq!(counts.of(KeyGenOutcome::Generated), 1);
        assert_eq!((g.in_progress(), g.in_progress_of("alice")), (0, 0));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_request_gone_while_it_waits_makes_no_key() {
        let (g, counts) = generator(KeyGenLimits { concurrency: 1, per_identity: 8, waiting: 8 });
        let rng: Arc<dyn Random> = Arc::new(crate::OsRandom);
        // The one turn is held, so every request waits; each is dropped while it waits.
        let turn = g.0.turns.clone().take("someone").await.unwrap();
        let mut waiting = Vec::new();
        for _ in 0..4 {
            let (g, rng) = (g.clone(), rng.clone());
            waiting.push(tokio::spawn(async move { g.generate("alice", KeySpec::Rsa(4096), rng).await }));
        }
        while g.in_progress_of("alice") < 4 {
            tokio::task::yield_now().await;
        }
        for w in &waiting {
            w.abort();
        }
        for w in waiting {
            assert!(w.await.unwrap_err().is_cancelled());
        }
        drop(turn);
        assert_eq!((g.in_progress(), g.in_progress_of("alice")), (0, 0));
        assert_eq!(counts.of(KeyGenOutcome::Abandoned), 4);
        assert_eq!(counts.of(KeyGenOutcome::Generated) + counts.of(KeyGenOutcome::Orphaned), 0, "no key was made");
        assert_eq!(g.0.turns.lock().taken, 0, "the turn is free again");
    }

    #[tokio::test]
    async fn a_turn_goes_to_the_identity_served_longest_ago_and_skips_the_gone() {
        let turns = Turns::new(1);
        let first = turns.clone().take("alice").await.unwrap();
        // Alice asks three more times, then bob, then carol, who gives up, then dave.
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut waiting = Vec::new();
        for who in ["alice", "alice", "alice", "bob", "carol", "dave"] {
            let (mine, order) = (turns.clone(), order.clone());
            waiting.push(tokio::spawn(async move {
                let t = mine.take(who).await.unwrap();
                order.lock().unwrap().push(who);
                tokio::task::yield_now().await;
                drop(t);
            }));
            while turns.lock().waiters.values().map(VecDeque::len).sum::<usize>() < waiting.len() {
                tokio::task::yield_now().await;
            }
        }
        waiting.remove(4).abort();
        drop(first);
        for w in waiting {
            w.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), ["bob", "dave", "alice", "alice", "alice"], "those never served first, in the order they asked");
        let q = turns.lock();
        assert_eq!((q.taken, q.waiters.len(), q.held.len(), q.served.len()), (0, 0, 0, 0), "nothing held, nobody left, nobody kept");
    }
}
