-- 0013_tournaments: the tournament registry of ledger mode. One row per
-- tournament (its definition as the API stored it); version orders every
-- change: creations and cancellations take it from tournament_versions under
-- one advisory lock, so versions commit in order and max(version) tells a
-- gateway that its copy is stale.
CREATE SEQUENCE tournament_versions;
CREATE TABLE tournaments (
    id           text PRIMARY KEY,
    def          text NOT NULL,
    active_until bigint,            -- unix ms it stops counting toward max_active; NULL: never
    cancelled    boolean NOT NULL DEFAULT false,
    version      bigint NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now());
CREATE INDEX tournaments_version ON tournaments (version);

-- The seats of ledger mode: who joined which tournament period. The seat
-- bound is checked in Redis (join.lua); the ledger keeps the joins so that
-- a rebuild restores them with the standings.
CREATE TABLE tournament_joins (
    tournament text COLLATE "C" NOT NULL,
    period     text COLLATE "C" NOT NULL,
    member     text COLLATE "C" NOT NULL,
    joined_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tournament, period, member));
CREATE INDEX tournament_joins_member ON tournament_joins (member);
