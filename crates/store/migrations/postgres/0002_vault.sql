-- The vault. Mirrors migrations/sqlite/0002_vault.sql.

CREATE TABLE folders (
    path_key   TEXT PRIMARY KEY,
    path       TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE folder_rights (
    path_key TEXT NOT NULL REFERENCES folders(path_key) ON DELETE CASCADE,
    user_id  TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    rights   BIGINT NOT NULL,
    PRIMARY KEY (path_key, user_id)
);
CREATE INDEX folder_rights_user ON folder_rights(user_id);

CREATE TABLE data_keys (
    id         BIGINT PRIMARY KEY,
    wrapped    BYTEA NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE SEQUENCE vault_id_seq;

CREATE TABLE vault_entries (
    vault_id   BIGINT PRIMARY KEY,
    vault_type INTEGER NOT NULL,
    key_name   TEXT NOT NULL,
    key_id     BIGINT NOT NULL REFERENCES data_keys(id),
    sealed     BYTEA NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX vault_entries_type ON vault_entries(vault_type);

CREATE TABLE vault_owners (
    vault_id  BIGINT NOT NULL REFERENCES vault_entries(vault_id) ON DELETE CASCADE,
    owner_key TEXT NOT NULL,
    owner     TEXT NOT NULL,
    PRIMARY KEY (vault_id, owner_key)
);
CREATE INDEX vault_owners_owner ON vault_owners(owner_key);

CREATE TABLE associations (
    vault_id   BIGINT NOT NULL REFERENCES vault_entries(vault_id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    value_type TEXT NOT NULL CHECK (value_type IN ('string', 'int', 'datetime')),
    key_id     BIGINT NOT NULL REFERENCES data_keys(id),
    sealed     BYTEA NOT NULL,
    lookup     BYTEA NOT NULL,
    PRIMARY KEY (vault_id, name)
);
CREATE INDEX associations_lookup ON associations(name, lookup);
