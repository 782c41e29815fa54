-- Sessions of the couriers' app (`/courier/`), keyed by the SHA-256 of their cookie's token.
-- A session ended early (signed out, or its courier suspended) is kept until it would have
-- expired, so the app can say why it ended.
CREATE TABLE courier_sessions (
    token_hash bytea PRIMARY KEY,
    courier_id uuid NOT NULL REFERENCES couriers (id),
    csrf_token text NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    ended_at timestamptz,
    -- signed_out or suspended
    ended_because text,
    CHECK ((ended_at IS NULL) = (ended_because IS NULL))
);

CREATE INDEX courier_sessions_live ON courier_sessions (courier_id) WHERE ended_at IS NULL;
CREATE INDEX courier_sessions_expiry ON courier_sessions (expires_at);

-- One-time sign-in codes an operator gives a courier (shown as a code and a link), kept as
-- their SHA-256; a courier has at most one unused code: a new one replaces it.
CREATE TABLE courier_sign_in_codes (
    code_hash bytea PRIMARY KEY,
    courier_id uuid NOT NULL REFERENCES couriers (id),
    issued_by text NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);

CREATE INDEX courier_sign_in_codes_of_courier ON courier_sign_in_codes (courier_id);
