-- Guessing limits counted before the work, and locks that cannot be turned
-- against a user (issue 17). A counter names the user name it limits
-- guesses against (`subject`, lower-cased), so `admin users list` can show
-- a lock and `admin users unlock` can clear it. The addresses a user name
-- has signed in from are remembered: guesses from elsewhere never lock the
-- name for them. The per-name password counters of before (`pw:user:…`)
-- are superseded by per-name-and-address ones and dropped.

ALTER TABLE throttle ADD COLUMN subject TEXT;
DELETE FROM throttle WHERE key LIKE 'pw:user:%';
UPDATE throttle SET subject = (SELECT u.name_key FROM users u WHERE 'code:user:' || u.id = throttle.key)
    WHERE key LIKE 'code:user:%';
CREATE INDEX throttle_subject ON throttle(subject);

CREATE TABLE sign_in_origins (
    name_key     TEXT NOT NULL,                   -- lower-cased user name
    addr         TEXT NOT NULL,                   -- client address
    last_success BIGINT NOT NULL,
    PRIMARY KEY (name_key, addr)
);
CREATE INDEX sign_in_origins_last ON sign_in_origins(last_success);
