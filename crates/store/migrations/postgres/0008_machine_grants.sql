-- Tokens for machines without a stored secret (issue 19): trusted JWT
-- issuers, the mappings that bind JWT claims or client certificates to a
-- machine identity, which identities are machines, and the replay record
-- of presented JWTs. Mirrors migrations/sqlite/0008_machine_grants.sql.

CREATE TABLE jwt_issuers (
    name         TEXT PRIMARY KEY,
    issuer       TEXT NOT NULL UNIQUE,             -- the `iss` claim, compared exactly
    keys_kind    TEXT NOT NULL CHECK (keys_kind IN ('jwks_url', 'discovery', 'jwks_file')),
    keys_source  TEXT NOT NULL,                    -- the URL or the file
    audiences    TEXT NOT NULL,                    -- one a line
    algorithms   TEXT NOT NULL,                    -- RS256,PS256,ES256,EdDSA
    clock_skew   BIGINT NOT NULL,                  -- seconds
    max_lifetime BIGINT NOT NULL,                  -- seconds
    created_at   BIGINT NOT NULL
);

CREATE TABLE machine_mappings (
    name          TEXT PRIMARY KEY,
    kind          TEXT NOT NULL CHECK (kind IN ('jwt', 'cert')),
    issuer        TEXT REFERENCES jwt_issuers(name),   -- jwt: the issuer's name
    conditions    TEXT NOT NULL,                       -- jwt: claim=pattern, one a line
    identity_from TEXT NOT NULL,                       -- jwt: a claim; cert: cn, email or upn
    ca_bundle     TEXT,                                -- cert: the approved CAs (PEM)
    max_scope     TEXT NOT NULL,
    created_at    BIGINT NOT NULL
);
CREATE INDEX machine_mappings_issuer ON machine_mappings(issuer);

-- The API integrations a mapping's identities may use.
CREATE TABLE mapping_clients (
    mapping   TEXT NOT NULL REFERENCES machine_mappings(name) ON DELETE CASCADE,
    client_id TEXT NOT NULL REFERENCES integrations(client_id) ON DELETE CASCADE,
    PRIMARY KEY (mapping, client_id)
);

-- Users that are machine identities (`jwt+<mapping>:<subject>`): they never
-- sign in with a password, and may use what their mapping allows.
CREATE TABLE machine_users (
    user_id TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    mapping TEXT NOT NULL
);

-- A presented JWT (its issuer and `jti`, or its signature's digest), kept
-- until the JWT expires: one conditional insert makes it single-use.
CREATE TABLE jwt_replay (
    issuer     TEXT NOT NULL,
    replay_key TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (issuer, replay_key)
);
CREATE INDEX jwt_replay_expires ON jwt_replay(expires_at);
