-- The check value of the master key the store was first opened with: an
-- HMAC of a fixed label under the master key, which says nothing of the key.
-- A server or admin command given another key is refused instead of hashing
-- tokens and association values under a key that no other replica uses.
-- One row at most; a store made before this migration records the key it is
-- next opened with.

CREATE TABLE master_key_check (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    digest BYTEA NOT NULL,
    recorded_at BIGINT NOT NULL
);
