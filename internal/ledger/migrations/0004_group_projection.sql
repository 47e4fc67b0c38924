-- 0004_group_projection: cheaper group commits (issue 10).
--
-- One pending-projection row per committed group instead of a flag update per
-- event: a group's events are inserted already marked projected, and the ids
-- of those whose totals Redis must still learn are listed in one row, written
-- in the group's transaction and deleted once the group's projection landed
-- (Unprojected reads both: events WHERE NOT projected, and the ids listed
-- here). Reversals and projections keep the per-event flag.
CREATE TABLE projection_pending (
    id          bigserial PRIMARY KEY,
    event_ids   text[] NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX projection_pending_recorded ON projection_pending (recorded_at);

-- event_boards rows are written in the same statement batch as their event
-- rows, by the only writers of both; the per-row foreign-key check (an index
-- probe and a row lock on the event just inserted) bought nothing.
ALTER TABLE event_boards DROP CONSTRAINT IF EXISTS event_boards_event_id_fkey;
