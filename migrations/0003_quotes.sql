-- Quotes: a price for a journey, valid for a limited time, spent once by a booking.
CREATE TABLE quotes (
    id                 uuid PRIMARY KEY,
    merchant_id        uuid NOT NULL REFERENCES merchants (id),
    environment        text NOT NULL CHECK (environment IN ('test', 'live')),
    market_id          text NOT NULL,
    currency           text NOT NULL,
    vehicle            text NOT NULL,
    pickup_latitude    double precision NOT NULL,
    pickup_longitude   double precision NOT NULL,
    pickup_postcode    text,
    dropoff_latitude   double precision NOT NULL,
    dropoff_longitude  double precision NOT NULL,
    dropoff_postcode   text,
    weight_grams       integer NOT NULL CHECK (weight_grams >= 0),
    scheduled_for      timestamptz,
    -- The moment the price is for: scheduled_for, or the quote's creation.
    priced_for         timestamptz NOT NULL,
    demand_permille    bigint NOT NULL,
    distance_metres    integer NOT NULL,
    duration_seconds   integer NOT NULL,
    total_amount_minor bigint NOT NULL,
    breakdown          jsonb NOT NULL,
    price_book_version integer NOT NULL,
    created_at         timestamptz NOT NULL,
    expires_at         timestamptz NOT NULL,
    used_at            timestamptz
);

-- Re-pricing a market's recent quotes when comparing price books.
CREATE INDEX quotes_market_recent ON quotes (market_id, created_at DESC);
