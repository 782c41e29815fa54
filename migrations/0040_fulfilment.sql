-- Fulfilment: couriers and their credentials, offers, proof files, and the settlements a job's
-- ending owes its charge.

CREATE TABLE couriers (
    id              uuid PRIMARY KEY,
    name            text NOT NULL,
    phone           text NOT NULL,
    vehicle         text NOT NULL
        CHECK (vehicle IN ('bicycle', 'electric_bicycle', 'motorcycle', 'car', 'van')),
    market_id       text NOT NULL,
    -- `active` may work; `suspended` is refused by the courier API and never offered jobs.
    status          text NOT NULL CHECK (status IN ('active', 'suspended')),
    online          boolean NOT NULL DEFAULT false,
    -- The courier credential: the key is looked up, the secret kept as a keyed hash only.
    credential_key  text NOT NULL UNIQUE,
    secret_hash     bytea NOT NULL,
    created_at      timestamptz NOT NULL,
    suspended_at    timestamptz,
    suspension_reason text
);

CREATE INDEX couriers_by_market ON couriers (market_id, created_at DESC);
CREATE INDEX courier_positions_box ON courier_positions (latitude, longitude);

-- When a job last entered `searching`: its dispatch deadline counts from here.
ALTER TABLE jobs ADD COLUMN search_opened_at timestamptz;
CREATE INDEX jobs_searching ON jobs (coalesce(search_opened_at, search_opens_at, booked_at))
    WHERE status = 'searching';
CREATE INDEX jobs_by_courier ON jobs (courier_id) WHERE status IN ('assigned', 'in_transit');

-- A job offered to one courier. Never shown to merchants.
CREATE TABLE courier_offers (
    id          uuid PRIMARY KEY,
    job_id      uuid NOT NULL REFERENCES jobs (id),
    courier_id  uuid NOT NULL REFERENCES couriers (id),
    -- Road travel time from the courier to the pickup when offered.
    travel_seconds integer NOT NULL,
    status      text NOT NULL
        CHECK (status IN ('open', 'accepted', 'declined', 'expired', 'withdrawn')),
    offered_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    answered_at timestamptz,
    -- A job is offered to each courier at most once.
    UNIQUE (job_id, courier_id)
);

-- At most one open offer per job, and per courier: a second dispatcher loses the insert.
CREATE UNIQUE INDEX courier_offers_one_open_per_job ON courier_offers (job_id) WHERE status = 'open';
CREATE UNIQUE INDEX courier_offers_one_open_per_courier ON courier_offers (courier_id)
    WHERE status = 'open';
CREATE INDEX courier_offers_expiry ON courier_offers (expires_at) WHERE status = 'open';

-- Proof of delivery files, served to the job's merchant.
CREATE TABLE proof_files (
    job_id       uuid NOT NULL REFERENCES jobs (id),
    kind         text NOT NULL CHECK (kind IN ('photo', 'signature')),
    content_type text NOT NULL,
    size_bytes   integer NOT NULL CHECK (size_bytes > 0),
    bytes        bytea NOT NULL,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (job_id, kind)
);

-- What a job's ending owes its charge (capture or void), written in the transaction of the
-- ending. Done at once after commit; a row left behind by a crash is done by a worker.
CREATE TABLE job_settlements (
    job_id        uuid PRIMARY KEY REFERENCES jobs (id),
    operation     text NOT NULL CHECK (operation IN ('capture', 'void')),
    due_at        timestamptz NOT NULL,
    leased_until  timestamptz,
    last_error    text
);

CREATE INDEX job_settlements_due ON job_settlements (due_at);
