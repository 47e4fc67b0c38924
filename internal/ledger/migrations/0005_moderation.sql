-- 0005_moderation: removing members from boards (issue 13 part 3) and the
-- score history (part 5).

-- A removal is a ledger event of its own kind: rebuild and reconcile read the
-- totals it leaves (absent), and later events start the member afresh.
ALTER TABLE events DROP CONSTRAINT events_kind_check;
ALTER TABLE events ADD CONSTRAINT events_kind_check
    CHECK (kind IN ('award', 'reversal', 'correction', 'projection', 'removal'));

-- The order in which events changed a board: taken when the event's
-- event_boards row is inserted, which happens under the member's totals row
-- lock, so for one (board, member) it follows commit order (and the group's
-- order inside one group). Rows from before this migration keep NULL: they
-- sort before every later row (the history then orders them by version).
-- No volatile default on ADD COLUMN: the table is not rewritten.
CREATE SEQUENCE event_boards_ord;
ALTER TABLE event_boards ADD COLUMN ord bigint;
ALTER TABLE event_boards ALTER COLUMN ord SET DEFAULT nextval('event_boards_ord');
