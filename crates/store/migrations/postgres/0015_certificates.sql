-- Certificates (issue 33). An issuing CA is a row here and a folder of the
-- tree (\VED\Policy\CA Templates\NAME); its private key is sealed under the
-- key ring's current data key (key_name, key_id), never stored in the clear.
CREATE TABLE cert_authorities (
    name_key      TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    dn            TEXT NOT NULL,
    algorithm     TEXT NOT NULL,
    subject       TEXT NOT NULL,
    cert_der      BYTEA NOT NULL,
    key_name      TEXT NOT NULL,
    key_id        BIGINT NOT NULL,
    key_sealed    BYTEA NOT NULL,
    validity_days BIGINT NOT NULL,
    created_at    BIGINT NOT NULL
);

-- A folder's certificate policy (JSON: each value with its Locked flag),
-- inherited down the tree. Goes with its folder.
CREATE TABLE cert_policies (
    path_key TEXT PRIMARY KEY REFERENCES folders(path_key) ON DELETE CASCADE,
    policy   TEXT NOT NULL
);

-- A certificate object: the folder at PolicyDN\ObjectName (its GUID is the
-- folder's) and what search needs of its current certificate. The
-- certificate, its key and its CSR are vault entries owned by the folder
-- (VaultType 2, 256, 512; archived ones 1073741826, 1073742080,
-- 1073742336), named here by id. One row per DN: a new issuance replaces it
-- in the same transaction that archives the entries it named.
CREATE TABLE certificates (
    path_key      TEXT PRIMARY KEY,
    ca_key        TEXT NOT NULL,
    cn            TEXT NOT NULL,
    sans          TEXT NOT NULL,
    serial        TEXT NOT NULL,
    thumbprint    TEXT NOT NULL,
    valid_from    BIGINT NOT NULL,
    valid_to      BIGINT NOT NULL,
    cert_vault_id BIGINT NOT NULL,
    key_vault_id  BIGINT,
    csr_vault_id  BIGINT,
    disabled      BOOLEAN NOT NULL,
    revoked       BOOLEAN NOT NULL,
    version       BIGINT NOT NULL,
    created_at    BIGINT NOT NULL,
    issued_at     BIGINT NOT NULL
);
CREATE INDEX certificates_thumbprint ON certificates(thumbprint);

-- Revoked serials per CA: the CRL is signed from these rows when asked
-- (one row per revocation, never one growing blob); rows whose
-- certificate expired are left out of it.
CREATE TABLE cert_revocations (
    ca_key     TEXT NOT NULL,
    serial     TEXT NOT NULL,
    revoked_at BIGINT NOT NULL,
    reason     BIGINT NOT NULL,
    not_after  BIGINT NOT NULL,
    PRIMARY KEY (ca_key, serial)
);
