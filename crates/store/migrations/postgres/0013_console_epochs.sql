-- A user's console epoch: every console session cookie carries the epoch it
-- was issued under, and a request is served only while the user's epoch is
-- still that one (no row: 0). Signing out, a password change, disabling the
-- user and an administrator's "end sessions" move it on by one, so every
-- copy of every console session of that user ends at once, on every replica.
CREATE TABLE console_epochs (
    user_id TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    epoch   BIGINT NOT NULL
);

