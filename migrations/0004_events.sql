-- Events: written in the same transaction as the state change that raised them (the
-- transactional outbox). The webhook engine fans each out to the subscribed endpoints.
CREATE TABLE events (
    id            uuid PRIMARY KEY,
    merchant_id   uuid NOT NULL REFERENCES merchants (id),
    environment   text NOT NULL CHECK (environment IN ('test', 'live')),
    name          text NOT NULL,
    job_id        uuid,
    occurred_at   timestamptz NOT NULL,
    -- Facts about the job (id, reference, market, currency, amounts, scheduled_for), if any.
    job           jsonb,
    -- Event-specific facts (courier, proof, reason, from, to, card...).
    details       jsonb NOT NULL DEFAULT '{}',
    recorded_at   timestamptz NOT NULL DEFAULT now(),
    -- Set once the webhook engine has made the deliveries for it.
    fanned_out_at timestamptz
);

CREATE INDEX events_awaiting_fan_out ON events (recorded_at) WHERE fanned_out_at IS NULL;
CREATE INDEX events_by_job ON events (job_id, occurred_at) WHERE job_id IS NOT NULL;
