-- 0001_init: the ledger's tables. Applied inside one transaction, under the
-- migration advisory lock, with search_path set to the ledger's schema.
-- Ids, members and boards use COLLATE "C": bytewise order, the order Redis
-- uses for equal scores, and what paging by member relies on.

-- Every point event, reversal, correction and projection, once (event_id).
CREATE TABLE events (
    event_id      text COLLATE "C" PRIMARY KEY,
    kind          text NOT NULL CHECK (kind IN ('award', 'reversal', 'correction', 'projection')),
    family        text COLLATE "C" NOT NULL,
    period        text COLLATE "C" NOT NULL,
    member        text COLLATE "C" NOT NULL,
    dims          jsonb NOT NULL DEFAULT '{}',
    delta         bigint,           -- sum families: the delta asked for
    value         bigint,           -- max/min families: the value; projections: the total
    version       bigint,           -- projections: the upstream version
    reverses      text COLLATE "C", -- reversals: the event undone
    operator      text NOT NULL DEFAULT '',
    reason        text NOT NULL DEFAULT '',
    rules_version text NOT NULL DEFAULT '',
    received_at   timestamptz NOT NULL,
    occurred_at   timestamptz NOT NULL,
    recorded_at   timestamptz NOT NULL DEFAULT now(), -- the database's clock
    projected     boolean NOT NULL DEFAULT false,     -- Redis received the totals after it
    reversed_by   text COLLATE "C"                    -- set once, by the reversal that undid it
);
CREATE INDEX events_member ON events (family, period, member);
CREATE INDEX events_unprojected ON events (recorded_at) WHERE NOT projected;

-- What one event did to one board.
CREATE TABLE event_boards (
    event_id      text COLLATE "C" NOT NULL REFERENCES events (event_id),
    board         text COLLATE "C" NOT NULL, -- dimension: national, province:zj, ...
    applied       bigint NOT NULL,  -- points after − points before
    changed       boolean NOT NULL, -- false: max/min not improved, stale projection
    seq_before    bigint NOT NULL,  -- −1: the member was absent before
    seq_after     bigint NOT NULL,  -- −1: the member is absent after
    total_after   bigint NOT NULL,
    present_after boolean NOT NULL,
    version_after bigint NOT NULL,
    PRIMARY KEY (event_id, board)
);

-- The member's current state on each board: what Redis projects.
CREATE TABLE totals (
    family     text COLLATE "C" NOT NULL,
    period     text COLLATE "C" NOT NULL,
    board      text COLLATE "C" NOT NULL,
    member     text COLLATE "C" NOT NULL,
    points     bigint NOT NULL DEFAULT 0,
    version    bigint NOT NULL DEFAULT 0,  -- +1 per change (projections: the upstream version)
    seq        bigint NOT NULL DEFAULT -1, -- achievement seq (tie first); −1 when absent
    present    boolean NOT NULL DEFAULT false,
    live       bigint NOT NULL DEFAULT 0,  -- applied, not reversed changes (reverse.lua's #n)
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (family, period, board, member)
);

CREATE TABLE periods (
    family      text COLLATE "C" NOT NULL,
    period      text COLLATE "C" NOT NULL,
    state       text NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'frozen', 'settled', 'archived')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    frozen_at   timestamptz,
    settled_at  timestamptz,
    archived_at timestamptz,
    PRIMARY KEY (family, period)
);

-- Achievement numbers: taken under the row lock, so they follow commit order.
CREATE TABLE period_seq (
    family text COLLATE "C" NOT NULL,
    period text COLLATE "C" NOT NULL,
    next   bigint NOT NULL,
    PRIMARY KEY (family, period)
);

CREATE TABLE settlements (
    family     text COLLATE "C" NOT NULL,
    period     text COLLATE "C" NOT NULL,
    top        integer NOT NULL,
    boards     text[] NOT NULL,
    rank_mode  text NOT NULL CHECK (rank_mode IN ('competition', 'ordinal')),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (family, period)
);

CREATE TABLE standings (
    family   text COLLATE "C" NOT NULL,
    period   text COLLATE "C" NOT NULL,
    board    text COLLATE "C" NOT NULL,
    member   text COLLATE "C" NOT NULL,
    points   bigint NOT NULL,
    seq      bigint NOT NULL,
    position bigint NOT NULL, -- 0-based, unique per board
    rank     bigint NOT NULL,
    PRIMARY KEY (family, period, board, member)
);

CREATE TABLE award_outbox (
    family          text COLLATE "C" NOT NULL,
    period          text COLLATE "C" NOT NULL,
    board           text COLLATE "C" NOT NULL,
    member          text COLLATE "C" NOT NULL,
    rank            bigint NOT NULL,
    points          bigint NOT NULL,
    idempotency_key text NOT NULL UNIQUE, -- hex sha256 of family|period|board|member
    created_at      timestamptz NOT NULL DEFAULT now(),
    delivered_at    timestamptz,
    PRIMARY KEY (family, period, board, member)
);

-- Late events, kept for an operator's decision.
CREATE TABLE reviews (
    id            bigserial PRIMARY KEY,
    family        text COLLATE "C" NOT NULL,
    period        text COLLATE "C" NOT NULL,
    event_id      text COLLATE "C" NOT NULL DEFAULT '',
    event         jsonb NOT NULL,
    reason        text NOT NULL DEFAULT '',
    received_at   timestamptz NOT NULL,
    status        text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'accepted', 'rejected')),
    decided_by    text NOT NULL DEFAULT '',
    decided_at    timestamptz,
    correction_id text NOT NULL DEFAULT ''
);
-- A retried late event is kept once.
CREATE UNIQUE INDEX reviews_event ON reviews (family, period, event_id) WHERE event_id <> '';
CREATE INDEX reviews_period ON reviews (family, period, id);
