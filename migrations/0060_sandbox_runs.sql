-- The sandbox simulator: one run per test-environment job, written in the booking's
-- transaction, driving the job like a courier would (see the README, "Sandbox simulator").

CREATE TABLE sandbox_runs (
    job_id           uuid PRIMARY KEY REFERENCES jobs (id),
    scenario         text NOT NULL CHECK (scenario IN ('happy_path', 'no_courier',
                         'courier_reassigned', 'returned', 'cancelled_by_operations', 'manual')),
    stage            text NOT NULL CHECK (stage IN ('searching', 'to_pickup', 'at_pickup',
                         'to_dropoff', 'at_dropoff', 'returning', 'done')),
    -- The simulated courier on the job (an opaque id, no courier row); null while searching.
    courier_id       uuid,
    reassigned       boolean NOT NULL DEFAULT false,
    -- The drive under way: its road shape as [[lat, lon], ...] and its length in simulated
    -- seconds; the courier's position is read off it by the time spent on the stage.
    leg              jsonb,
    leg_seconds      integer,
    stage_started_at timestamptz NOT NULL,
    -- When the next step is due; null in manual mode and once done.
    next_at          timestamptz
);

CREATE INDEX sandbox_runs_due ON sandbox_runs (next_at) WHERE next_at IS NOT NULL;
CREATE INDEX sandbox_runs_under_way ON sandbox_runs (job_id)
    WHERE stage <> 'done' AND courier_id IS NOT NULL;
