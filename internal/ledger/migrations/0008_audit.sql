-- 0008_audit: the audit log of administrative changes (GET /v1/audit).
-- Newest first by id; an erased member appears only as a keyed hash in
-- target (the gateway hashes it before it gets here).
CREATE TABLE audit_log (
    id                bigserial PRIMARY KEY,
    at                timestamptz NOT NULL,
    operator          text NOT NULL,
    declared_operator text NOT NULL DEFAULT '',
    action            text NOT NULL,
    target            text NOT NULL,
    reason            text NOT NULL DEFAULT ''
);
