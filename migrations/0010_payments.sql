-- Cards on file and charges. Card numbers are never stored: only the provider's reference.

-- The provider's customer for a merchant in one environment (where its cards are attached).
CREATE TABLE payment_customers (
    merchant_id  uuid NOT NULL REFERENCES merchants (id),
    environment  text NOT NULL CHECK (environment IN ('test', 'live')),
    customer_id  text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (merchant_id, environment)
);

CREATE TABLE payment_methods (
    id            uuid PRIMARY KEY,
    merchant_id   uuid NOT NULL REFERENCES merchants (id),
    environment   text NOT NULL CHECK (environment IN ('test', 'live')),
    provider_ref  text NOT NULL,
    customer_id   text NOT NULL,
    brand         text NOT NULL,
    last_four     text NOT NULL,
    expiry_month  integer NOT NULL,
    expiry_year   integer NOT NULL,
    -- `active` works; `dead` stopped working for good (`dead_reason` says why).
    status        text NOT NULL CHECK (status IN ('active', 'dead')),
    is_default    boolean NOT NULL DEFAULT false,
    attached_at   timestamptz NOT NULL,
    dead_reason   text,
    died_at       timestamptz,
    -- Removed by the merchant: hidden and never chosen again, but kept so an open charge
    -- on it can still be completed.
    removed_at    timestamptz,
    CHECK ((status = 'dead') = (dead_reason IS NOT NULL)),
    CHECK (NOT is_default OR (status = 'active' AND removed_at IS NULL))
);

-- At most one default card per merchant and environment.
CREATE UNIQUE INDEX payment_methods_one_default
    ON payment_methods (merchant_id, environment) WHERE is_default;
CREATE INDEX payment_methods_by_merchant
    ON payment_methods (merchant_id, environment, attached_at DESC);

-- One charge per job. `job_id` has no foreign key yet: bookings add it with the jobs table.
CREATE TABLE charges (
    id                     uuid PRIMARY KEY,
    merchant_id            uuid NOT NULL REFERENCES merchants (id),
    environment            text NOT NULL CHECK (environment IN ('test', 'live')),
    job_id                 uuid NOT NULL UNIQUE,
    payment_method_id      uuid NOT NULL REFERENCES payment_methods (id),
    status                 text NOT NULL
        CHECK (status IN ('pending', 'authorised', 'captured', 'voided', 'failed', 'refunded')),
    currency               text NOT NULL,
    amount_minor           bigint NOT NULL CHECK (amount_minor > 0),
    refunded_amount_minor  bigint NOT NULL DEFAULT 0
        CHECK (refunded_amount_minor >= 0 AND refunded_amount_minor <= amount_minor),
    -- The provider's references: of the hold, and of the captured payment.
    authorisation_ref      text,
    payment_ref            text,
    -- What was asked for while the hold was still pending: done once the hold is placed.
    after_hold             text CHECK (after_hold IN ('capture', 'void')),
    decline_code           text,
    last_error             text,
    raised_at              timestamptz NOT NULL,
    authorised_at          timestamptz,
    captured_at            timestamptz,
    voided_at              timestamptz,
    failed_at              timestamptz,
    refunded_at            timestamptz,
    updated_at             timestamptz NOT NULL
);

CREATE INDEX charges_recent ON charges (merchant_id, environment, raised_at DESC);

-- Every move of every charge, with its time and who made it.
CREATE TABLE charge_moves (
    id            bigserial PRIMARY KEY,
    charge_id     uuid NOT NULL REFERENCES charges (id),
    from_status   text,
    to_status     text NOT NULL,
    amount_minor  bigint,
    provider_ref  text,
    detail        text,
    actor         text NOT NULL,
    at            timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX charge_moves_by_charge ON charge_moves (charge_id, id);

-- Provider calls to try again: one per charge, claimed with FOR UPDATE SKIP LOCKED and a
-- lease so several instances share the work without doing any of it twice.
CREATE TABLE charge_retries (
    charge_id     uuid PRIMARY KEY REFERENCES charges (id),
    operation     text NOT NULL CHECK (operation IN ('authorise', 'capture', 'void')),
    attempts      integer NOT NULL CHECK (attempts >= 1),
    due_at        timestamptz NOT NULL,
    leased_until  timestamptz,
    last_error    text
);

CREATE INDEX charge_retries_due ON charge_retries (due_at);
