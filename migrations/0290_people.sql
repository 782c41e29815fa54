-- People who sign in to the merchant console, replacing sign-in with an API key: one account
-- per e-mail address (its password an Argon2id hash), a member of one or more merchants'
-- teams with a role. API keys stay credentials for machines.
CREATE TABLE people (
    id                    uuid PRIMARY KEY,
    -- As the person gave it; `email_key` (trimmed, lower-cased) is what sign-in looks up.
    email                 text NOT NULL,
    email_key             text NOT NULL UNIQUE,
    name                  text NOT NULL,
    -- A PHC string: `$argon2id$v=19$m=…,t=…,p=…$salt$hash`.
    password_hash         text NOT NULL,
    -- Failed sign-ins since the last good one; at the service's limit the account is blocked
    -- until `sign_in_blocked_until` and the count starts again.
    failed_sign_ins       integer NOT NULL DEFAULT 0,
    sign_in_blocked_until timestamptz,
    created_at            timestamptz NOT NULL,
    last_sign_in_at       timestamptz
);

CREATE TABLE merchant_members (
    merchant_id uuid NOT NULL REFERENCES merchants (id),
    person_id   uuid NOT NULL REFERENCES people (id),
    role        text NOT NULL CHECK (role IN ('owner', 'admin', 'developer', 'support', 'viewer')),
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (merchant_id, person_id)
);

CREATE INDEX merchant_members_person ON merchant_members (person_id);

-- An invitation to join a merchant's team: a link holding a token (only its SHA-256 is kept),
-- used once, before it expires, unless withdrawn.
CREATE TABLE invitations (
    id           uuid PRIMARY KEY,
    token_hash   bytea NOT NULL UNIQUE,
    merchant_id  uuid NOT NULL REFERENCES merchants (id),
    email        text NOT NULL,
    email_key    text NOT NULL,
    role         text NOT NULL CHECK (role IN ('owner', 'admin', 'developer', 'support', 'viewer')),
    -- Who invited: the operator's name, or the inviting person's e-mail address.
    invited_by   text NOT NULL,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    accepted_at  timestamptz,
    accepted_by  uuid REFERENCES people (id),
    withdrawn_at timestamptz
);

CREATE INDEX invitations_merchant ON invitations (merchant_id, created_at DESC);

-- A console session is now a person's, in one merchant's team and one environment at a time
-- (switched from the page header). Sessions signed in with a key end here.
DELETE FROM console_sessions;
ALTER TABLE console_sessions
    DROP COLUMN key_id,
    ADD COLUMN id uuid NOT NULL UNIQUE,
    ADD COLUMN person_id uuid NOT NULL REFERENCES people (id),
    ADD COLUMN environment text NOT NULL CHECK (environment IN ('test', 'live')),
    -- When the person last gave their password: key changes ask for it again after a while.
    ADD COLUMN authenticated_at timestamptz NOT NULL,
    -- What the sessions page shows, to tell one's sessions apart.
    ADD COLUMN user_agent text NOT NULL,
    ADD COLUMN client_address text NOT NULL,
    ADD COLUMN last_seen_at timestamptz NOT NULL;

CREATE INDEX console_sessions_person ON console_sessions (person_id);
