-- Price books: uploaded components with their settings, per market, and their activations.

-- Component bytes, stored once per distinct component.
CREATE TABLE plugin_components (
    sha256       text PRIMARY KEY CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    world        text NOT NULL,
    bytes        bytea NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);

-- An uploaded price book: a component plus a settings document, validated before it is kept.
-- `version` numbers the uploads of one market: what operators name when activating.
CREATE TABLE price_book_uploads (
    market_id    text NOT NULL,
    version      integer NOT NULL CHECK (version > 0),
    sha256       text NOT NULL REFERENCES plugin_components (sha256),
    name         text NOT NULL,
    version_label text NOT NULL,
    settings     jsonb NOT NULL,
    uploaded_by  text NOT NULL,
    uploaded_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (market_id, version)
);

-- Every activation gets the market's next price_book_version, which quotes carry; a rollback
-- is a new activation of an earlier upload. The latest activation of a market is the active one.
CREATE TABLE price_book_activations (
    market_id          text NOT NULL,
    price_book_version integer NOT NULL CHECK (price_book_version > 0),
    upload_version     integer NOT NULL,
    activated_by       text NOT NULL,
    activated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (market_id, price_book_version),
    FOREIGN KEY (market_id, upload_version) REFERENCES price_book_uploads (market_id, version)
);
