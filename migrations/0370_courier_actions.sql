-- The keys couriers' moves were made under (`Idempotency-Key` on the courier API, the
-- action id of the courier app's forms): recorded in the move's own transaction, so a move
-- sent again with its key is answered without being applied twice.
CREATE TABLE courier_actions (
    courier_id uuid NOT NULL REFERENCES couriers (id),
    key text NOT NULL,
    -- accept, decline, collected, delivered or returned
    action text NOT NULL,
    -- the offer (accept, decline) or the job (the rest)
    target_id uuid NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (courier_id, key)
);

-- Old keys are dropped by age.
CREATE INDEX courier_actions_age ON courier_actions (created_at);
