-- Jobs (bookings), the idempotency keys of booking requests, and courier positions.

-- Account settings bookings read: the `notify_customer` default and proof requirements.
ALTER TABLE merchants
    ADD COLUMN notify_customer_default boolean NOT NULL DEFAULT false,
    ADD COLUMN proof_photo_required boolean NOT NULL DEFAULT false,
    ADD COLUMN proof_signature_required boolean NOT NULL DEFAULT false;

CREATE TABLE jobs (
    id                       uuid PRIMARY KEY,
    merchant_id              uuid NOT NULL REFERENCES merchants (id),
    environment              text NOT NULL CHECK (environment IN ('test', 'live')),
    quote_id                 uuid NOT NULL UNIQUE REFERENCES quotes (id),
    reference                text NOT NULL UNIQUE,
    tracking_token           text NOT NULL UNIQUE,
    status                   text NOT NULL,
    market_id                text NOT NULL,
    currency                 text NOT NULL,
    price_amount_minor       bigint NOT NULL,
    tax_amount_minor         bigint NOT NULL,
    vehicle                  text NOT NULL,
    pickup                   jsonb NOT NULL,
    dropoff                  jsonb NOT NULL,
    items                    jsonb NOT NULL DEFAULT '[]',
    items_subtotal_minor     bigint NOT NULL DEFAULT 0,
    discount_minor           bigint NOT NULL DEFAULT 0,
    items_total_minor        bigint NOT NULL DEFAULT 0,
    notify_customer          boolean NOT NULL,
    customer_notified_at     timestamptz,
    proof_photo_required     boolean NOT NULL,
    proof_signature_required boolean NOT NULL,
    proof                    jsonb,
    courier_id               uuid,
    booked_at                timestamptz NOT NULL,
    scheduled_for            timestamptz,
    -- When a pending job's search opens: twenty minutes before scheduled_for.
    search_opens_at          timestamptz,
    assigned_at              timestamptz,
    completed_at             timestamptz,
    cancellation_reason      text
);

-- The merchant's list: newest first, optionally by status.
CREATE INDEX jobs_merchant_recent ON jobs (merchant_id, environment, booked_at DESC, id DESC);
CREATE INDEX jobs_merchant_status ON jobs (merchant_id, environment, status, booked_at DESC);
-- The worker that opens searches.
CREATE INDEX jobs_search_due ON jobs (search_opens_at) WHERE status = 'pending';

-- A booking request's Idempotency-Key: inserted in the booking's own transaction, so a
-- concurrent twin waits for it and then replays the stored response.
CREATE TABLE idempotency_keys (
    merchant_id     uuid NOT NULL REFERENCES merchants (id),
    environment     text NOT NULL,
    key             text NOT NULL,
    request_hash    bytea NOT NULL,
    -- Filled before the transaction commits, so a committed key always has its response.
    response_status integer,
    response_body   jsonb,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (merchant_id, environment, key)
);
CREATE INDEX idempotency_keys_age ON idempotency_keys (created_at);

-- Where couriers are, as last reported.
CREATE TABLE courier_positions (
    courier_id uuid PRIMARY KEY,
    latitude   double precision NOT NULL,
    longitude  double precision NOT NULL,
    seen_at    timestamptz NOT NULL
);
