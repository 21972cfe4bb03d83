-- Request counters for rate limits, one row per bucket (e.g. "submit/ip/203.0.113.7"):
-- the fixed window it counts in (unix seconds of its start) and the hits in it.
-- In the database, so that several instances on one PostgreSQL share the limits.
CREATE TABLE rate_counters (
    bucket TEXT PRIMARY KEY,
    window_start BIGINT NOT NULL,
    hits BIGINT NOT NULL
);
CREATE INDEX rate_counters_window ON rate_counters (window_start);
