-- Mirrors migrations/sqlite/0003_pairs.sql: grants record their newest
-- token pair and a version every change bumps; device codes remember their
-- grant; integrations may override the retry window.

ALTER TABLE grants ADD COLUMN refresh_hash BYTEA;
ALTER TABLE grants ADD COLUMN access_hash  BYTEA;
ALTER TABLE grants ADD COLUMN pair_used    BOOLEAN NOT NULL DEFAULT TRUE;
ALTER TABLE grants ADD COLUMN rotated_from BYTEA;
ALTER TABLE grants ADD COLUMN rotated_at   BIGINT;
ALTER TABLE grants ADD COLUMN version      BIGINT NOT NULL DEFAULT 0;
ALTER TABLE device_codes ADD COLUMN grant_id TEXT;
ALTER TABLE integrations ADD COLUMN retry_window BIGINT;

UPDATE grants SET refresh_hash = (SELECT t.hash FROM refresh_tokens t WHERE t.grant_id = grants.id AND t.spent_at IS NULL LIMIT 1),
                  access_hash = (SELECT a.hash FROM access_tokens a WHERE a.grant_id = grants.id ORDER BY a.issued_at DESC LIMIT 1);
