-- The jobs under way in a market, oldest assignment first: the operators' board.
CREATE INDEX jobs_under_way ON jobs (market_id, assigned_at)
    WHERE status IN ('assigned', 'in_transit');
