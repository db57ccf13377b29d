//! Strongroom's keys: the master key and the keys derived from it ([`keys`]),
//! and the vault's key ring: named keys (`Driver:Name`) that wrap data keys,
//! one current data key per named key for new writes, old data keys kept for
//! reading until everything has been re-sealed under the current one.
//!
//! Drivers: `Software` has one key, `Software:Default`, derived from the
//! master key; `PKCS11` keys live in a token ([`pkcs11`]) and never leave
//! it. A driver only wraps and unwraps 32-byte data keys, with associated
//! data binding the data key's id and its named key. Driver calls may block
//! (an HSM), so they run on tokio's blocking pool. Data keys the master key
//! wraps are cached in memory once unwrapped; data keys a `PKCS11` key wraps
//! never are: every use asks the token, so an entry under an HSM key cannot
//! be read while its token is absent or refuses the PIN.
//!
//! A token also holds CAs' signing keys ([`KeyRing::signer`], a
//! [`TokenSigner`]); [`TokenCaSigner`] signs certificates and CRLs with one
//! (strongroom-pki's `CaSigner`, in `ca_signer`). [`settings`]: the `[keys]`
//! table (the named keys besides `Software:Default`, the default one, each
//! PKCS#11 key's module, token, label and PIN source).

#![forbid(unsafe_code)]

mod ca_signer;
pub mod keys;
mod pkcs11;
pub mod settings;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, RwLock};

use strongroom_core::event::{Event, EventKind};
use strongroom_core::random::{Random, bytes};
use strongroom_core::time::UnixTime;
use strongroom_core::vault::VaultId;
use strongroom_core::vault::crypto::{self, Key, aad_wrapped_key};
use strongroom_store::{Checked, DataKeyRecord, SealedItem, Store, StoreError};
use zeroize::Zeroizing;

use crate::keys::Keys;
pub use ca_signer::TokenCaSigner;
use settings::{KeyName, KeysConfig, SOFTWARE_DEFAULT, same_key};

/// How often a new data key is tried under the next free id.
const ID_TRIES: usize = 8;

#[derive(Debug, thiserror::Error)]
pub enum KeyRingError {
    #[error("data key {0} cannot be unwrapped with its named key")]
    Unwrap(i64),
    #[error("data key {0} does not exist")]
    Missing(i64),
    #[error("no key named {0:?} is configured")]
    Unknown(String),
    /// The driver failed (token absent, wrong PIN, key missing, ...). Never holds key material or a PIN.
    /// `logged`: the driver logged the cause already, once; callers log this at debug level only.
    #[error("key {name}: {message}")]
    Driver { name: String, message: String, logged: bool },
    /// A new data key could not get an id: other data keys kept taking them.
    #[error("no free data key id for {0} after {1} tries")]
    NoFreeId(String, usize),
    #[error("{0} is the key the entries are under already")]
    SameKey(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What [`KeyRing::move_entries`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Moved {
    /// The two keys' names as configured.
    pub from: String,
    pub to: String,
    /// The data key of the target named key the entries are sealed under now.
    pub data_key: i64,
    /// Entries moved, with all their associations.
    pub moved: u64,
    /// Entries that did not open (tampered or damaged): left as they are.
    pub unreadable: u64,
    /// Entries that changed meanwhile (deleted, or re-sealed by someone else): left for another run.
    pub changed: u64,
}

/// A driver's failure, safe to log: names and PKCS#11 return values only.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct DriverError {
    pub message: String,
    /// The driver logged this (or its cause) itself, once.
    pub logged: bool,
}

impl DriverError {
    pub fn new(message: impl Into<String>) -> DriverError {
        DriverError { message: message.into(), logged: false }
    }

    /// A failure the driver has logged already.
    pub fn logged(message: impl Into<String>) -> DriverError {
        DriverError { message: message.into(), logged: true }
    }
}

/// What a key driver does. Calls may block.
pub trait KeyDriver: Send + Sync + fmt::Debug {
    /// Wraps `data_key`; `nonce` is 24 fresh random bytes the driver may use.
    fn wrap(&self, data_key: &Key, aad: &[u8], nonce: [u8; 24]) -> Result<Vec<u8>, DriverError>;
    fn unwrap(&self, wrapped: &[u8], aad: &[u8]) -> Result<Key, DriverError>;
    /// Creates the key where the driver keeps keys (`admin keys create`).
    fn create(&self) -> Result<(), DriverError>;
    /// Where the key lives, for `admin keys list` and start-up messages.
    fn describe(&self) -> String;
    /// Makes a key pair labelled `label` where the driver keeps keys (ECDSA
    /// or RSA), its private half never extractable; returns the public key
    /// as a certificate's `subjectPublicKey` holds it (see
    /// [`KeyDriver::signing_public_key`]). A certificate authority's key on
    /// an HSM.
    fn create_signing_key(&self, label: &str, algorithm: SigningAlgorithm) -> Result<Vec<u8>, DriverError> {
        let _ = (label, algorithm);
        Err(DriverError::new("this key's driver keeps no signing keys: name a PKCS#11 key"))
    }
    /// The public key of the signing key `label` as a certificate's
    /// `subjectPublicKey` BIT STRING holds it: an EC key's uncompressed
    /// point, an RSA key's PKCS #1 `RSAPublicKey` (DER).
    fn signing_public_key(&self, label: &str) -> Result<Vec<u8>, DriverError> {
        let _ = label;
        Err(DriverError::new("this key's driver keeps no signing keys: name a PKCS#11 key"))
    }
    /// Signs `digest` (the message's SHA-256, SHA-384 or SHA-512) with the
    /// signing key `label`: an EC key's signature as `r || s` (`CKM_ECDSA`),
    /// an RSA key's PKCS #1 v1.5 signature over the digest's `DigestInfo`
    /// (`CKM_RSA_PKCS`).
    fn sign_digest(&self, label: &str, digest: &[u8]) -> Result<Vec<u8>, DriverError> {
        let _ = (label, digest);
        Err(DriverError::new("this key's driver keeps no signing keys: name a PKCS#11 key"))
    }
}

/// The signing keys a driver makes ([`KeyDriver::create_signing_key`]):
/// ECDSA on P-256 or P-384, RSA of 2048, 3072 or 4096 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SigningAlgorithm {
    P256,
    P384,
    /// The modulus's size in bits.
    Rsa(u32),
}

impl SigningAlgorithm {
    /// The curve's OID, DER-encoded (`CKA_EC_PARAMS`); `None` for RSA.
    pub fn params_der(self) -> Option<&'static [u8]> {
        match self {
            SigningAlgorithm::P256 => Some(&[0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]),
            SigningAlgorithm::P384 => Some(&[0x06, 0x05, 0x2B, 0x81, 0x04, 0x00, 0x22]),
            SigningAlgorithm::Rsa(_) => None,
        }
    }
}

/// The `DigestInfo` (PKCS #1 v1.5, RFC 8017 §9.2) of a SHA-256, SHA-384 or
/// SHA-512 digest, by its length: what `CKM_RSA_PKCS` signs.
pub fn digest_info(digest: &[u8]) -> Option<Vec<u8>> {
    const SHA256: &[u8] =
        &[0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20];
    const SHA384: &[u8] =
        &[0x30, 0x41, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02, 0x05, 0x00, 0x04, 0x30];
    const SHA512: &[u8] =
        &[0x30, 0x51, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x03, 0x05, 0x00, 0x04, 0x40];
    let prefix = match digest.len() {
        32 => SHA256,
        48 => SHA384,
        64 => SHA512,
        _ => return None,
    };
    Some([prefix, digest].concat())
}

/// Random bytes chosen beforehand, handed to `crypto::seal` as its source.
#[derive(Debug)]
struct Chosen([u8; 24]);

impl Random for Chosen {
    fn fill(&self, dest: &mut [u8]) {
        for (d, s) in dest.iter_mut().zip(self.0.iter().cycle()) {
            *d = *s;
        }
    }
}

/// `Software:Default`: data keys sealed (XChaCha20-Poly1305) under a key
/// derived from the master key.
struct Software {
    kek: Key,
}

impl fmt::Debug for Software {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Software(<redacted>)")
    }
}

impl KeyDriver for Software {
    fn wrap(&self, data_key: &Key, aad: &[u8], nonce: [u8; 24]) -> Result<Vec<u8>, DriverError> {
        crypto::seal(&self.kek, &Chosen(nonce), aad, data_key.expose()).map_err(|_| DriverError::new("sealing failed"))
    }

    fn unwrap(&self, wrapped: &[u8], aad: &[u8]) -> Result<Key, DriverError> {
        let raw =
            Zeroizing::new(crypto::open(&self.kek, aad, wrapped).map_err(|_| DriverError::new("does not open with this master key"))?);
        let arr: [u8; 32] = raw.as_slice().try_into().map_err(|_| DriverError::new("not a 32-byte key"))?;
        Ok(Key::new(arr))
    }

    fn create(&self) -> Result<(), DriverError> {
        Err(DriverError::new("the Software driver has one key, Software:Default, which always exists"))
    }

    fn describe(&self) -> String {
        "wrapped by the master key".into()
    }
}

/// A signing key in a token ([`KeyRing::signer`]). Its calls block.
#[derive(Clone, Debug)]
pub struct TokenSigner {
    name: String,
    label: String,
    driver: Arc<dyn KeyDriver>,
}

impl TokenSigner {
    fn failed(&self, e: DriverError) -> KeyRingError {
        KeyRingError::Driver { name: self.name.clone(), message: e.message, logged: e.logged }
    }

    /// The public key (see [`KeyDriver::signing_public_key`]).
    pub fn public_key(&self) -> Result<Vec<u8>, KeyRingError> {
        self.driver.signing_public_key(&self.label).map_err(|e| self.failed(e))
    }

    /// The signature over `digest` (see [`KeyDriver::sign_digest`]).
    pub fn sign_digest(&self, digest: &[u8]) -> Result<Vec<u8>, KeyRingError> {
        self.driver.sign_digest(&self.label, digest).map_err(|e| self.failed(e))
    }

    /// The named key whose token holds it, as configured.
    pub fn key_name(&self) -> &str {
        &self.name
    }
}

/// Associated data of a wrapped data key: its id and (but for the key that
/// predates named keys) its named key's name.
fn aad(id: i64, name: &str) -> Vec<u8> {
    let mut a = aad_wrapped_key(id);
    if name != SOFTWARE_DEFAULT {
        a.push(b'/');
        a.extend_from_slice(name.as_bytes());
    }
    a
}

/// A configured key: its name as parsed, as shown, and its driver.
#[derive(Debug, Clone)]
struct Configured {
    parsed: KeyName,
    /// The canonical spelling (`Software:Default`, `PKCS11:<name as configured>`).
    name: String,
    driver: Arc<dyn KeyDriver>,
}

/// The key ring. Cheap to clone; unwrapped `Software` data keys are cached.
#[derive(Clone, Debug)]
pub struct KeyRing {
    /// Keys the lookup hashes; not rotated (rotating it would need every
    /// value's plaintext at once).
    pub lookup: Arc<Key>,
    /// Every configured key, `Software:Default` first.
    drivers: Arc<Vec<Configured>>,
    default: String,
    cache: Arc<RwLock<BTreeMap<i64, Key>>>,
}

impl KeyRing {
    /// Only `Software:Default`.
    pub fn new(keys: &Keys) -> KeyRing {
        KeyRing::with_drivers(keys, Vec::new(), SOFTWARE_DEFAULT.to_owned())
    }

    /// Every configured key. Nothing is loaded yet (see [`KeyRing::check`]);
    /// `rng` keys the digests the PKCS#11 driver keeps of refused PINs.
    pub fn open(keys: &Keys, config: &KeysConfig, rng: &dyn Random) -> KeyRing {
        let extra = config
            .pkcs11
            .iter()
            .map(|k| (k.name.clone(), Arc::new(pkcs11::Pkcs11Key::new(k.clone(), rng)) as Arc<dyn KeyDriver>))
            .collect();
        KeyRing::with_drivers(keys, extra, config.default.clone())
    }

    /// The configured keys without the master key, for commands that touch
    /// no store (`admin keys create`, `config check`): its `Software:Default`
    /// is a random key of this process alone, so nothing it wraps could ever
    /// be read elsewhere; use it only to reach the PKCS#11 keys.
    pub fn without_master_key(config: &KeysConfig, rng: &dyn Random) -> KeyRing {
        let throwaway = Zeroizing::new(bytes::<32>(rng));
        KeyRing::open(&Keys::from_master(&throwaway), config, rng)
    }

    fn with_drivers(keys: &Keys, extra: Vec<(String, Arc<dyn KeyDriver>)>, default: String) -> KeyRing {
        let software: Arc<dyn KeyDriver> = Arc::new(Software { kek: Key::new(keys.vault_kek) });
        let drivers = std::iter::once((SOFTWARE_DEFAULT.to_owned(), software))
            .chain(extra)
            .filter_map(|(name, driver)| Some(Configured { parsed: KeyName::parse(&name)?, name, driver }))
            .collect();
        KeyRing {
            lookup: Arc::new(Key::new(keys.vault_lookup)),
            drivers: Arc::new(drivers),
            default,
            cache: Arc::new(RwLock::new(BTreeMap::new())),
        }
    }

    /// The key `Add` and `Crypto/DefaultKey` name by default.
    pub fn default_name(&self) -> &str {
        &self.default
    }

    /// Every configured key: (name, where it lives).
    pub fn configured(&self) -> Vec<(String, String)> {
        self.drivers.iter().map(|c| (c.name.clone(), c.driver.describe())).collect()
    }

    /// The configured key `name` names, read by [`KeyName::parse`] (spaces
    /// around it ignored, case-insensitive).
    fn find(&self, name: &str) -> Option<&Configured> {
        let wanted = KeyName::parse(name)?;
        self.drivers.iter().find(|c| c.parsed.same(&wanted))
    }

    /// The canonical spelling of a configured key's name.
    pub fn resolve(&self, name: &str) -> Option<&str> {
        self.find(name).map(|c| c.name.as_str())
    }

    fn driver(&self, name: &str) -> Result<(String, Arc<dyn KeyDriver>), KeyRingError> {
        self.find(name).map(|c| (c.name.clone(), c.driver.clone())).ok_or_else(|| KeyRingError::Unknown(name.trim().to_owned()))
    }

    /// Of the key names entries are sealed under (with their entry
    /// counts), those no configured key answers to: their entries cannot
    /// be read.
    pub fn unconfigured(&self, in_use: &[(String, u64)]) -> Vec<(String, u64)> {
        in_use.iter().filter(|(name, _)| self.find(name).is_none()).cloned().collect()
    }

    /// Runs a driver call on the blocking pool.
    async fn call<T: Send + 'static>(
        name: &str,
        driver: Arc<dyn KeyDriver>,
        f: impl FnOnce(&dyn KeyDriver) -> Result<T, DriverError> + Send + 'static,
    ) -> Result<T, KeyRingError> {
        let failed = |e: DriverError| KeyRingError::Driver { name: name.to_owned(), message: e.message, logged: e.logged };
        match tokio::task::spawn_blocking(move || f(&*driver)).await {
            Ok(r) => r.map_err(failed),
            Err(e) => Err(failed(DriverError::new(format!("driver call did not finish: {e}")))),
        }
    }

    /// Start-up: every configured key must wrap and unwrap a throwaway key.
    /// The first that cannot is named in the error.
    pub async fn check(&self, rng: &dyn Random) -> Result<(), KeyRingError> {
        for Configured { name, driver, .. } in self.drivers.iter() {
            let probe = Key::generate(rng);
            let expected = *probe.expose();
            let nonce: [u8; 24] = bytes(rng);
            let a = aad(0, name);
            let ok = Self::call(name, driver.clone(), move |d| {
                let wrapped = d.wrap(&probe, &a, nonce)?;
                Ok(*d.unwrap(&wrapped, &a)?.expose() == expected)
            })
            .await?;
            if !ok {
                return Err(KeyRingError::Driver { name: name.clone(), message: "unwrapping gave another key".into(), logged: false });
            }
        }
        Ok(())
    }

    /// [`KeyRing::check`] of every configured key, each with its own outcome
    /// (`config check` reports them all).
    pub async fn check_each(&self, rng: &dyn Random) -> Vec<(String, Result<(), KeyRingError>)> {
        let mut out = Vec::new();
        for c in self.drivers.iter() {
            let one = KeyRing { drivers: Arc::new(vec![c.clone()]), ..self.clone() };
            out.push((c.name.clone(), one.check(rng).await));
        }
        out
    }

    /// `admin keys create`: makes the named key where its driver keeps keys.
    pub async fn create_key(&self, name: &str) -> Result<String, KeyRingError> {
        let (name, driver) = self.driver(name)?;
        Self::call(&name, driver, |d| d.create()).await?;
        Ok(name)
    }

    /// Makes a signing key pair `label` in the named key's token (see
    /// [`KeyDriver::create_signing_key`]): the key's canonical name and the
    /// public key.
    pub async fn create_signing_key(
        &self,
        name: &str,
        label: &str,
        algorithm: SigningAlgorithm,
    ) -> Result<(String, Vec<u8>), KeyRingError> {
        let (name, driver) = self.driver(name)?;
        let label = label.to_owned();
        let public = Self::call(&name, driver, move |d| d.create_signing_key(&label, algorithm)).await?;
        Ok((name, public))
    }

    /// A signer for the signing key `label` in the named key's token, for
    /// code that signs synchronously (its calls block: run them on the
    /// blocking pool).
    pub fn signer(&self, name: &str, label: &str) -> Result<TokenSigner, KeyRingError> {
        let (name, driver) = self.driver(name)?;
        Ok(TokenSigner { name, label: label.to_owned(), driver })
    }

    async fn unwrap(&self, rec: &DataKeyRecord) -> Result<Key, KeyRingError> {
        let (name, driver) = self.driver(&rec.key_name)?;
        let (a, wrapped, id) = (aad(rec.id, &name), rec.wrapped.clone(), rec.id);
        Self::call(&name, driver, move |d| {
            d.unwrap(&wrapped, &a).map_err(|e| DriverError { message: format!("data key {id}: {}", e.message), ..e })
        })
        .await
    }

    fn cached(&self, id: i64) -> Option<Key> {
        self.cache.read().ok().and_then(|c| c.get(&id).cloned())
    }

    /// Caches a data key wrapped by the master key. One a token wraps is not
    /// kept: the token decides every use.
    fn remember(&self, id: i64, key_name: &str, key: Key) {
        if !settings::is_software(key_name) {
            return;
        }
        if let Ok(mut c) = self.cache.write() {
            c.insert(id, key);
        }
    }

    /// The data key new data under named key `name` is sealed with: that
    /// key's newest. `known` is (name, newest id) as the request's context
    /// read saw them (so a rotation by `strongroom admin` takes effect at
    /// once without another read). The first data key of a named key is
    /// made here. Returns the canonical name too.
    pub async fn current(
        &self,
        store: &dyn Store,
        rng: &dyn Random,
        now: UnixTime,
        name: &str,
        known: &[(String, i64)],
    ) -> Result<(String, i64, Key), KeyRingError> {
        let (name, _) = self.driver(name)?;
        if let Some((_, id)) = known.iter().find(|(n, _)| same_key(n, &name))
            && let Some(k) = self.cached(*id)
        {
            return Ok((name, *id, k));
        }
        // Data key ids are shared by all named keys: a racing creator may
        // take ours, and then we read again.
        for _ in 0..ID_TRIES {
            let keys = store.data_keys().await?;
            let Some(newest) = keys.iter().rev().find(|k| same_key(&k.key_name, &name)) else {
                let next = keys.last().map_or(1, |k| k.id + 1);
                if let Some(k) = self.create(store, rng, &name, next, now, "first data key").await? {
                    self.remember(next, &name, k.clone());
                    return Ok((name, next, k));
                }
                continue;
            };
            if let Some(k) = self.cached(newest.id) {
                return Ok((name, newest.id, k));
            }
            let k = self.unwrap(newest).await?;
            self.remember(newest.id, &newest.key_name, k.clone());
            return Ok((name, newest.id, k));
        }
        Err(KeyRingError::Store(StoreError::Conflict))
    }

    /// The data key with id `id`, for reading.
    pub async fn key(&self, store: &dyn Store, id: i64) -> Result<Key, KeyRingError> {
        if let Some(k) = self.cached(id) {
            return Ok(k);
        }
        let rec = store.data_keys().await?.into_iter().find(|k| k.id == id).ok_or(KeyRingError::Missing(id))?;
        let k = self.unwrap(&rec).await?;
        self.remember(id, &rec.key_name, k.clone());
        Ok(k)
    }

    /// Stores a new random data key under `id`, wrapped by `name`, once
    /// its wrapped form is seen to unwrap to it again. `None` if `id` was
    /// taken meanwhile (by a concurrent creator, for any named key).
    async fn create(
        &self,
        store: &dyn Store,
        rng: &dyn Random,
        name: &str,
        id: i64,
        now: UnixTime,
        why: &str,
    ) -> Result<Option<Key>, KeyRingError> {
        let (name, driver) = self.driver(name)?;
        let key = Key::generate(rng);
        let made = key.clone();
        let (a, nonce) = (aad(id, &name), bytes(rng));
        let wrapped = Self::call(&name, driver, move |d| {
            let wrapped = d.wrap(&key, &a, nonce)?;
            if d.unwrap(&wrapped, &a)?.expose() != key.expose() {
                return Err(DriverError::new("a new data key does not unwrap to itself"));
            }
            Ok(wrapped)
        })
        .await?;
        let event = Event::new(EventKind::VaultKeyCreated, now).object(format!("data key {id}")).detail(format!("{why}; key={name}"));
        match store.insert_data_key(DataKeyRecord { id, key_name: name, wrapped, created_at: now }, event).await {
            Ok(()) => Ok(Some(made)),
            Err(StoreError::Conflict) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The named keys that have data keys.
    pub async fn names_with_data_keys(&self, store: &dyn Store) -> Result<Vec<String>, KeyRingError> {
        let mut names: Vec<String> = store.data_keys().await?.into_iter().map(|k| k.key_name).collect();
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// Creates a new current data key for named key `name` and re-seals
    /// everything of the entries under `name` with it, calling `progress`
    /// with the running total after each batch. Returns the new key's id and
    /// the number of items re-sealed.
    pub async fn rotate(
        &self,
        store: &dyn Store,
        rng: &dyn Random,
        now: UnixTime,
        actor: &str,
        name: &str,
        progress: &mut (dyn FnMut(u64) + Send),
    ) -> Result<(i64, u64), KeyRingError> {
        let (name, _) = self.driver(name)?;
        // Data key ids are shared by all named keys: an id taken meanwhile
        // is not ours, so take the next one.
        let mut made = None;
        for _ in 0..ID_TRIES {
            let next = store.data_keys().await?.last().map_or(1, |k| k.id + 1);
            if let Some(k) = self.create(store, rng, &name, next, now, "rotation").await? {
                made = Some((next, k));
                break;
            }
        }
        let Some((current, new_key)) = made else { return Err(KeyRingError::NoFreeId(name, ID_TRIES)) };
        self.remember(current, &name, new_key.clone());
        let mut total = 0;
        loop {
            let batch = store.sealed_on_old_keys(name.clone(), current, 500).await?;
            if batch.is_empty() {
                break;
            }
            let mut items = Vec::with_capacity(batch.len());
            for item in batch {
                let old = self.key(store, item_key(&item)).await?;
                // Unreadable data stays as it is (and keeps failing with
                // Result 11): re-sealing it would launder tampering.
                let Some(resealed) = reseal(&item, &old, current, &new_key, rng) else { continue };
                items.push((item, current, resealed));
            }
            if items.is_empty() {
                break;
            }
            let event = Event::new(EventKind::VaultResealed, now)
                .identity(actor)
                .object(format!("data key {current}"))
                .detail(format!("key={name}"));
            let n = store.reseal(items, event).await?;
            total += n;
            progress(total);
            if n == 0 {
                break;
            }
        }
        Ok((current, total))
    }
}

impl KeyRing {
    /// Entry `data`'s data and every association of it, opened and sealed
    /// again under data key `new_id` (`new`), as `rekey_entry` takes them;
    /// `None` if any of them does not open.
    pub async fn reseal_entry(
        &self,
        store: &dyn Store,
        rng: &dyn Random,
        data: SealedItem,
        new_id: i64,
        new: &Key,
    ) -> Result<Option<Vec<(SealedItem, i64, Vec<u8>)>>, KeyRingError> {
        let SealedItem::Data { vault_id, .. } = &data else { return Ok(None) };
        let mut items = vec![data.clone()];
        for a in store.associations(*vault_id).await? {
            items.push(SealedItem::Association {
                vault_id: *vault_id,
                name: a.name,
                value_type: a.value_type,
                key_id: a.key_id,
                sealed: a.sealed,
            });
        }
        let mut resealed = Vec::with_capacity(items.len());
        for item in items {
            let old = self.key(store, item_key(&item)).await?;
            let Some(sealed) = reseal(&item, &old, new_id, new, rng) else { return Ok(None) };
            resealed.push((item, new_id, sealed));
        }
        Ok(Some(resealed))
    }

    /// `admin keys move`: every entry under named key `from` (data and
    /// associations) sealed again under `to`'s current data key and moved
    /// under `to`, one entry per write, `progress` called with the running
    /// count after each page. Both keys must be configured and usable.
    #[allow(clippy::too_many_arguments)]
    pub async fn move_entries(
        &self,
        store: &dyn Store,
        rng: &dyn Random,
        now: UnixTime,
        actor: &str,
        from: &str,
        to: &str,
        progress: &mut (dyn FnMut(u64) + Send),
    ) -> Result<Moved, KeyRingError> {
        let (from, _) = self.driver(from)?;
        if same_key(&from, to) {
            return Err(KeyRingError::SameKey(from));
        }
        let (to, data_key, new) = self.current(store, rng, now, to, &[]).await?;
        let mut done = Moved { from: from.clone(), to: to.clone(), data_key, ..Moved::default() };
        let mut after = VaultId(0);
        loop {
            let page = store.entries_under_key(from.clone(), after, 100).await?;
            if page.is_empty() {
                return Ok(done);
            }
            for data in page {
                let SealedItem::Data { vault_id: id, .. } = data else { continue };
                after = id;
                let Some(items) = self.reseal_entry(store, rng, data, data_key, &new).await? else {
                    done.unreadable += 1;
                    continue;
                };
                let event = Event::new(EventKind::VaultResealed, now)
                    .identity(actor)
                    .object(id.to_string())
                    .detail(format!("key={to} data key {data_key}; moved from {from}"));
                match store.rekey_entry(id, to.clone(), items, None, event).await? {
                    Checked::Done(true) => done.moved += 1,
                    _ => done.changed += 1,
                }
            }
            progress(done.moved);
        }
    }
}

/// The data key an item is sealed under.
pub fn item_key(item: &SealedItem) -> i64 {
    match item {
        SealedItem::Data { key_id, .. } | SealedItem::Association { key_id, .. } => *key_id,
    }
}

/// Opens `item` with `old` and seals it again under data key `new_id`;
/// `None` if it does not open.
pub fn reseal(item: &SealedItem, old: &Key, new_id: i64, new: &Key, rng: &dyn Random) -> Option<Vec<u8>> {
    let (aad_old, aad_new, sealed) = match item {
        SealedItem::Data { vault_id, key_id, sealed } => {
            (crypto::aad_data(*vault_id, *key_id), crypto::aad_data(*vault_id, new_id), sealed)
        }
        SealedItem::Association { vault_id, name, value_type, key_id, sealed } => (
            crypto::aad_association(*vault_id, name, *value_type, *key_id),
            crypto::aad_association(*vault_id, name, *value_type, new_id),
            sealed,
        ),
    };
    let plain = crypto::open(old, &aad_old, sealed).ok()?;
    crypto::seal(new, rng, &aad_new, &plain).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Counting(std::sync::atomic::AtomicU8);

    impl Random for Counting {
        fn fill(&self, dest: &mut [u8]) {
            for d in dest {
                *d = self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }

    fn ring() -> KeyRing {
        KeyRing::new(&Keys::from_master(&[7; 32]))
    }

    #[tokio::test]
    async fn a_wrapped_data_key_is_bound_to_its_id_and_named_key() {
        let ring = ring();
        let (_, software) = ring.driver("software:default").unwrap();
        let key = Key::new([42; 32]);
        let wrapped = software.wrap(&key, &aad(5, SOFTWARE_DEFAULT), [1; 24]).unwrap();
        assert!(!wrapped.windows(32).any(|w| w == [42; 32]), "the key is not stored in the clear");
        assert_eq!(software.unwrap(&wrapped, &aad(5, SOFTWARE_DEFAULT)).unwrap().expose(), &[42; 32]);
        assert!(software.unwrap(&wrapped, &aad(6, SOFTWARE_DEFAULT)).is_err(), "another id");
        assert!(software.unwrap(&wrapped, &aad(5, "PKCS11:x")).is_err(), "another named key");
        assert_eq!(aad(5, SOFTWARE_DEFAULT), aad_wrapped_key(5), "data keys from before named keys still open");
        ring.check(&Counting(Default::default())).await.unwrap();
    }

    #[test]
    fn names_resolve_case_insensitively_and_only_when_configured() {
        let ring = ring();
        assert_eq!(ring.resolve(" SOFTWARE:default "), Some(SOFTWARE_DEFAULT));
        assert_eq!(ring.resolve("Software:Other"), None);
        assert_eq!(ring.resolve("PKCS11:hsm"), None);
        assert_eq!(ring.default_name(), SOFTWARE_DEFAULT);
        assert!(matches!(ring.driver("PKCS11:hsm"), Err(KeyRingError::Unknown(_))));
        let config = unloadable_hsm("PKCS11:hsm");
        let ring = KeyRing::open(&Keys::from_master(&[7; 32]), &config, &Counting(Default::default()));
        assert_eq!(ring.resolve("pkcs11:HSM"), Some("PKCS11:hsm"));
        assert_eq!(ring.resolve(" pkcs11:hsm\n"), Some("PKCS11:hsm"));
        assert_eq!(ring.driver(" pkcs11:hsm ").unwrap().0, "PKCS11:hsm", "driver() and resolve() read names alike");
        let in_use = [("PKCS11:HSM".to_owned(), 2), ("PKCS11:gone".to_owned(), 3), ("Software:Default".to_owned(), 1)];
        assert_eq!(ring.unconfigured(&in_use), vec![("PKCS11:gone".to_owned(), 3)]);
        assert_eq!(ring.default_name(), "PKCS11:hsm");
        assert!(format!("{ring:?}").contains("PKCS11:hsm"));
    }

    /// A configuration naming one PKCS#11 key whose module does not exist.
    fn unloadable_hsm(default: &str) -> settings::KeysConfig {
        settings::KeysConfig {
            default: default.into(),
            pkcs11: vec![settings::Pkcs11KeyConfig {
                name: "PKCS11:hsm".into(),
                library: "/nonexistent/module.so".into(),
                token_label: "t".into(),
                key_label: "k".into(),
                pin: settings::PinSource::Env("STRONGROOM_TEST_NO_SUCH_PIN".into()),
            }],
        }
    }

    #[tokio::test]
    async fn an_unloadable_key_fails_the_check_naming_it() {
        let config = unloadable_hsm(SOFTWARE_DEFAULT);
        let ring = KeyRing::open(&Keys::from_master(&[7; 32]), &config, &Counting(Default::default()));
        let e = ring.check(&Counting(Default::default())).await.unwrap_err();
        assert!(e.to_string().starts_with("key PKCS11:hsm: loading the PKCS#11 module"), "{e}");
    }

    /// A driver that XORs, and whose first wrap waits until the test lets it go.
    #[derive(Debug)]
    struct Gated {
        gate: std::sync::Mutex<Option<(std::sync::mpsc::Sender<()>, std::sync::mpsc::Receiver<()>)>>,
    }

    impl KeyDriver for Gated {
        fn wrap(&self, data_key: &Key, _: &[u8], _: [u8; 24]) -> Result<Vec<u8>, DriverError> {
            if let Some((entered, release)) = self.gate.lock().unwrap().take() {
                entered.send(()).unwrap();
                release.recv().unwrap();
            }
            Ok(data_key.expose().iter().map(|b| b ^ 0x5a).collect())
        }

        fn unwrap(&self, wrapped: &[u8], _: &[u8]) -> Result<Key, DriverError> {
            let raw: Vec<u8> = wrapped.iter().map(|b| b ^ 0x5a).collect();
            Ok(Key::new(raw.try_into().unwrap()))
        }

        fn create(&self) -> Result<(), DriverError> {
            Ok(())
        }

        fn describe(&self) -> String {
            "gated".into()
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_rotation_whose_new_data_key_id_is_taken_takes_the_next_one() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> = Arc::new(strongroom_store::sqlite::SqliteStore::open(&dir.path().join("db")).unwrap());
        let gate = Arc::new(Gated { gate: std::sync::Mutex::new(None) });
        let gated: Arc<dyn KeyDriver> = gate.clone();
        let ring = KeyRing::with_drivers(&Keys::from_master(&[7; 32]), vec![("PKCS11:gated".into(), gated)], SOFTWARE_DEFAULT.into());
        let rng = Arc::new(Counting(Default::default()));
        let now = UnixTime::from_millis(1_000_000);
        let (_, first, _) = ring.current(&*store, &*rng, now, "PKCS11:gated", &[]).await.unwrap();
        assert_eq!(first, 1);
        let (entered_tx, entered) = std::sync::mpsc::channel();
        let (release, release_rx) = std::sync::mpsc::channel();
        *gate.gate.lock().unwrap() = Some((entered_tx, release_rx));

        let rotation = {
            let (ring, store, rng) = (ring.clone(), store.clone(), rng.clone());
            tokio::spawn(async move { ring.rotate(&*store, &*rng, now, "test", "pkcs11:GATED", &mut |_| {}).await })
        };
        // While the new key is being wrapped, another named key takes its id.
        tokio::task::spawn_blocking(move || entered.recv().unwrap()).await.unwrap();
        let rival = DataKeyRecord { id: 2, key_name: SOFTWARE_DEFAULT.into(), wrapped: vec![0; 8], created_at: now };
        store.insert_data_key(rival, Event::new(EventKind::VaultKeyCreated, now)).await.unwrap();
        release.send(()).unwrap();
        let (current, resealed) = rotation.await.unwrap().unwrap();
        assert_eq!((current, resealed), (3, 0), "the rotation made data key 3, not silently nothing");
        let keys: Vec<(i64, String)> = store.data_keys().await.unwrap().into_iter().map(|k| (k.id, k.key_name)).collect();
        assert_eq!(keys, vec![(1, "PKCS11:gated".into()), (2, SOFTWARE_DEFAULT.into()), (3, "PKCS11:gated".into())]);
        let (_, id, _) = ring.current(&*store, &*rng, now, "PKCS11:gated", &[]).await.unwrap();
        assert_eq!(id, 3);
    }
}
