-- Fits of the energy estimator (issue #28), one row per version: the
-- SHA-256 of the crate version, catalogue, settings, features, origin, protocol and
-- training rows (wattcounts_core::estimator::trained::version_of). The
-- same data gives the same version, so a restart or another instance
-- loads the stored fit instead of fitting again. `body` is the whole fit
-- as JSON (boosters, rows, validation report); a few MB at most, and only
-- the newest few are kept (see put_estimator_fit).
CREATE TABLE estimator_fits (
    version     TEXT PRIMARY KEY,
    data_stamp  TEXT NOT NULL,
    origin      TEXT NOT NULL,
    protocol    TEXT NOT NULL,
    fitted_at   TEXT NOT NULL,
    body        TEXT NOT NULL
);
CREATE INDEX estimator_fits_fitted_at ON estimator_fits(fitted_at);
