-- What a delivery's last attempt heard back, for the merchant's delivery log: when it was
-- made, how long the receiver took to answer (or to fail), and the start of the answer's body
-- (at most 1 KiB, as text). Nullable without defaults: added without rewriting the table.
ALTER TABLE webhook_deliveries
    ADD COLUMN last_attempt_at timestamptz,
    ADD COLUMN response_ms integer,
    ADD COLUMN response_excerpt text;
