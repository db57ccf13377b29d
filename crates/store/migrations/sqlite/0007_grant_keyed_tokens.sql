-- Tokens that name their grant (issue 20). A token carries its grant's
-- `slot` and its pair's `generation` next to 128 random bits, tagged under
-- the server key; the grant row holds the keyed hashes of its newest pair
-- (as before) and of the few earlier access tokens still working
-- (`older_access`, at most four entries of 52 bytes: generation, hash,
-- issued, expires). A refresh rewrites that row and appends its event:
-- nothing else, no token index. Grants of before keep their rows in
-- access_tokens and refresh_tokens, which are read for tokens without a
-- locator until those grants end; a grant of before gets its slot at its
-- next new pair. Mirrors migrations/postgres/0007_grant_keyed_tokens.sql.

ALTER TABLE grants ADD COLUMN slot INTEGER;
ALTER TABLE grants ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;
ALTER TABLE grants ADD COLUMN older_access BLOB;
CREATE UNIQUE INDEX grants_slot ON grants(slot);

-- Where the log starts once its oldest events are archived
-- (`admin events archive`): the last archived event's number and hash.
CREATE TABLE event_checkpoint (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    seq  INTEGER NOT NULL,
    hash BLOB NOT NULL
) STRICT;
