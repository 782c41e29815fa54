-- Passkeys (WebAuthn): for a person with a second factor, a faster way to give it than a code.
-- Each is kept as the relying-party library writes it (its public key, signature counter and
-- flags; never a secret); the app's codes and the recovery codes stay the fallback.
CREATE TABLE passkeys (
    id            uuid PRIMARY KEY,
    person_id     uuid NOT NULL REFERENCES people (id),
    credential_id bytea NOT NULL UNIQUE,
    name          text NOT NULL,
    passkey       jsonb NOT NULL,
    created_at    timestamptz NOT NULL,
    last_used_at  timestamptz
);

CREATE INDEX passkeys_person ON passkeys (person_id);

-- A ceremony waiting for the browser's answer: its state, used once, for a few minutes.
CREATE TABLE passkey_ceremonies (
    id         uuid PRIMARY KEY,
    person_id  uuid NOT NULL REFERENCES people (id),
    purpose    text NOT NULL CHECK (purpose IN ('register', 'authenticate')),
    state      jsonb NOT NULL,
    expires_at timestamptz NOT NULL
);
