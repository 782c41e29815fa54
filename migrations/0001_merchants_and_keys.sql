-- Merchants and their API credentials. Secrets are stored only as a keyed hash.
CREATE TABLE merchants (
    id          uuid PRIMARY KEY,
    name        text NOT NULL CHECK (length(name) > 0),
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
    id           uuid PRIMARY KEY,
    merchant_id  uuid NOT NULL REFERENCES merchants (id),
    key          text NOT NULL UNIQUE,
    environment  text NOT NULL CHECK (environment IN ('test', 'live')),
    secret_hash  bytea NOT NULL,
    label        text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);

CREATE INDEX api_keys_merchant ON api_keys (merchant_id);
