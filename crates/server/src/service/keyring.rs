//! The vault's key ring: data keys stored wrapped by the master key, one
//! current key for new writes, old keys kept for reading until everything
//! has been re-sealed under the current one.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use strongroom_core::event::{Event, EventKind};
use strongroom_core::random::Random;
use strongroom_core::time::UnixTime;
use strongroom_core::vault::crypto::{self, Key, aad_wrapped_key};
use strongroom_store::{DataKeyRecord, SealedItem, Store, StoreError};

use crate::keys::Keys;

#[derive(Debug, thiserror::Error)]
pub enum KeyRingError {
    #[error("data key {0} cannot be unwrapped with this master key")]
    Unwrap(i64),
    #[error("data key {0} does not exist")]
    Missing(i64),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The key ring. Cheap to clone; unwrapped keys are cached.
#[derive(Clone, Debug)]
pub struct KeyRing {
    kek: Arc<Key>,
    /// Keys the lookup hashes; not rotated (rotating it would need every
    /// value's plaintext at once).
    pub lookup: Arc<Key>,
    cache: Arc<RwLock<BTreeMap<i64, Key>>>,
}

impl KeyRing {
    pub fn new(keys: &Keys) -> KeyRing {
        KeyRing {
            kek: Arc::new(Key::new(keys.vault_kek)),
            lookup: Arc::new(Key::new(keys.vault_lookup)),
            cache: Arc::new(RwLock::new(BTreeMap::new())),
        }
    }

    fn unwrap(&self, rec: &DataKeyRecord) -> Result<Key, KeyRingError> {
        let raw = crypto::open(&self.kek, &aad_wrapped_key(rec.id), &rec.wrapped).map_err(|_| KeyRingError::Unwrap(rec.id))?;
        let arr: [u8; 32] = raw.try_into().map_err(|_| KeyRingError::Unwrap(rec.id))?;
        Ok(Key::new(arr))
    }

    fn cached(&self, id: i64) -> Option<Key> {
        self.cache.read().ok().and_then(|c| c.get(&id).cloned())
    }

    fn remember(&self, id: i64, key: Key) {
        if let Ok(mut c) = self.cache.write() {
            c.insert(id, key);
        }
    }

    /// The key new data is sealed with: the newest one. `known` is the newest
    /// id as the request's context read saw it (so a rotation by `strongroom
    /// admin` takes effect at once without another read); `None` reads it.
    pub async fn current(
        &self,
        store: &dyn Store,
        rng: &dyn Random,
        now: UnixTime,
        known: Option<i64>,
    ) -> Result<(i64, Key), KeyRingError> {
        if let Some(id) = known
            && let Some(k) = self.cached(id)
        {
            return Ok((id, k));
        }
        loop {
            let keys = store.data_keys().await?;
            let Some(newest) = keys.last() else {
                self.create(store, rng, 1, now, "first data key").await?;
                continue;
            };
            if let Some(k) = self.cached(newest.id) {
                return Ok((newest.id, k));
            }
            let k = self.unwrap(newest)?;
            self.remember(newest.id, k.clone());
            return Ok((newest.id, k));
        }
    }

    /// The key with id `id`, for reading.
    pub async fn key(&self, store: &dyn Store, id: i64) -> Result<Key, KeyRingError> {
        if let Some(k) = self.cached(id) {
            return Ok(k);
        }
        let rec = store.data_keys().await?.into_iter().find(|k| k.id == id).ok_or(KeyRingError::Missing(id))?;
        let k = self.unwrap(&rec)?;
        self.remember(id, k.clone());
        Ok(k)
    }

    /// Stores a new random data key under `id`; a concurrent creator of the
    /// same id wins and this is not an error.
    async fn create(&self, store: &dyn Store, rng: &dyn Random, id: i64, now: UnixTime, why: &str) -> Result<(), KeyRingError> {
        let key = Key::generate(rng);
        let wrapped = crypto::seal(&self.kek, rng, &aad_wrapped_key(id), key.expose()).map_err(|_| KeyRingError::Unwrap(id))?;
        let event = Event::new(EventKind::VaultKeyCreated, now).object(format!("data key {id}")).detail(why);
        match store.insert_data_key(DataKeyRecord { id, wrapped, created_at: now }, event).await {
            Ok(()) | Err(StoreError::Conflict) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Creates a new current key and re-seals everything under it. Returns
    /// the new key's id and the number of items re-sealed.
    pub async fn rotate(&self, store: &dyn Store, rng: &dyn Random, now: UnixTime, actor: &str) -> Result<(i64, u64), KeyRingError> {
        let next = store.data_keys().await?.last().map_or(1, |k| k.id + 1);
        self.create(store, rng, next, now, "rotation").await?;
        let (current, new_key) = self.current(store, rng, now, None).await?;
        let mut total = 0;
        loop {
            let batch = store.sealed_on_old_keys(current, 500).await?;
            if batch.is_empty() {
                break;
            }
            let mut items = Vec::with_capacity(batch.len());
            for item in batch {
                let (old_key_id, aad_old, aad_new, sealed) = match &item {
                    SealedItem::Data { vault_id, key_id, sealed } => {
                        (*key_id, crypto::aad_data(*vault_id, *key_id), crypto::aad_data(*vault_id, current), sealed)
                    }
                    SealedItem::Association { vault_id, name, value_type, key_id, sealed } => (
                        *key_id,
                        crypto::aad_association(*vault_id, name, *value_type, *key_id),
                        crypto::aad_association(*vault_id, name, *value_type, current),
                        sealed,
                    ),
                };
                let old = self.key(store, old_key_id).await?;
                // Unreadable data stays as it is (and keeps failing with
                // Result 11): re-sealing it would launder tampering.
                let Ok(plain) = crypto::open(&old, &aad_old, sealed) else { continue };
                let resealed = crypto::seal(&new_key, rng, &aad_new, &plain).map_err(|_| KeyRingError::Unwrap(current))?;
                items.push((item, current, resealed));
            }
            if items.is_empty() {
                break;
            }
            let event = Event::new(EventKind::VaultResealed, now).identity(actor).object(format!("data key {current}"));
            let n = store.reseal(items, event).await?;
            total += n;
            if n == 0 {
                break;
            }
        }
        Ok((current, total))
    }
}
