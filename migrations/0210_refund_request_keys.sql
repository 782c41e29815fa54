-- The operator's `Idempotency-Key` of a refund (the API's header, the console form's one-time
-- token): the same key finds the same refund, settled or not, so a repeat never pays twice.
-- Keys are the caller's across all charges: one used for another charge or amount is refused.
ALTER TABLE refunds ADD COLUMN request_key text;
CREATE UNIQUE INDEX refunds_request_key ON refunds (request_key) WHERE request_key IS NOT NULL;
