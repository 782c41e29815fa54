-- The operator audit trail: who (the operator token's name, or the CLI user) did what to
-- which thing, when, with the values before and after. Rows are only ever inserted.
CREATE TABLE audit_log (
    id           uuid PRIMARY KEY,
    operator     text NOT NULL,
    action       text NOT NULL,
    target_type  text NOT NULL,
    target_id    text NOT NULL,
    -- The merchant concerned, when there is one, so a merchant's history can be filtered.
    merchant_id  uuid,
    before       jsonb,
    after        jsonb,
    occurred_at  timestamptz NOT NULL
);

CREATE INDEX audit_log_recent ON audit_log (occurred_at DESC, id DESC);
CREATE INDEX audit_log_by_target ON audit_log (target_type, target_id, occurred_at DESC);
CREATE INDEX audit_log_by_merchant ON audit_log (merchant_id, occurred_at DESC)
    WHERE merchant_id IS NOT NULL;
