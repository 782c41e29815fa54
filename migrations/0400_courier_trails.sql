-- Where each courier has been: a point at most every 15 seconds from its reports, kept for
-- 7 days, for the operators' courier page. `courier_positions` keeps only the latest.
CREATE TABLE courier_trail_points (
    courier_id  uuid NOT NULL REFERENCES couriers (id) ON DELETE CASCADE,
    seen_at     timestamptz NOT NULL,
    latitude    double precision NOT NULL,
    longitude   double precision NOT NULL,
    PRIMARY KEY (courier_id, seen_at)
);

CREATE INDEX courier_trail_points_by_age ON courier_trail_points (seen_at);
