-- The keyed fingerprint of the secret key this database was first used with (one row).
-- Credentials, webhook signing secrets and courier tokens are keyed with the secret key, so a
-- process with another key (another COURIER_DATA_DIR, say) would issue credentials no other
-- instance accepts. Every process compares its key's fingerprint with this one at start, and
-- refuses to start on a mismatch. The fingerprint is an HMAC under the key: it shows nothing
-- of the key.
CREATE TABLE secret_key_fingerprint (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    fingerprint bytea NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now()
);
