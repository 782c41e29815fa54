-- What reconciliation found: where the provider's state of a payment and ours disagree, or a
-- money move the provider has not answered past the retry policy's count. One open row per
-- environment, kind and subject (our charge's id, or the provider's reference of a payment we
-- have no charge for); resolved when a later check of the same subject agrees.
CREATE TABLE payment_mismatches (
    id             uuid PRIMARY KEY,
    environment    text NOT NULL CHECK (environment IN ('test', 'live')),
    kind           text NOT NULL,
    subject        text NOT NULL,
    charge_id      uuid REFERENCES charges (id),
    provider_ref   text,
    ours           text NOT NULL,
    theirs         text NOT NULL,
    first_seen_at  timestamptz NOT NULL,
    last_seen_at   timestamptz NOT NULL,
    resolved_at    timestamptz
);

CREATE UNIQUE INDEX payment_mismatches_open ON payment_mismatches (environment, kind, subject)
    WHERE resolved_at IS NULL;

-- Charges raised in a window, for reconciliation.
CREATE INDEX charges_raised ON charges (environment, raised_at);
