-- Issue #12: protocol-aware groups, one submission per run content, and a
-- read model kept up to date by every write.

-- The protocol the runs followed (JSON of domain::Protocol) and the digest
-- of the harness files' contents. NULL on rows stored before this
-- migration until `db rebuild` (run by serve on start) fills them in.
ALTER TABLE submissions ADD COLUMN protocol TEXT;
ALTER TABLE submissions ADD COLUMN content_sha256 TEXT;
-- Set by `db rebuild` on a submission whose run content an older one
-- already holds (stored before the rule existed); such rows join no group.
ALTER TABLE submissions ADD COLUMN duplicate_of TEXT REFERENCES submissions(id);
ALTER TABLE submissions ADD COLUMN iterations BIGINT NOT NULL DEFAULT 0;
ALTER TABLE submissions ADD COLUMN power_samples BIGINT NOT NULL DEFAULT 0;
CREATE UNIQUE INDEX submissions_content ON submissions(content_sha256);
CREATE INDEX submissions_gpu ON submissions(gpu_id, status, received_at);
-- Covering: a group's members need only these of their submission.
CREATE INDEX submissions_member ON submissions(id, status, received_at, submitter_id, duplicate_of);
UPDATE submissions SET
    iterations = (SELECT COUNT(*) FROM runs r WHERE r.submission_id = submissions.id),
    power_samples = (SELECT CAST(COALESCE(SUM(power_samples), 0) AS BIGINT) FROM runs r WHERE r.submission_id = submissions.id);

-- What the read model needs of each configuration, as columns.
ALTER TABLE configurations ADD COLUMN group_key TEXT;
ALTER TABLE configurations ADD COLUMN ept_lo DOUBLE PRECISION;
ALTER TABLE configurations ADD COLUMN ept_hi DOUBLE PRECISION;
ALTER TABLE configurations ADD COLUMN ept_conf DOUBLE PRECISION;
ALTER TABLE configurations ADD COLUMN epr_median DOUBLE PRECISION;
ALTER TABLE configurations ADD COLUMN ttft_median DOUBLE PRECISION;
ALTER TABLE configurations ADD COLUMN itl_median DOUBLE PRECISION;
-- Covering: recomputing a group reads its members from the index alone.
CREATE INDEX configurations_group ON configurations(group_key, submission_id, iterations, ept_median_j, ept_lo,
    ept_hi, ept_conf, ept_cv, epr_median, throughput_median, power_mean_median_w, ttft_median, itl_median);

-- One row per group ever seen: what it is. Also the row a writer locks
-- before recomputing the group (PostgreSQL: SELECT ... FOR UPDATE).
CREATE TABLE group_keys (
    group_key       TEXT PRIMARY KEY,
    gpu_id          TEXT NOT NULL,
    gpu_name        TEXT NOT NULL,
    model           TEXT NOT NULL,
    scenario        TEXT NOT NULL,
    lambda_qps      DOUBLE PRECISION,
    protocol_id     TEXT NOT NULL,
    protocol_label  TEXT NOT NULL,
    is_reference    BOOLEAN NOT NULL,
    origin          TEXT NOT NULL CHECK (origin IN ('real', 'demo')),
    size_class      TEXT
);

-- The group figures, for accepted members and for accepted + in review.
CREATE TABLE leaderboard_groups (
    group_key          TEXT NOT NULL REFERENCES group_keys(group_key),
    visibility         TEXT NOT NULL CHECK (visibility IN ('accepted', 'with_review')),
    gpu_id             TEXT NOT NULL,
    gpu_name           TEXT NOT NULL,
    model              TEXT NOT NULL,
    scenario           TEXT NOT NULL,
    lambda_qps         DOUBLE PRECISION,
    protocol_id        TEXT NOT NULL,
    protocol_label     TEXT NOT NULL,
    is_reference       BOOLEAN NOT NULL,
    origin             TEXT NOT NULL,
    size_class         TEXT,
    ept_median         DOUBLE PRECISION NOT NULL,
    ept_lo             DOUBLE PRECISION NOT NULL,
    ept_hi             DOUBLE PRECISION NOT NULL,
    ept_confidence     DOUBLE PRECISION NOT NULL,
    ept_cv             DOUBLE PRECISION NOT NULL,
    -- Median absolute deviation of the members' medians (the consistency check's scale).
    ept_mad            DOUBLE PRECISION NOT NULL,
    epr_median         DOUBLE PRECISION,
    throughput_median  DOUBLE PRECISION NOT NULL,
    power_median       DOUBLE PRECISION NOT NULL,
    ttft_median        DOUBLE PRECISION,
    itl_median         DOUBLE PRECISION,
    iterations         BIGINT NOT NULL,
    submissions        BIGINT NOT NULL,
    submitters         BIGINT NOT NULL,
    in_review          BIGINT NOT NULL,
    -- The oldest submission of the group (the row's link).
    evidence           TEXT NOT NULL,
    PRIMARY KEY (group_key, visibility)
);
-- The submissions a group shows as its evidence: a JSON array of ids,
-- oldest first (at most 20). Apart from the figures, so that scanning
-- every group (views, facets) reads narrow rows however many there are.
CREATE TABLE group_evidence (
    group_key   TEXT NOT NULL,
    visibility  TEXT NOT NULL,
    ids         TEXT NOT NULL,
    PRIMARY KEY (group_key, visibility)
);
CREATE INDEX groups_view ON leaderboard_groups(visibility, origin, is_reference, scenario, lambda_qps, ept_median);
CREATE INDEX groups_gpu ON leaderboard_groups(visibility, gpu_id);
CREATE INDEX groups_model ON leaderboard_groups(visibility, model);

-- Dataset counters per origin and status.
CREATE TABLE dataset_counters (
    origin         TEXT NOT NULL,
    status         TEXT NOT NULL,
    submissions    BIGINT NOT NULL,
    iterations     BIGINT NOT NULL,
    power_samples  BIGINT NOT NULL,
    PRIMARY KEY (origin, status)
);
INSERT INTO dataset_counters (origin, status, submissions, iterations, power_samples)
SELECT CASE WHEN is_demo THEN 'demo' ELSE 'real' END, status, COUNT(*), CAST(SUM(iterations) AS BIGINT), CAST(SUM(power_samples) AS BIGINT)
FROM submissions GROUP BY 1, 2;
