-- Holds of abandoned bookings whose release the provider accepted without confirming it
-- (`pending`): kept until the provider says the release happened. A release the provider then
-- reports failed is asked for again, under a new key for each round (`<hold key>_release_<n>`),
-- since the provider answers a repeat of the failed request's key with its first answer.
CREATE TABLE abandoned_holds (
    environment text NOT NULL CHECK (environment IN ('test', 'live')),
    -- The provider's reference of the payment.
    reference text NOT NULL,
    hold_key text NOT NULL,
    -- Which release request is the latest: 1 is `<hold key>_release`.
    round integer NOT NULL DEFAULT 1 CHECK (round >= 1),
    -- Release calls of this round that found the provider unreachable.
    attempts integer NOT NULL DEFAULT 0,
    -- When the next release request is due; null while the provider's answer is awaited or
    -- once released.
    due_at timestamptz,
    leased_until timestamptz,
    last_error text,
    abandoned_at timestamptz NOT NULL,
    released_at timestamptz,
    PRIMARY KEY (environment, reference),
    CHECK (released_at IS NULL OR due_at IS NULL)
);

CREATE INDEX abandoned_holds_due ON abandoned_holds (due_at) WHERE due_at IS NOT NULL;
