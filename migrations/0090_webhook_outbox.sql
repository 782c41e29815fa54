-- The delivery outbox is written several times per delivery (made, then delivered) and
-- drained as fast as it fills.
--
-- A delivery's id is derived from its event and its endpoint, so the primary key already keeps
-- (endpoint, event) unique: the second unique index only cost a write per delivery.
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_endpoint_id_event_id_key;

-- Vacuumed and analysed after a small share of changes rather than the default fifth of the
-- table: a busy outbox otherwise carries more dead versions than live ones, and its plans are
-- made from statistics of a table a fraction of its size.
ALTER TABLE webhook_deliveries SET (
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_insert_scale_factor = 0.02,
    autovacuum_analyze_scale_factor = 0.02
);
ALTER TABLE events SET (
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_insert_scale_factor = 0.02,
    autovacuum_analyze_scale_factor = 0.02
);

-- A delivery carries what it needs of its event (name, time, shaped body), and events are never
-- deleted: the foreign key only cost a lookup and a row lock on the event per delivery made.
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_event_id_fkey;
