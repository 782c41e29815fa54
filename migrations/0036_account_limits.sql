-- Account settings for the operator: the SMS sender name customers see, and per-merchant
-- request budgets (requests per minute per key; NULL means the service-wide default).
ALTER TABLE merchants
    ADD COLUMN sms_sender_name text
        CHECK (sms_sender_name ~ '^[A-Za-z0-9]{3,11}$' AND sms_sender_name ~ '[A-Za-z]'),
    ADD COLUMN rate_limit_quotes_per_minute integer CHECK (rate_limit_quotes_per_minute > 0),
    ADD COLUMN rate_limit_bookings_per_minute integer CHECK (rate_limit_bookings_per_minute > 0),
    ADD COLUMN rate_limit_reads_per_minute integer CHECK (rate_limit_reads_per_minute > 0);

-- The audit trail filtered by operator or action, newest first.
CREATE INDEX audit_log_by_operator ON audit_log (operator, occurred_at DESC);
CREATE INDEX audit_log_by_action ON audit_log (action, occurred_at DESC);
