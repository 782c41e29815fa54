-- Refunds are written before the provider is asked, with a provider idempotency key fixed at
-- that moment (never derived from what was refunded before, which moves as other refunds
-- land): an answer lost after the provider paid is asked for again under the same key, by the
-- operator's retry or the retry worker, and recorded once.
CREATE TABLE refunds (
    id               uuid PRIMARY KEY,
    charge_id        uuid NOT NULL REFERENCES charges (id),
    amount_minor     bigint NOT NULL CHECK (amount_minor > 0),
    idempotency_key  text NOT NULL UNIQUE,
    status           text NOT NULL CHECK (status IN ('requested', 'succeeded', 'declined')),
    operator         text NOT NULL,
    provider_ref     text,
    decline_code     text,
    -- Calls made without an answer.
    attempts         integer NOT NULL DEFAULT 0,
    last_error       text,
    requested_at     timestamptz NOT NULL,
    -- While a call is in flight, the refund is left to its caller until then.
    leased_until     timestamptz,
    -- When an unanswered refund is asked again.
    due_at           timestamptz,
    settled_at       timestamptz
);

CREATE INDEX refunds_of_charge ON refunds (charge_id);
CREATE INDEX refunds_due ON refunds (due_at) WHERE status = 'requested';
