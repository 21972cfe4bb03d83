-- Published measurements of other benchmarks (issue #39), imported from
-- their own files by `wattcounts peer import`. A release is immutable: one
-- row per (origin, files_sha256), where files_sha256 is the digest over the
-- paths and SHA-256s of every file read (wattcounts_rules::peer), so the
-- same files imported again change nothing and a newer release is a new
-- row beside the old one. These rows never join the Watt Counts read model
-- (groups, figures, snapshots, the estimator's Watt Counts fit): peers are
-- another protocol. Each import is a leaf of the transparency log.
CREATE TABLE peer_releases (
    id                 BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    origin             TEXT NOT NULL,
    label              TEXT NOT NULL,
    files_sha256       TEXT NOT NULL,
    source_repository  TEXT NOT NULL,
    source_path        TEXT NOT NULL,
    source_ref         TEXT NOT NULL,
    licence            TEXT NOT NULL,
    licence_text       TEXT NOT NULL,
    skipped            TEXT NOT NULL,
    facets             TEXT NOT NULL,
    retrieved_at       TEXT NOT NULL,
    imported_at        TEXT NOT NULL,
    actor              TEXT NOT NULL,
    configurations     BIGINT NOT NULL,
    log_index          BIGINT,
    UNIQUE (origin, files_sha256)
);

CREATE TABLE peer_files (
    release_id  BIGINT NOT NULL REFERENCES peer_releases(id),
    path        TEXT NOT NULL,
    sha256      TEXT NOT NULL,
    bytes       BIGINT NOT NULL,
    PRIMARY KEY (release_id, path)
);

-- One published configuration, its figures as published (units in the
-- names; empty where the publisher gives none: v2 has no power and no ITL
-- percentiles, v3 no mean ITL). `position` is its order in the release; `file` and `pointer`
-- say where it was read.
CREATE TABLE peer_configurations (
    release_id                        BIGINT NOT NULL REFERENCES peer_releases(id),
    position                          BIGINT NOT NULL,
    file                              TEXT NOT NULL,
    pointer                           TEXT NOT NULL,
    task                              TEXT NOT NULL,
    task_name                         TEXT NOT NULL,
    model_id                          TEXT NOT NULL,
    nickname                          TEXT NOT NULL,
    architecture                      TEXT NOT NULL,
    total_params_billions             DOUBLE PRECISION,
    activated_params_billions         DOUBLE PRECISION,
    weight_precision                  TEXT NOT NULL,
    gpu_model                         TEXT NOT NULL,
    gpu_name                          TEXT NOT NULL,
    num_gpus                          BIGINT NOT NULL,
    max_num_seqs                      BIGINT NOT NULL,
    tensor_parallel                   BIGINT NOT NULL,
    pipeline_parallel                 BIGINT NOT NULL,
    expert_parallel                   BIGINT NOT NULL,
    data_parallel                     BIGINT NOT NULL,
    avg_batch_size                    DOUBLE PRECISION,
    avg_power_watts                   DOUBLE PRECISION,
    energy_per_token_joules           DOUBLE PRECISION NOT NULL,
    energy_per_request_joules         DOUBLE PRECISION NOT NULL,
    output_throughput_tokens_per_sec  DOUBLE PRECISION NOT NULL,
    avg_output_len                    DOUBLE PRECISION NOT NULL,
    mean_itl_ms                       DOUBLE PRECISION,
    median_itl_ms                     DOUBLE PRECISION,
    p90_itl_ms                        DOUBLE PRECISION,
    p95_itl_ms                        DOUBLE PRECISION,
    p99_itl_ms                        DOUBLE PRECISION,
    PRIMARY KEY (release_id, position)
);
-- A page reads one release's task, sorted by energy per token, a page at
-- a time (or one model's rows of it); the model page reads one model's
-- rows in every release.
CREATE INDEX peer_configurations_task ON peer_configurations(release_id, task, energy_per_token_joules);
CREATE INDEX peer_configurations_task_model ON peer_configurations(release_id, task, model_id);
CREATE INDEX peer_configurations_model ON peer_configurations(model_id);
