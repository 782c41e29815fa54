-- Where a merchant is written to about billing: a setting of theirs, told to the payment
-- provider's card form (contract 2.2.0) for a provider that wants an email on its customer.
ALTER TABLE merchants ADD COLUMN contact_email text
    CHECK (contact_email IS NULL OR length(contact_email) BETWEEN 3 AND 254);
