-- Users, API integrations, device codes, grants and tokens, throttling and the
-- event log. Times are Unix milliseconds; token columns hold HMAC-SHA256
-- hashes, never tokens.

CREATE TABLE users (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    name_key      TEXT NOT NULL UNIQUE,          -- lower-cased name: names are case-insensitive
    password_hash TEXT NOT NULL,
    disabled      INTEGER NOT NULL DEFAULT 0,
    master_admin  INTEGER NOT NULL DEFAULT 0,
    created_at    INTEGER NOT NULL
) STRICT;

CREATE TABLE integrations (
    client_id            TEXT PRIMARY KEY,       -- case-sensitive
    name                 TEXT NOT NULL,
    max_scope            TEXT NOT NULL,
    allow_all_users      INTEGER NOT NULL DEFAULT 0,
    allow_device         INTEGER NOT NULL DEFAULT 1,
    allow_password       INTEGER NOT NULL DEFAULT 0,
    access_validity      INTEGER,                -- NULL: the server default
    grant_validity       INTEGER,
    refreshable          INTEGER,
    device_code_validity INTEGER,
    poll_interval        INTEGER,
    disabled             INTEGER NOT NULL DEFAULT 0,
    created_at           INTEGER NOT NULL
) STRICT;

CREATE TABLE integration_users (
    client_id TEXT NOT NULL REFERENCES integrations(client_id) ON DELETE CASCADE,
    user_id   TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    PRIMARY KEY (client_id, user_id)
) STRICT;

CREATE TABLE device_codes (
    code_hash      BLOB PRIMARY KEY,
    user_code_hash BLOB NOT NULL UNIQUE,
    client_id      TEXT NOT NULL,
    scope          TEXT NOT NULL,
    state          TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'denied', 'redeemed')),
    user_id        TEXT,
    created_at     INTEGER NOT NULL,
    expires_at     INTEGER NOT NULL,
    interval_secs  INTEGER NOT NULL,
    last_poll_at   INTEGER,
    version        INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX device_codes_expires ON device_codes(expires_at);

CREATE TABLE grants (
    id               TEXT PRIMARY KEY,
    client_id        TEXT NOT NULL,
    user_id          TEXT NOT NULL,
    scope            TEXT NOT NULL,
    created_at       INTEGER NOT NULL,
    refresh_until    INTEGER NOT NULL,
    refreshable      INTEGER NOT NULL,
    access_issued_at INTEGER NOT NULL,
    access_validity  INTEGER NOT NULL,
    revoked_at       INTEGER
) STRICT;
CREATE INDEX grants_user ON grants(user_id);
CREATE INDEX grants_refresh_until ON grants(refresh_until);

CREATE TABLE access_tokens (
    hash       BLOB PRIMARY KEY,
    grant_id   TEXT NOT NULL REFERENCES grants(id) ON DELETE CASCADE,
    issued_at  INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) STRICT;
CREATE INDEX access_tokens_grant ON access_tokens(grant_id);

CREATE TABLE refresh_tokens (
    hash      BLOB PRIMARY KEY,
    grant_id  TEXT NOT NULL REFERENCES grants(id) ON DELETE CASCADE,
    issued_at INTEGER NOT NULL,
    spent_at  INTEGER                             -- a tombstone once set, kept until the grant ends
) STRICT;
CREATE INDEX refresh_tokens_grant ON refresh_tokens(grant_id);

CREATE TABLE throttle (
    key          TEXT PRIMARY KEY,
    failures     INTEGER NOT NULL,
    window_start INTEGER NOT NULL,
    locked_until INTEGER
) STRICT;

CREATE TABLE events (
    seq        INTEGER PRIMARY KEY,
    at         INTEGER NOT NULL,
    kind       TEXT NOT NULL,
    identity   TEXT NOT NULL,
    client_id  TEXT NOT NULL,
    source     TEXT NOT NULL,
    request_id TEXT NOT NULL,
    object     TEXT NOT NULL,
    detail     TEXT NOT NULL,
    hash       BLOB NOT NULL
) STRICT;
CREATE INDEX events_at ON events(at);

-- The newest event's sequence number and hash: the chain's anchor.
CREATE TABLE event_head (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    seq  INTEGER NOT NULL,
    hash BLOB NOT NULL
) STRICT;
INSERT INTO event_head (id, seq, hash) VALUES (1, 0, zeroblob(32));
