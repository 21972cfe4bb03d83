-- Submitters and their SSH keys.
CREATE TABLE submitters (
    id            INTEGER PRIMARY KEY,
    handle        TEXT NOT NULL,
    handle_lower  TEXT NOT NULL UNIQUE,
    display_name  TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    suspended_at  TEXT
);

CREATE TABLE keys (
    id            INTEGER PRIMARY KEY,
    submitter_id  INTEGER NOT NULL REFERENCES submitters(id),
    fingerprint   TEXT NOT NULL UNIQUE,
    algorithm     TEXT NOT NULL,
    public_key    TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    -- Signatures on bundles received from this time on are refused;
    -- earlier submissions stay valid.
    revoked_at    TEXT
);

-- One row per stored bundle. `id` is the manifest's submission_id.
CREATE TABLE submissions (
    id             TEXT PRIMARY KEY,
    bundle_sha256  TEXT NOT NULL UNIQUE,
    submitter_id   INTEGER NOT NULL REFERENCES submitters(id),
    key_id         INTEGER NOT NULL REFERENCES keys(id),
    status         TEXT NOT NULL CHECK (status IN ('accepted', 'needs_review', 'rejected')),
    received_at    TEXT NOT NULL,
    gpu_name       TEXT NOT NULL,
    gpu_id         TEXT,
    run_name       TEXT NOT NULL,
    is_demo        INTEGER NOT NULL DEFAULT 0,
    bundle_bytes   INTEGER NOT NULL,
    blob_path      TEXT NOT NULL,
    signature      TEXT NOT NULL,
    manifest       TEXT NOT NULL
);
CREATE INDEX submissions_received ON submissions(received_at);

-- One row per harness iteration.
CREATE TABLE runs (
    id                     INTEGER PRIMARY KEY,
    submission_id          TEXT NOT NULL REFERENCES submissions(id),
    model                  TEXT NOT NULL,
    scenario               TEXT NOT NULL,
    lambda_qps             REAL,
    iteration              INTEGER NOT NULL,
    started_at             TEXT NOT NULL,
    duration_s             REAL NOT NULL,
    requests_ok            INTEGER NOT NULL,
    requests_failed        INTEGER NOT NULL,
    prompt_tokens          INTEGER NOT NULL,
    generation_tokens      INTEGER NOT NULL,
    gpu_energy_j           REAL NOT NULL,
    reported_gpu_energy_j  REAL NOT NULL,
    cpu_energy_j           REAL NOT NULL,
    dram_energy_j          REAL NOT NULL,
    power_mean_w           REAL NOT NULL,
    power_max_w            REAL NOT NULL,
    power_min_w            REAL NOT NULL,
    power_samples          INTEGER NOT NULL,
    temp_first_c           REAL NOT NULL,
    temp_max_c             REAL NOT NULL,
    energy_per_token_j     REAL,
    energy_per_request_j   REAL,
    throughput_tok_s       REAL NOT NULL,
    itl_s                  REAL,
    ttft_p50_s             REAL,
    ttft_p90_s             REAL,
    e2e_p50_s              REAL,
    e2e_p90_s              REAL
);
CREATE INDEX runs_submission ON runs(submission_id);

-- Per submission × model × scenario × arrival rate: aggregates over iterations.
CREATE TABLE configurations (
    id                  INTEGER PRIMARY KEY,
    submission_id       TEXT NOT NULL REFERENCES submissions(id),
    position            INTEGER NOT NULL,
    model               TEXT NOT NULL,
    scenario            TEXT NOT NULL,
    lambda_qps          REAL,
    iterations          INTEGER NOT NULL,
    ept_median_j        REAL NOT NULL,
    ept_cv              REAL NOT NULL,
    throughput_median   REAL NOT NULL,
    power_mean_median_w REAL NOT NULL,
    -- The full aggregate (all spreads), as JSON.
    metrics             TEXT NOT NULL
);
CREATE INDEX configurations_submission ON configurations(submission_id);
CREATE INDEX configurations_model ON configurations(model, scenario, lambda_qps);
