-- The payment provider's notifications, once its adapter has verified them. The provider's id
-- is the key: a notification sent again (providers resend until answered) is applied once,
-- and one that arrives before the move it confirms is known here (the provider can answer a
-- call and notify about it at once) is kept and applied when that move is recorded.
CREATE TABLE provider_events (
    environment   text NOT NULL CHECK (environment IN ('test', 'live')),
    event_id      text NOT NULL,
    -- What the provider's `pending` answer named: the payment's reference, or the refund's;
    -- for a stored card, the customer's id.
    reference     text NOT NULL,
    -- held, hold-failed, captured, capture-failed, released, release-failed, refunded,
    -- refund-failed, card-stored.
    kind          text NOT NULL,
    -- The event as the adapter read it (its failure text, decline or stored card).
    event         jsonb NOT NULL,
    received_at   timestamptz NOT NULL,
    applied_at    timestamptz,
    -- Times it matched nothing yet, and when it is tried again.
    tries         integer NOT NULL DEFAULT 0,
    next_try_at   timestamptz,
    PRIMARY KEY (environment, event_id)
);

CREATE INDEX provider_events_unapplied ON provider_events (next_try_at)
    WHERE applied_at IS NULL;

-- Charges and refunds are found by the reference the provider's event names.
CREATE INDEX charges_by_authorisation ON charges (environment, authorisation_ref)
    WHERE authorisation_ref IS NOT NULL;
CREATE INDEX refunds_by_provider_ref ON refunds (provider_ref) WHERE provider_ref IS NOT NULL;
-- A stored-card notification names the customer.
CREATE INDEX payment_customers_by_id ON payment_customers (environment, customer_id);
