-- The operators' board reads a market's jobs searching and under way, of an environment, on
-- every read: counted by area, and the longest waiting listed. Both indexes lead with the
-- market and the environment, in the order the tables list them (the board's index of jobs
-- under way had no environment, and the planner walked a merchant index for it instead).
CREATE INDEX jobs_searching_in_market
    ON jobs (market_id, environment, (coalesce(search_opened_at, search_opens_at, booked_at)))
    WHERE status = 'searching';
DROP INDEX jobs_under_way;
CREATE INDEX jobs_under_way_in_market ON jobs (market_id, environment, assigned_at)
    WHERE status IN ('assigned', 'in_transit');
