-- Texts to merchants' customers: the tracking link, sent when the courier collects. One row
-- per job and kind, so a repeated collection or a restart never texts twice; the row is the
-- outbox the sender works from, claimed with FOR UPDATE SKIP LOCKED and a lease.
CREATE TABLE customer_texts (
    id                  uuid PRIMARY KEY,
    job_id              uuid NOT NULL REFERENCES jobs (id),
    kind                text NOT NULL CHECK (kind IN ('tracking_link')),
    environment         text NOT NULL CHECK (environment IN ('test', 'live')),
    to_phone            text NOT NULL,
    sender              text NOT NULL,
    body                text NOT NULL,
    -- queued: waiting to be sent; sent: the gateway took it; simulated: a test-environment
    -- job, recorded and never sent; skipped: not sendable (`skip_reason`); failed: the
    -- gateway refused it for good or every attempt failed.
    status              text NOT NULL
        CHECK (status IN ('queued', 'sent', 'simulated', 'skipped', 'failed')),
    skip_reason         text,
    attempts            integer NOT NULL DEFAULT 0,
    due_at              timestamptz,
    leased_until        timestamptz,
    last_error          text,
    provider_message_id text,
    created_at          timestamptz NOT NULL,
    sent_at             timestamptz,
    UNIQUE (job_id, kind)
);

CREATE INDEX customer_texts_due ON customer_texts (due_at) WHERE status = 'queued';
