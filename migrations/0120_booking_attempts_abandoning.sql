-- An attempt being abandoned is marked before its hold is released at the provider, and
-- the mark is never taken back: whoever finds a marked attempt (a recovery pass, the request
-- that made it, another instance) finishes it as abandoned, never as a booking. Without the
-- mark, a pass after a crash between the release and the refusal would ask for the hold
-- again with the same provider key, read the provider's saved answer as a fresh hold, and
-- book the job on a cancelled one.
ALTER TABLE booking_attempts ADD COLUMN abandoning_since timestamptz;
