-- 0009_member_rights: finding a member's rows without a scan, for erasure
-- and export (DELETE /v1/members/{member}, GET /v1/members/{member}/export).
-- The member's boards are its totals rows; its events are found through the
-- (family, period) pairs of those rows and events_member. Totals rows change
-- their member never, so updates stay HOT; a new row adds one index entry.
CREATE INDEX totals_by_member ON totals (member);
CREATE INDEX standings_by_member ON standings (member);
CREATE INDEX award_outbox_by_member ON award_outbox (member);
