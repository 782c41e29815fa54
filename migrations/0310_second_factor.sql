-- A second factor for people: TOTP (RFC 6238) with recovery codes. The TOTP secret is kept
-- sealed with a key derived from the service's secret key; `totp_last_step` is the time step
-- of the last code accepted, so a code is used once.
ALTER TABLE people
    ADD COLUMN totp_secret bytea,
    ADD COLUMN totp_pending_secret bytea,
    ADD COLUMN totp_enabled_at timestamptz,
    ADD COLUMN totp_last_step bigint;

-- Ten per person, made when TOTP is turned on, each used once; only a SHA-256 is kept.
CREATE TABLE recovery_codes (
    person_id uuid NOT NULL REFERENCES people (id),
    code_hash bytea NOT NULL,
    used_at   timestamptz,
    PRIMARY KEY (person_id, code_hash)
);

-- An owner may require a second factor of the whole team.
ALTER TABLE merchants ADD COLUMN require_second_factor boolean NOT NULL DEFAULT false;

-- A session whose person gave the password but not yet the code: it opens no page but the
-- code's.
ALTER TABLE console_sessions ADD COLUMN second_factor_pending boolean NOT NULL DEFAULT false;
