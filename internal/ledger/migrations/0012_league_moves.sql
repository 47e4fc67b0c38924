-- 0012_league_moves: a league's moves at a period's end are notices of their
-- own kind (one per member and period, key: hex sha256 of
-- "league.moved|family|period/member"), delivered to the awards webhook
-- like the period notices.
ALTER TABLE notices DROP CONSTRAINT notices_kind_check;
ALTER TABLE notices ADD CONSTRAINT notices_kind_check
    CHECK (kind IN ('period.frozen', 'period.settled', 'league.moved'));
