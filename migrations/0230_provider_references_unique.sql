-- An event names a payment or a refund by the provider's reference: each reference belongs to
-- one charge (per environment) and one refund, so an event can never land on another. The
-- unique indexes replace the plain ones that found them.
DROP INDEX charges_by_authorisation;
CREATE UNIQUE INDEX charges_by_authorisation ON charges (environment, authorisation_ref)
    WHERE authorisation_ref IS NOT NULL;
DROP INDEX refunds_by_provider_ref;
CREATE UNIQUE INDEX refunds_by_provider_ref ON refunds (provider_ref)
    WHERE provider_ref IS NOT NULL;
