-- Issue #14: intervals for every figure a page shows, not only energy per
-- token (energy per request, throughput, TTFT p50, ITL), as one JSON value
-- of leaderboard::FigureIntervals per configuration and per group. NULL on
-- rows stored before this migration until `db rebuild` (run by serve on
-- start when any is missing) fills them in.
ALTER TABLE configurations ADD COLUMN intervals TEXT;
ALTER TABLE leaderboard_groups ADD COLUMN intervals TEXT;
