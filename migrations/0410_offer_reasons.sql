-- Why the planner offered a job to its courier (`courier_domain::dispatch::OfferReason` as
-- JSON), for operators; none on offers made before it was kept.
ALTER TABLE courier_offers ADD COLUMN reason jsonb;
