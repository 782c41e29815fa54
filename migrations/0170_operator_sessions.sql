-- Sessions of the operator console (`/ops/`), signed in with an operator token. Only the
-- SHA-256 of the session's token is kept. `credential_check` binds the session to the token it
-- was opened with (SHA-256 of the session's token and the operator token's digest, never the
-- operator token itself): a session ends at `expires_at`, at sign-out, or when that token is no
-- longer configured.
CREATE TABLE operator_sessions (
    token_hash        bytea PRIMARY KEY,
    operator          text NOT NULL,
    credential_check  bytea NOT NULL,
    -- Every form of the session carries it; a post without it is refused.
    csrf_token        text NOT NULL,
    created_at        timestamptz NOT NULL,
    expires_at        timestamptz NOT NULL
);

CREATE INDEX operator_sessions_expiry ON operator_sessions (expires_at);
