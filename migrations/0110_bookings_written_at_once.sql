-- A test booking approved on the spot is written by one statement outside any explicit
-- transaction: its idempotency key (with the stored answer), its quote marked used, the job,
-- its event, its sandbox run and its charge. What it read first (the quote, the merchant's
-- settings, the card) came from an earlier statement without locks, so the statement checks
-- what could have changed meanwhile and gives up whole when it did:
--   * the key, inserted ON CONFLICT DO NOTHING: a twin holding it is waited for;
--   * the quote, marked used only while it is unused: a concurrent booking of it is waited
--     for, then seen.
-- Giving up is raising this error from the statement's final query, which undoes every write
-- the statement made. The quote and card it names are rows that are never removed (0100).

CREATE FUNCTION booking_conflict(reason text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    IF reason IS NOT NULL THEN
        RAISE EXCEPTION '%', reason USING ERRCODE = 'CB409';
    END IF;
    RETURN true;
END
$$;
