-- Manual approval (issue 33): a CA template's or a folder policy's
-- `Manual Approval` makes a Request or Renew wait here for an approver
-- instead of issuing. One row per certificate object: the request as
-- given (JSON, app::service::certificates::Parked: the CSR or the central
-- key's parameters, never a password), who asked, and its state: waiting
-- (Stage 500, `Pending workflow resolution`) or rejected (InError, the
-- reason in `status`). Approval deletes the row in the transaction that
-- issues (conditional on `version`: two approvals issue once); Reset
-- deletes it; Retry sets a rejected one waiting again. Goes with its folder.
ALTER TABLE cert_authorities ADD COLUMN manual_approval BOOLEAN NOT NULL DEFAULT FALSE;
CREATE TABLE cert_pending (
    path_key     TEXT PRIMARY KEY REFERENCES folders(path_key) ON DELETE CASCADE,
    ca_key       TEXT NOT NULL,
    request      TEXT NOT NULL,
    renewal      BOOLEAN NOT NULL,
    requested_by TEXT NOT NULL,
    requested_at BIGINT NOT NULL,
    rejected     BOOLEAN NOT NULL,
    status       TEXT NOT NULL,
    version      BIGINT NOT NULL
);
