-- Named keys (`Driver:Name`): every data key is wrapped by one named key,
-- either the master key (`Software:Default`) or a key held in a PKCS#11
-- token. Entries sealed before this migration are all under data keys the
-- master key wraps, whatever `Keyname` the client sent, so they now say so.

ALTER TABLE data_keys ADD COLUMN key_name TEXT NOT NULL DEFAULT 'Software:Default';
CREATE INDEX data_keys_name ON data_keys(key_name, id);
UPDATE vault_entries SET key_name = 'Software:Default';
CREATE INDEX vault_entries_key_name ON vault_entries(key_name);
