-- Merchant console forms act once. Every form the console draws carries a random `once` token;
-- the first post of it claims the token for the session's merchant and environment, acts, and
-- keeps its answer here: a redirect's target, or the page the browser then fetches with a GET
-- (redirect after post). A repeat of the post acts on nothing and is sent to that answer.
CREATE TABLE console_form_answers (
    merchant_id  uuid NOT NULL REFERENCES merchants (id),
    environment  text NOT NULL CHECK (environment IN ('test', 'live')),
    once_token   uuid NOT NULL,
    -- The form's path: where a repeat whose answer is not kept is pointed.
    form_path    text NOT NULL,
    claimed_at   timestamptz NOT NULL,
    -- Set once the first post has its answer; null while it is being made (or was lost).
    answered_at  timestamptz,
    -- A redirect's target.
    location     text,
    -- A page's HTML, for pages that show no secret.
    page         text,
    PRIMARY KEY (merchant_id, environment, once_token)
);

CREATE INDEX console_form_answers_age ON console_form_answers (claimed_at);
