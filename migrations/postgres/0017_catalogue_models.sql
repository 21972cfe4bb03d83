-- Models maintainers added to the catalogue (issue #54), from the model's
-- own config.json: a bundle measuring a model the shipped catalogue
-- (crates/rules/catalog/model_features.csv) lacks waits in review until
-- one is added here. One row per model id, never changed; `version` counts
-- additions. `spec` holds the figures the config gave (parameters, shape,
-- precision), `provenance` the config's repo, revision and SHA-256. Each
-- addition is also a decision leaf of the transparency log.
CREATE TABLE catalogue_models (
    model_id   TEXT PRIMARY KEY,
    version    BIGINT NOT NULL UNIQUE,
    spec       TEXT NOT NULL,
    provenance TEXT NOT NULL,
    added_at   TEXT NOT NULL,
    actor      TEXT NOT NULL,
    reason     TEXT NOT NULL
);
