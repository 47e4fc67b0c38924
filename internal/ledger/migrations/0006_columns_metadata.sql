-- 0006_columns_metadata: sort columns and entry metadata in ledger mode
-- (issue 13 parts 1-2). The ledger keeps what Redis-only mode keeps in the
-- per-shard cols and md hashes, so rebuild and reconcile reproduce them.
-- (0002 is unused; numbering goes forward.)

-- What each event carried: its column values (NULL: a family without
-- columns, a reversal or a removal) and its metadata JSON, byte for byte
-- ('' : none).
ALTER TABLE events ADD COLUMN columns bigint[];
ALTER TABLE events ADD COLUMN metadata text NOT NULL DEFAULT '';

-- The member's current columns (in the family's column order; NULL while
-- absent or without columns) and the metadata of the event that last changed
-- the standing (max/min: the event that set the best).
ALTER TABLE totals ADD COLUMN columns bigint[];
ALTER TABLE totals ADD COLUMN metadata text NOT NULL DEFAULT '';

-- The columns before and after the event on the board (NULL: absent), what
-- a reversal of a sum event gives back (columns.lua keeps the same in its
-- event record).
ALTER TABLE event_boards ADD COLUMN cols_before bigint[];
ALTER TABLE event_boards ADD COLUMN cols_after bigint[];
