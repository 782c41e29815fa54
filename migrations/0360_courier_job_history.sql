-- A courier's jobs, the latest first: the operators' page of a courier.
CREATE INDEX jobs_courier_history ON jobs (courier_id, assigned_at DESC) WHERE courier_id IS NOT NULL;
