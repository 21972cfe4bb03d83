-- Published measurements of other benchmarks (issue #39), imported from
-- their own files by `wattcounts peer import`. A release is immutable: one
-- row per (origin, files_sha256), where files_sha256 is the digest over the
-- paths and SHA-256s of every file read (wattcounts_rules::peer), so the
-- same files imported again change nothing and a newer release is a new
-- row beside the old one. These rows never join the Watt Counts read model
-- (groups, figures, snapshots, the estimator's Watt Counts fit): peers are
-- another protocol. Each import is a leaf of the transparency log.
CREATE TABLE peer_releases (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
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
    configurations     INTEGER NOT NULL,
    log_index          INTEGER,
    UNIQUE (origin, files_sha256)
);

CREATE TABLE peer_files (
    release_id  INTEGER NOT NULL REFERENCES peer_releases(id),
    path        TEXT NOT NULL,
    sha256      TEXT NOT NULL,
    bytes       INTEGER NOT NULL,
    PRIMARY KEY (release_id, path)
);

-- One published configuration, its figures as published (units in the
-- names; empty where the publisher gives none: v2 has no power and no ITL
-- percentiles, v3 no mean ITL). `position` is its order in the release; `file` and `pointer`
-- say where it was read.
CREATE TABLE peer_configurations (
    release_id                        INTEGER NOT NULL REFERENCES peer_releases(id),
    position                          INTEGER NOT NULL,
    file                              TEXT NOT NULL,
    pointer                           TEXT NOT NULL,
    task                              TEXT NOT NULL,
    task_name                         TEXT NOT NULL,
    model_id                          TEXT NOT NULL,
    nickname                          TEXT NOT NULL,
    architecture                      TEXT NOT NULL,
    total_params_billions             REAL,
    activated_params_billions         REAL,
    weight_precision                  TEXT NOT NULL,
    gpu_model                         TEXT NOT NULL,
    gpu_name                          TEXT NOT NULL,
    num_gpus                          INTEGER NOT NULL,
    max_num_seqs                      INTEGER NOT NULL,
    tensor_parallel                   INTEGER NOT NULL,
    pipeline_parallel                 INTEGER NOT NULL,
    expert_parallel                   INTEGER NOT NULL,
    data_parallel                     INTEGER NOT NULL,
    avg_batch_size                    REAL,
    avg_power_watts                   REAL,
    energy_per_token_joules           REAL NOT NULL,
    energy_per_request_joules         REAL NOT NULL,
    output_throughput_tokens_per_sec  REAL NOT NULL,
    avg_output_len                    REAL NOT NULL,
    mean_itl_ms                       REAL,
    median_itl_ms                     REAL,
    p90_itl_ms                        REAL,
    p95_itl_ms                        REAL,
    p99_itl_ms                        REAL,
    PRIMARY KEY (release_id, position)
);
-- A page reads one release's task, sorted by energy per token, a page at
-- a time (or one model's rows of it); the model page reads one model's
-- rows in every release.
CREATE INDEX peer_configurations_task ON peer_configurations(release_id, task, energy_per_token_joules);
CREATE INDEX peer_configurations_task_model ON peer_configurations(release_id, task, model_id);
CREATE INDEX peer_configurations_model ON peer_configurations(model_id);
