-- When a job's parcel will be ready at its pickup (null: as soon as the job is due), and the
-- merchant's default preparation time (null: none).
ALTER TABLE jobs ADD COLUMN pickup_ready_at timestamptz;
ALTER TABLE merchants ADD COLUMN preparation_minutes integer
    CHECK (preparation_minutes BETWEEN 0 AND 240);

-- A search's deadline counts from when the job is due: its search opening, its scheduled time
-- or its ready time, whichever is last.
CREATE INDEX jobs_search_deadline ON jobs
    (greatest(coalesce(search_opened_at, search_opens_at, booked_at), scheduled_for, pickup_ready_at))
    WHERE status = 'searching';
