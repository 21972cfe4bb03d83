-- Which rule derived a submission's run energies (issue #41): 1 is
-- mean(power samples) × measurement duration, what every row stored
-- before this migration holds; 2 is the energy meter's trapezoid over the
-- samples at 0.1 s (wattcounts_core::derived::ENERGY_RULE_VERSION), which
-- ingest writes from now on. `db rebuild` (and `serve` at start) derives
-- the runs of older rows again from their stored bundles, so one rule
-- holds across the data.
ALTER TABLE submissions ADD COLUMN energy_rule INTEGER NOT NULL DEFAULT 1;
