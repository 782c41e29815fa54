-- Sessions of the merchant console (`/console/`), signed in with an API key and its secret.
-- Only the SHA-256 of the session's token is kept. A session ends at `expires_at`, at sign-out,
-- or when its key is revoked (every lookup joins the key and refuses a revoked one).
CREATE TABLE console_sessions (
    token_hash   bytea PRIMARY KEY,
    merchant_id  uuid NOT NULL REFERENCES merchants (id),
    key_id       uuid NOT NULL REFERENCES api_keys (id),
    -- Every form of the session carries it; a post without it is refused.
    csrf_token   text NOT NULL,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL
);

CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);
