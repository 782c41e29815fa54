-- Bookings whose card hold goes to a provider over the network are made in three phases, so
-- no transaction stays open while the provider answers (seconds at worst):
--   1. the key is claimed, the quote reserved and an attempt written, in one transaction;
--   2. the provider is asked to hold the money, with no transaction open;
--   3. the outcome is written (the job, its charge and the stored answer; or the decline),
--      and the attempt deleted, in one transaction.
-- An attempt still here once its lease has run out was interrupted (a crash, a lost answer):
-- a recovery worker on any instance asks the provider again with the same idempotency key
-- and finishes it as the interrupted request would have.
CREATE TABLE booking_attempts (
    id                 uuid PRIMARY KEY,
    merchant_id        uuid NOT NULL REFERENCES merchants (id),
    environment        text NOT NULL CHECK (environment IN ('test', 'live')),
    idempotency_key    text NOT NULL,
    quote_id           uuid NOT NULL REFERENCES quotes (id),
    payment_method_id  uuid NOT NULL REFERENCES payment_methods (id),
    -- The provider's idempotency key of the hold: the same for every retry of the booking.
    hold_key           text NOT NULL,
    -- The job to write once the hold is settled, prepared (ids, reference, link) in phase 1.
    job                jsonb NOT NULL,
    created_at         timestamptz NOT NULL,
    leased_until       timestamptz NOT NULL,
    recoveries         integer NOT NULL DEFAULT 0,
    UNIQUE (merchant_id, environment, idempotency_key)
);

CREATE INDEX booking_attempts_due ON booking_attempts (leased_until);

-- The provider idempotency key of a charge's hold, when the booking chose it (so a hold
-- retried later reaches what the booking's own call may already have made).
ALTER TABLE charges ADD COLUMN hold_key text;

-- A call in flight is marked by a retry row leased to the caller, before it has failed at all.
ALTER TABLE charge_retries DROP CONSTRAINT charge_retries_attempts_check;
ALTER TABLE charge_retries ADD CONSTRAINT charge_retries_attempts_check CHECK (attempts >= 0);
