-- One token layout (issue 29). Every token is found through its locator
-- since 0007; the grants of before it are ended here, so that no code path
-- reads tokens by their hash any more. A grant of before is one without a
-- slot (never given a new pair since 0007), or one that still has rows in
-- access_tokens or refresh_tokens (given its slot since, but its spent
-- refresh tokens of before are only recognised, as reuse, through those
-- rows: kept without them, a stolen one would be refused rather than end
-- the grant). Every grant 0007 or later made has its slot and no such row.
-- The grants are deleted, not revoked: an event cannot be written here (the
-- chain's hashes are computed by the server), and a revoked grant without
-- a slot would be the one grant still of the old layout. Their users sign
-- in again. The old tables go with them. The slot stays a nullable column
-- here (SQLite cannot change that in place); the store reads a NULL one as
-- corrupt. Mirrors migrations/postgres/0014_one_token_layout.sql.

DELETE FROM grants
WHERE slot IS NULL
   OR EXISTS (SELECT 1 FROM access_tokens t WHERE t.grant_id = grants.id)
   OR EXISTS (SELECT 1 FROM refresh_tokens t WHERE t.grant_id = grants.id);

DROP TABLE access_tokens;
DROP TABLE refresh_tokens;
