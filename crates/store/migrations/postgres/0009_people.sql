-- Groups in the rights model (issue 18). A group's rights on folders and its
-- places on integrations are held by each of its members, for as long as
-- they are one: every check of rights and of an integration's allowed users
-- reads the membership in the same statement, so a removal takes effect on
-- the next request.

-- When a directory or an OpenID provider last vouched for a person (their
-- sign-in through it, or a directory's look-up at a refresh); NULL for
-- local and machine users. A grant of an OpenID Connect person is refreshed
-- only within oidc.session_secs of it.
ALTER TABLE users ADD COLUMN signed_in_at BIGINT;

-- The client address of a grant's last token issue (its first exchange or
-- its last refresh): "from where" on the person's page of approved
-- applications. A refresh writes it in the statement that rotates the pair.
ALTER TABLE grants ADD COLUMN last_addr TEXT;

CREATE TABLE groups (
    id         TEXT PRIMARY KEY,                  -- random UUID, lower case
    name       TEXT NOT NULL,
    name_key   TEXT NOT NULL UNIQUE,              -- lower-cased name: names are case-insensitive
    created_at BIGINT NOT NULL
);

CREATE TABLE group_members (
    group_id TEXT NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
    user_id  TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    PRIMARY KEY (group_id, user_id)
);
CREATE INDEX group_members_user ON group_members(user_id);

CREATE TABLE group_rights (
    path_key TEXT NOT NULL REFERENCES folders(path_key) ON DELETE CASCADE,
    group_id TEXT NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
    rights   BIGINT NOT NULL,                     -- as folder_rights
    PRIMARY KEY (path_key, group_id)
);
CREATE INDEX group_rights_group ON group_rights(group_id);

CREATE TABLE integration_groups (
    client_id TEXT NOT NULL REFERENCES integrations(client_id) ON DELETE CASCADE,
    group_id  TEXT NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
    PRIMARY KEY (client_id, group_id)
);
CREATE INDEX integration_groups_group ON integration_groups(group_id);

-- OpenID Connect sign-ins started on the approval page: the state's hash,
-- the hash of the browser binding the start set as a cookie, the device's
-- user code, and its expiry. A callback takes its row in one conditional
-- write (`used`), so a state, and the nonce derived from it, serve once.
CREATE TABLE oidc_states (
    state_hash   BYTEA NOT NULL PRIMARY KEY,
    binding_hash BYTEA NOT NULL,
    user_code    TEXT NOT NULL,
    expires_at   BIGINT NOT NULL,
    used         BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX oidc_states_expires ON oidc_states(expires_at);
