-- Users, API integrations, device codes, grants and tokens, throttling and the
-- event log. Times are Unix milliseconds; token columns hold HMAC-SHA256
-- hashes, never tokens. Mirrors migrations/sqlite/0001_auth.sql.

CREATE TABLE users (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    name_key      TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    disabled      BOOLEAN NOT NULL DEFAULT FALSE,
    master_admin  BOOLEAN NOT NULL DEFAULT FALSE,
    created_at    BIGINT NOT NULL
);

CREATE TABLE integrations (
    client_id            TEXT PRIMARY KEY,
    name                 TEXT NOT NULL,
    max_scope            TEXT NOT NULL,
    allow_all_users      BOOLEAN NOT NULL DEFAULT FALSE,
    allow_device         BOOLEAN NOT NULL DEFAULT TRUE,
    allow_password       BOOLEAN NOT NULL DEFAULT FALSE,
    access_validity      BIGINT,
    grant_validity       BIGINT,
    refreshable          BOOLEAN,
    device_code_validity BIGINT,
    poll_interval        BIGINT,
    disabled             BOOLEAN NOT NULL DEFAULT FALSE,
    created_at           BIGINT NOT NULL
);

CREATE TABLE integration_users (
    client_id TEXT NOT NULL REFERENCES integrations(client_id) ON DELETE CASCADE,
    user_id   TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    PRIMARY KEY (client_id, user_id)
);

CREATE TABLE device_codes (
    code_hash      BYTEA PRIMARY KEY,
    user_code_hash BYTEA NOT NULL UNIQUE,
    client_id      TEXT NOT NULL,
    scope          TEXT NOT NULL,
    state          TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'denied', 'redeemed')),
    user_id        TEXT,
    created_at     BIGINT NOT NULL,
    expires_at     BIGINT NOT NULL,
    interval_secs  BIGINT NOT NULL,
    last_poll_at   BIGINT,
    version        BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX device_codes_expires ON device_codes(expires_at);

CREATE TABLE grants (
    id               TEXT PRIMARY KEY,
    client_id        TEXT NOT NULL,
    user_id          TEXT NOT NULL,
    scope            TEXT NOT NULL,
    created_at       BIGINT NOT NULL,
    refresh_until    BIGINT NOT NULL,
    refreshable      BOOLEAN NOT NULL,
    access_issued_at BIGINT NOT NULL,
    access_validity  BIGINT NOT NULL,
    revoked_at       BIGINT
);
CREATE INDEX grants_user ON grants(user_id);
CREATE INDEX grants_refresh_until ON grants(refresh_until);

CREATE TABLE access_tokens (
    hash       BYTEA PRIMARY KEY,
    grant_id   TEXT NOT NULL REFERENCES grants(id) ON DELETE CASCADE,
    issued_at  BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX access_tokens_grant ON access_tokens(grant_id);

CREATE TABLE refresh_tokens (
    hash      BYTEA PRIMARY KEY,
    grant_id  TEXT NOT NULL REFERENCES grants(id) ON DELETE CASCADE,
    issued_at BIGINT NOT NULL,
    spent_at  BIGINT
);
CREATE INDEX refresh_tokens_grant ON refresh_tokens(grant_id);

CREATE TABLE throttle (
    key          TEXT PRIMARY KEY,
    failures     BIGINT NOT NULL,
    window_start BIGINT NOT NULL,
    locked_until BIGINT
);

CREATE TABLE events (
    seq        BIGINT PRIMARY KEY,
    at         BIGINT NOT NULL,
    kind       TEXT NOT NULL,
    identity   TEXT NOT NULL,
    client_id  TEXT NOT NULL,
    source     TEXT NOT NULL,
    request_id TEXT NOT NULL,
    object     TEXT NOT NULL,
    detail     TEXT NOT NULL,
    hash       BYTEA NOT NULL
);
CREATE INDEX events_at ON events(at);

CREATE TABLE event_head (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    seq  BIGINT NOT NULL,
    hash BYTEA NOT NULL
);
INSERT INTO event_head (id, seq, hash) VALUES (1, 0, decode(repeat('00', 32), 'hex'));
