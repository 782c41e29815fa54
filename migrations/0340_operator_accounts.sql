-- Operators are people: the service's own staff sign in to the operator console with an
-- e-mail address, a password and a second factor (required), each with a role. Their accounts
-- are `people` rows (one per address, shared with any merchant team they are in); the operator
-- tokens stay, for the admin API and automation.
CREATE TABLE operator_members (
    person_id  uuid PRIMARY KEY REFERENCES people (id),
    role       text NOT NULL CHECK (role IN ('admin', 'operations', 'finance', 'viewer')),
    created_at timestamptz NOT NULL
);

-- An invitation to be an operator: a link holding a token (only its SHA-256 is kept), used
-- once, before it expires.
CREATE TABLE operator_invitations (
    id          uuid PRIMARY KEY,
    token_hash  bytea NOT NULL UNIQUE,
    email       text NOT NULL,
    email_key   text NOT NULL,
    role        text NOT NULL CHECK (role IN ('admin', 'operations', 'finance', 'viewer')),
    -- Who invited: the operator token's name, or the inviting operator's e-mail address.
    invited_by  text NOT NULL,
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    accepted_at timestamptz,
    accepted_by uuid REFERENCES people (id)
);

-- An operator console session is a person's now: `operator` is their address (what the audit
-- trail names), and `second_factor_pending` says the password was given but not yet the code
-- (or, with no second factor yet, its setting up). Sessions signed in with a token end here.
DELETE FROM operator_sessions;
ALTER TABLE operator_sessions
    DROP COLUMN credential_check,
    ADD COLUMN person_id uuid NOT NULL REFERENCES people (id),
    ADD COLUMN second_factor_pending boolean NOT NULL;

CREATE INDEX operator_sessions_person ON operator_sessions (person_id);
