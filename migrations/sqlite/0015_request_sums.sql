-- Per-request sums of server runs (issue #41, item 7), derived at ingest
-- from the results CSV's per-request lists; NULL on batch runs, and on
-- server runs stored before this migration until `db rebuild` (run by
-- serve at start) derives them again from the stored bundles.
--   timed_requests   entries of e2e_request_latency_seconds_events
--   ttft_sum_s       Σ time to first token over those requests
--   e2e_sum_s        Σ end-to-end latency over those requests
--   mean_concurrency e2e_sum_s ÷ measurement_duration (Little's law)
--   prefill_energy_j gpu_energy_j × ttft_sum_s ÷ e2e_sum_s (an attribution by time)
ALTER TABLE runs ADD COLUMN timed_requests INTEGER;
ALTER TABLE runs ADD COLUMN ttft_sum_s REAL;
ALTER TABLE runs ADD COLUMN e2e_sum_s REAL;
ALTER TABLE runs ADD COLUMN mean_concurrency REAL;
ALTER TABLE runs ADD COLUMN prefill_energy_j REAL;

-- A configuration's and a group's medians of the two; their intervals
-- live in the `intervals` JSON beside the other figures'.
ALTER TABLE configurations ADD COLUMN concurrency_median REAL;
ALTER TABLE configurations ADD COLUMN prefill_share_median REAL;
ALTER TABLE leaderboard_groups ADD COLUMN concurrency_median REAL;
ALTER TABLE leaderboard_groups ADD COLUMN prefill_share_median REAL;

-- What `serve` asks at every start (submissions_to_derive): which server
-- runs still lack the sums. Empty once derived, so the question costs an
-- index probe per submission, not a read of every run.
CREATE INDEX runs_missing_request_sums ON runs(submission_id)
    WHERE scenario = 'server' AND e2e_sum_s IS NULL;
