-- PostgreSQL twin of migrations/sqlite/0001_init.sql. Timestamps are RFC 3339
-- text in UTC with milliseconds, as on SQLite, so both backends store and
-- compare them the same way.

CREATE TABLE submitters (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    handle        TEXT NOT NULL,
    handle_lower  TEXT NOT NULL UNIQUE,
    display_name  TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    suspended_at  TEXT
);

CREATE TABLE keys (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    submitter_id  BIGINT NOT NULL REFERENCES submitters(id),
    fingerprint   TEXT NOT NULL UNIQUE,
    algorithm     TEXT NOT NULL,
    public_key    TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    revoked_at    TEXT
);

CREATE TABLE submissions (
    id             TEXT PRIMARY KEY,
    bundle_sha256  TEXT NOT NULL UNIQUE,
    submitter_id   BIGINT NOT NULL REFERENCES submitters(id),
    key_id         BIGINT NOT NULL REFERENCES keys(id),
    status         TEXT NOT NULL CHECK (status IN ('accepted', 'needs_review', 'rejected')),
    received_at    TEXT NOT NULL,
    gpu_name       TEXT NOT NULL,
    gpu_id         TEXT,
    run_name       TEXT NOT NULL,
    is_demo        BOOLEAN NOT NULL DEFAULT FALSE,
    bundle_bytes   BIGINT NOT NULL,
    blob_path      TEXT NOT NULL,
    signature      TEXT NOT NULL,
    manifest       TEXT NOT NULL
);
CREATE INDEX submissions_received ON submissions(received_at);

CREATE TABLE runs (
    id                     BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    submission_id          TEXT NOT NULL REFERENCES submissions(id),
    model                  TEXT NOT NULL,
    scenario               TEXT NOT NULL,
    lambda_qps             DOUBLE PRECISION,
    iteration              BIGINT NOT NULL,
    started_at             TEXT NOT NULL,
    duration_s             DOUBLE PRECISION NOT NULL,
    requests_ok            BIGINT NOT NULL,
    requests_failed        BIGINT NOT NULL,
    prompt_tokens          BIGINT NOT NULL,
    generation_tokens      BIGINT NOT NULL,
    gpu_energy_j           DOUBLE PRECISION NOT NULL,
    reported_gpu_energy_j  DOUBLE PRECISION NOT NULL,
    cpu_energy_j           DOUBLE PRECISION NOT NULL,
    dram_energy_j          DOUBLE PRECISION NOT NULL,
    power_mean_w           DOUBLE PRECISION NOT NULL,
    power_max_w            DOUBLE PRECISION NOT NULL,
    power_min_w            DOUBLE PRECISION NOT NULL,
    power_samples          BIGINT NOT NULL,
    temp_first_c           DOUBLE PRECISION NOT NULL,
    temp_max_c             DOUBLE PRECISION NOT NULL,
    energy_per_token_j     DOUBLE PRECISION,
    energy_per_request_j   DOUBLE PRECISION,
    throughput_tok_s       DOUBLE PRECISION NOT NULL,
    itl_s                  DOUBLE PRECISION,
    ttft_p50_s             DOUBLE PRECISION,
    ttft_p90_s             DOUBLE PRECISION,
    e2e_p50_s              DOUBLE PRECISION,
    e2e_p90_s              DOUBLE PRECISION
);
CREATE INDEX runs_submission ON runs(submission_id);

CREATE TABLE configurations (
    id                  BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    submission_id       TEXT NOT NULL REFERENCES submissions(id),
    position            BIGINT NOT NULL,
    model               TEXT NOT NULL,
    scenario            TEXT NOT NULL,
    lambda_qps          DOUBLE PRECISION,
    iterations          BIGINT NOT NULL,
    ept_median_j        DOUBLE PRECISION NOT NULL,
    ept_cv              DOUBLE PRECISION NOT NULL,
    throughput_median   DOUBLE PRECISION NOT NULL,
    power_mean_median_w DOUBLE PRECISION NOT NULL,
    metrics             TEXT NOT NULL
);
CREATE INDEX configurations_submission ON configurations(submission_id);
CREATE INDEX configurations_model ON configurations(model, scenario, lambda_qps);
