-- How often the provider reported a capture or release it had accepted as failed (Adyen's
-- CAPTURE_FAILED, a failed CANCELLATION). The move asked for again after such a report needs a
-- provider idempotency key of its own: under the first, the provider only answers its first
-- answer ("received") again, and no new request is ever made.
ALTER TABLE charges ADD COLUMN provider_failures integer NOT NULL DEFAULT 0
    CHECK (provider_failures >= 0);
