-- Webhook endpoints and their delivery records (the webhook engine, spec sections 4 and 6).
CREATE TABLE webhook_endpoints (
    id                   uuid PRIMARY KEY,
    merchant_id          uuid NOT NULL REFERENCES merchants (id),
    environment          text NOT NULL CHECK (environment IN ('test', 'live')),
    url                  text NOT NULL,
    -- Subscribed event names; empty means every event.
    events               text[] NOT NULL DEFAULT '{}',
    status               text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended')),
    -- The signing secret, encrypted (XChaCha20-Poly1305: 24-byte nonce, then ciphertext).
    secret_ciphertext    bytea NOT NULL,
    created_at           timestamptz NOT NULL DEFAULT now(),
    -- Events recorded before this instant are never sent here: set at creation and on
    -- resume, so events raised while suspended stay unsent.
    active_since         timestamptz NOT NULL DEFAULT now(),
    last_succeeded_at    timestamptz,
    last_failed_at       timestamptz,
    consecutive_failures integer NOT NULL DEFAULT 0,
    suspension_reason    text
);

CREATE INDEX webhook_endpoints_by_owner ON webhook_endpoints (merchant_id, environment);

-- One row per (endpoint, event); `attempts` counts the sends. The shaped body is kept so
-- every retry sends the same bytes.
CREATE TABLE webhook_deliveries (
    id                   uuid PRIMARY KEY,
    endpoint_id          uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id             uuid NOT NULL REFERENCES events (id),
    event_name           text NOT NULL,
    occurred_at          timestamptz NOT NULL,
    body                 bytea NOT NULL,
    status               text NOT NULL DEFAULT 'pending'
                         CHECK (status IN ('pending', 'delivered', 'failed', 'cancelled')),
    attempts             integer NOT NULL DEFAULT 0,
    next_attempt_at      timestamptz,
    -- A worker's claim: only the holder of `lease_token` may send or record an attempt.
    lease_until          timestamptz,
    lease_token          uuid,
    delivered_at         timestamptz,
    response_status_code integer,
    last_error           text,
    created_at           timestamptz NOT NULL DEFAULT now(),
    UNIQUE (endpoint_id, event_id)
);

CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at)
    WHERE status = 'pending';
CREATE INDEX webhook_deliveries_recent ON webhook_deliveries (endpoint_id, created_at DESC);
