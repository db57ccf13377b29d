-- The request path reads one context and makes one conditional write.
-- Grants record their newest token pair and a version that every change of
-- it bumps; writes are conditional on the version they read. The pair's
-- origin (the refresh token whose rotation produced it, and when) and
-- whether it was used decide the retry of a lost answer. Device codes
-- remember the grant they were redeemed into; integrations may override
-- the retry window.

ALTER TABLE grants ADD COLUMN refresh_hash BLOB;            -- the one refresh token of the grant that works
ALTER TABLE grants ADD COLUMN access_hash  BLOB;            -- the newest access token
ALTER TABLE grants ADD COLUMN pair_used    INTEGER NOT NULL DEFAULT 1;
ALTER TABLE grants ADD COLUMN rotated_from BLOB;
ALTER TABLE grants ADD COLUMN rotated_at   INTEGER;
ALTER TABLE grants ADD COLUMN version      INTEGER NOT NULL DEFAULT 0;
ALTER TABLE device_codes ADD COLUMN grant_id TEXT;
ALTER TABLE integrations ADD COLUMN retry_window INTEGER;

UPDATE grants SET refresh_hash = (SELECT t.hash FROM refresh_tokens t WHERE t.grant_id = grants.id AND t.spent_at IS NULL LIMIT 1),
                  access_hash = (SELECT a.hash FROM access_tokens a WHERE a.grant_id = grants.id ORDER BY a.issued_at DESC LIMIT 1);
