-- The vault: owner folders and the rights granted on them, data keys wrapped
-- by the master key, entries with their sealed data and owners, and
-- associations with sealed values and keyed lookup hashes.

CREATE TABLE folders (
    path_key   TEXT PRIMARY KEY,                 -- lower-cased: paths compare case-insensitively
    path       TEXT NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;

CREATE TABLE folder_rights (
    path_key TEXT NOT NULL REFERENCES folders(path_key) ON DELETE CASCADE,
    user_id  TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    rights   INTEGER NOT NULL,                    -- View 1, Read 2, Write 4, Create 8, Delete 16
    PRIMARY KEY (path_key, user_id)
) STRICT;
CREATE INDEX folder_rights_user ON folder_rights(user_id);

CREATE TABLE data_keys (
    id         INTEGER PRIMARY KEY,
    wrapped    BLOB NOT NULL,                     -- sealed by the master key
    created_at INTEGER NOT NULL
) STRICT;

-- VaultIDs are allocated before the data is sealed (the id is bound into the ciphertext).
CREATE TABLE vault_id_seq (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    next INTEGER NOT NULL
) STRICT;
INSERT INTO vault_id_seq (id, next) VALUES (1, 1);

CREATE TABLE vault_entries (
    vault_id   INTEGER PRIMARY KEY,
    vault_type INTEGER NOT NULL,
    key_name   TEXT NOT NULL,                     -- the Keyname the client gave
    key_id     INTEGER NOT NULL REFERENCES data_keys(id),
    sealed     BLOB NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX vault_entries_type ON vault_entries(vault_type);

CREATE TABLE vault_owners (
    vault_id  INTEGER NOT NULL REFERENCES vault_entries(vault_id) ON DELETE CASCADE,
    owner_key TEXT NOT NULL,
    owner     TEXT NOT NULL,
    PRIMARY KEY (vault_id, owner_key)
) STRICT;
CREATE INDEX vault_owners_owner ON vault_owners(owner_key);

CREATE TABLE associations (
    vault_id   INTEGER NOT NULL REFERENCES vault_entries(vault_id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    value_type TEXT NOT NULL CHECK (value_type IN ('string', 'int', 'datetime')),
    key_id     INTEGER NOT NULL REFERENCES data_keys(id),
    sealed     BLOB NOT NULL,
    lookup     BLOB NOT NULL,                     -- HMAC of name, type and value
    PRIMARY KEY (vault_id, name)
) STRICT;
CREATE INDEX associations_lookup ON associations(name, lookup);
