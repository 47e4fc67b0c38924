-- 0007_totals_fillfactor: room for HOT updates of totals (issue 10).
--
-- Every group updates the totals rows of its members, and a hot member's row
-- many times a second. An update whose new version does not fit on the row's
-- page is not HOT: it adds an entry to the primary key (four text columns)
-- and leaves one more dead entry there. With the default fillfactor (100)
-- about a third of the updates in `make bench-ledger` were not HOT; pages
-- filled to 70 % keep room for the new versions, and pruning on the page
-- frees the dead ones. Applies to pages written from now on (no rewrite).
ALTER TABLE totals SET (fillfactor = 70);
