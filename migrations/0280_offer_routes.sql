-- Offers made together to one courier are a route: each job keeps its own offer row (one
-- open per job), and the route's offers share `route_id`, the id of its first offer, which is
-- the id the courier answers. The first offer also carries the route's stops in order.
ALTER TABLE courier_offers ADD COLUMN route_id uuid;
UPDATE courier_offers SET route_id = id;
ALTER TABLE courier_offers ALTER COLUMN route_id SET NOT NULL;
ALTER TABLE courier_offers ADD COLUMN stops jsonb;

-- One open route per courier (where there was one open offer): its first offer is unique.
DROP INDEX courier_offers_one_open_per_courier;
CREATE UNIQUE INDEX courier_offers_one_open_route_per_courier ON courier_offers (courier_id)
    WHERE status = 'open' AND id = route_id;
CREATE INDEX courier_offers_by_route ON courier_offers (route_id);

-- Whether the courier's app takes routes this shift (it says so going online): a courier that
-- does not is offered one job at a time, as before routes.
ALTER TABLE couriers ADD COLUMN takes_routes boolean NOT NULL DEFAULT false;
