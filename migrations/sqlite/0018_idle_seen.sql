-- The lowest power sample of a submission's server iterations (issue
-- #54): a board between requests draws its loaded idle, so the lowest
-- over a GPU's accepted submissions is the loaded idle the community has
-- seen. Kept per submission on write; a GPU's page and the idle-floor
-- check read one GPU's accepted submissions through the index below,
-- never its runs.
ALTER TABLE submissions ADD COLUMN idle_seen_w DOUBLE PRECISION;
UPDATE submissions SET idle_seen_w = (
    SELECT MIN(r.power_min_w) FROM runs r
    WHERE r.submission_id = submissions.id AND r.scenario = 'server' AND r.power_samples > 0
);
CREATE INDEX submissions_idle_seen ON submissions(gpu_id, status, is_demo, idle_seen_w, submitter_id);
