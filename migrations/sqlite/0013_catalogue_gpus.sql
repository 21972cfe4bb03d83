-- GPUs maintainers added to the catalogue (issue #41): a bundle from a GPU
-- the shipped catalogue (crates/core/catalog/gpus.csv) lacks waits in
-- review until one is added here, with its figures and their source. One
-- row per GPU, never changed; `version` counts additions (the catalogue's
-- version is the shipped file's digest plus the highest version here).
-- Each addition is also a decision leaf of the transparency log.
CREATE TABLE catalogue_gpus (
    nvml_name  TEXT PRIMARY KEY,
    version    BIGINT NOT NULL UNIQUE,
    spec       TEXT NOT NULL,
    added_at   TEXT NOT NULL,
    actor      TEXT NOT NULL,
    reason     TEXT NOT NULL
);
