-- A test event, sent from the merchant console to one endpoint: the fan-out gives it to that
-- endpoint only (whatever its event filter), and to no other. Nullable without a default:
-- added without rewriting the table.
ALTER TABLE events ADD COLUMN only_endpoint_id uuid;
