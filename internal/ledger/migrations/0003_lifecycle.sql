-- 0003_lifecycle: the self-running lifecycle (issue 14). Fencing tokens of
-- the lease that lets one gateway at a time run the scheduler and the award
-- delivery; delivery state of awards; period notices for the same webhook.

-- One row per lease name: its token grows by one at every acquisition.
CREATE TABLE leases (
    name     text COLLATE "C" PRIMARY KEY,
    token    bigint NOT NULL,
    holder   text NOT NULL,
    taken_at timestamptz NOT NULL DEFAULT now()
);

-- Delivery of awards: pending until a receiver answered 2xx (webhook) or a
-- consumer acknowledged it (ack); failed after max_attempts, until retried.
ALTER TABLE award_outbox
    ADD COLUMN state           text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    ADD COLUMN attempts        integer NOT NULL DEFAULT 0,
    ADD COLUMN next_attempt_at timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN last_error      text NOT NULL DEFAULT '',
    ADD COLUMN delivered_via   text NOT NULL DEFAULT '' CHECK (delivered_via IN ('', 'webhook', 'ack', 'mark'));
UPDATE award_outbox SET state = 'delivered', delivered_via = 'mark' WHERE delivered_at IS NOT NULL;
CREATE INDEX award_outbox_due ON award_outbox (next_attempt_at) WHERE state = 'pending';
CREATE INDEX award_outbox_state ON award_outbox (family, period, state);

-- period.frozen and period.settled, once each per period (key: hex sha256 of
-- kind|family|period), delivered like awards.
CREATE TABLE notices (
    key             text PRIMARY KEY,
    kind            text NOT NULL CHECK (kind IN ('period.frozen', 'period.settled')),
    family          text COLLATE "C" NOT NULL,
    period          text COLLATE "C" NOT NULL,
    payload         jsonb NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    state           text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error      text NOT NULL DEFAULT '',
    delivered_at    timestamptz
);
CREATE INDEX notices_due ON notices (next_attempt_at) WHERE state = 'pending';
