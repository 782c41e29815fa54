-- Each attempt of a delivery, for the portal's list of attempts and its health view. Failed
-- attempts are written as they are recorded; a successful attempt stays only on its delivery's
-- row (successes are recorded many to a statement, on the hot path) until a resend replaces it
-- there, when it is copied here. `attempt` numbers a delivery's attempts from 1.
CREATE TABLE webhook_attempts (
    delivery_id  uuid NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    attempt      integer NOT NULL,
    endpoint_id  uuid NOT NULL,
    attempted_at timestamptz NOT NULL,
    status_code  integer,
    response_ms  integer,
    error        text,
    excerpt      text,
    PRIMARY KEY (delivery_id, attempt)
);

CREATE INDEX webhook_attempts_by_endpoint ON webhook_attempts (endpoint_id, attempted_at);
