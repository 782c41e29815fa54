-- The operator console's payments: every merchant's charges newest first (filtered by
-- environment and status as it reads them), and the newest refunds.
CREATE INDEX charges_newest ON charges (raised_at DESC, id DESC);
CREATE INDEX refunds_newest ON refunds (requested_at DESC, id DESC);
