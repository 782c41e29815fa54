-- The webhook portal: an endpoint's description, and a rotated secret's overlap. During the
-- overlap the previous secret (sealed like the current one) signs beside the new one, so a
-- receiver can switch secrets without refusing a delivery.
ALTER TABLE webhook_endpoints
    ADD COLUMN description text,
    ADD COLUMN previous_secret_ciphertext bytea,
    ADD COLUMN previous_secret_until timestamptz;
