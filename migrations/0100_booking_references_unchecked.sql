-- The rows a quote or a booking writes no longer check what they name with foreign keys;
-- the rows they name are never removed instead.
--
-- Each foreign-key check is a query run at the end of the writing statement that locks the
-- parent row (FOR KEY SHARE). A booking made about a dozen: its merchant, quote, card, job
-- and charge. Without them, PostgreSQL's CPU per booking was 16-29% lower and bookings rose
-- 12-29% (BENCHMARKS.md, "Where PostgreSQL's CPU goes").
--
-- What the keys guaranteed still holds:
--   * every such row takes what it names from rows its own transaction has just read,
--     locked or written: the merchant of the authenticated key (whose own key to merchants
--     stays), the quote it locked FOR UPDATE, the card it chose, the job and charge the
--     same statement writes;
--   * merchants, quotes, payment methods, jobs and charges are never deleted, and their ids
--     never change: the triggers below refuse it, so nothing a row names can disappear.
-- Configuration rows (keys, payment customers, webhook endpoints) and charge retries keep
-- their keys.

CREATE FUNCTION refuse_removal() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% rows are kept: other rows name them', TG_TABLE_NAME
        USING ERRCODE = 'restrict_violation';
END
$$;

CREATE TRIGGER merchants_kept BEFORE DELETE OR UPDATE OF id ON merchants
    FOR EACH ROW EXECUTE FUNCTION refuse_removal();
CREATE TRIGGER merchants_not_truncated BEFORE TRUNCATE ON merchants
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_removal();
CREATE TRIGGER quotes_kept BEFORE DELETE OR UPDATE OF id ON quotes
    FOR EACH ROW EXECUTE FUNCTION refuse_removal();
CREATE TRIGGER quotes_not_truncated BEFORE TRUNCATE ON quotes
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_removal();
CREATE TRIGGER payment_methods_kept BEFORE DELETE OR UPDATE OF id ON payment_methods
    FOR EACH ROW EXECUTE FUNCTION refuse_removal();
CREATE TRIGGER payment_methods_not_truncated BEFORE TRUNCATE ON payment_methods
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_removal();
CREATE TRIGGER jobs_kept BEFORE DELETE OR UPDATE OF id ON jobs
    FOR EACH ROW EXECUTE FUNCTION refuse_removal();
CREATE TRIGGER jobs_not_truncated BEFORE TRUNCATE ON jobs
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_removal();
CREATE TRIGGER charges_kept BEFORE DELETE OR UPDATE OF id ON charges
    FOR EACH ROW EXECUTE FUNCTION refuse_removal();
CREATE TRIGGER charges_not_truncated BEFORE TRUNCATE ON charges
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_removal();

ALTER TABLE quotes DROP CONSTRAINT quotes_merchant_id_fkey;
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_merchant_id_fkey;
ALTER TABLE booking_attempts DROP CONSTRAINT booking_attempts_merchant_id_fkey;
ALTER TABLE booking_attempts DROP CONSTRAINT booking_attempts_quote_id_fkey;
ALTER TABLE booking_attempts DROP CONSTRAINT booking_attempts_payment_method_id_fkey;
ALTER TABLE jobs DROP CONSTRAINT jobs_merchant_id_fkey;
ALTER TABLE jobs DROP CONSTRAINT jobs_quote_id_fkey;
ALTER TABLE events DROP CONSTRAINT events_merchant_id_fkey;
ALTER TABLE sandbox_runs DROP CONSTRAINT sandbox_runs_job_id_fkey;
ALTER TABLE charges DROP CONSTRAINT charges_merchant_id_fkey;
ALTER TABLE charges DROP CONSTRAINT charges_payment_method_id_fkey;
ALTER TABLE charge_moves DROP CONSTRAINT charge_moves_charge_id_fkey;
