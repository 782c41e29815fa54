-- Mail to people (invitations, password resets, notices to a team's owners): the outbox the
-- sender works from, written in the transaction of the change that owes the mail, so a crash
-- never loses one; claimed with FOR UPDATE SKIP LOCKED and a lease. Each mail's Message-ID is
-- its id, fixed when it is written: a send repeated after a crash between the relay's answer
-- and the note of it is the same message to every receiving server.
CREATE TABLE mail_outbox (
    id           uuid PRIMARY KEY,
    to_address   text NOT NULL,
    subject      text NOT NULL,
    body         text NOT NULL,
    -- What it is about, for the log: invitation, password_reset, owner_notice.
    kind         text NOT NULL,
    -- queued: waiting to be sent; sent: the relay took it; failed: refused for good, or every
    -- attempt failed.
    status       text NOT NULL CHECK (status IN ('queued', 'sent', 'failed')),
    attempts     integer NOT NULL DEFAULT 0,
    due_at       timestamptz,
    leased_until timestamptz,
    last_error   text,
    created_at   timestamptz NOT NULL,
    sent_at      timestamptz
);

CREATE INDEX mail_outbox_due ON mail_outbox (due_at) WHERE status = 'queued';

-- A password reset: a link holding a token (only its SHA-256 is kept), mailed to the person,
-- used once before it expires.
CREATE TABLE password_resets (
    token_hash bytea PRIMARY KEY,
    person_id  uuid NOT NULL REFERENCES people (id),
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);

CREATE INDEX password_resets_person ON password_resets (person_id);
