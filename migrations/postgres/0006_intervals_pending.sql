-- `serve` asks on every start whether any configuration still lacks its
-- intervals (stored before 0005). Without an index that question scans the
-- whole table (1.7 s cold at 161x the demo); this partial index holds only
-- such rows, so the answer reads an index that is empty once rebuilt, and
-- writes (which always set the intervals) never touch it.
CREATE INDEX configurations_without_intervals ON configurations(id) WHERE intervals IS NULL;
