//! The PostgreSQL store (placeholder until the port lands).

use crate::{Migration, StoreError, StoreResult};

pub(crate) const MIGRATIONS: &[Migration] = &[];

#[derive(Debug)]
pub struct PgStore;

impl PgStore {
    pub async fn connect(_url: &str) -> StoreResult<PgStore> {
        Err(StoreError::UnsupportedUrl)
    }
}

pub mod testing {
    //! Helpers for tests against a shared PostgreSQL server.
    use crate::{Store, StoreError, StoreResult};
    use std::sync::Arc;
    /// A store in a new, empty schema of its own.
    pub async fn fresh_schema(_url: &str) -> StoreResult<Arc<dyn Store>> {
        Err(StoreError::UnsupportedUrl)
    }
}
