-- Every check's verdict on a submission (issue #3), in report order.
CREATE TABLE check_results (
    id             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    submission_id  TEXT NOT NULL REFERENCES submissions(id),
    position       BIGINT NOT NULL,
    check_id       TEXT NOT NULL,
    outcome        TEXT NOT NULL CHECK (outcome IN ('pass', 'warn', 'fail', 'skip')),
    -- The whole result (figure, threshold, unit, message, location), as JSON.
    result         TEXT NOT NULL
);
CREATE INDEX check_results_submission ON check_results(submission_id, position);

-- Maintainers' decisions: who, when, why. Never updated or deleted.
CREATE TABLE moderation_events (
    id               BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    created_at       TEXT NOT NULL,
    actor            TEXT NOT NULL,
    action           TEXT NOT NULL,
    submission_id    TEXT REFERENCES submissions(id),
    submitter_handle TEXT,
    key_fingerprint  TEXT,
    from_status      TEXT,
    to_status        TEXT,
    -- For key revocations: the time from which the key is void.
    effective_at     TEXT,
    reason           TEXT NOT NULL
);
CREATE INDEX moderation_submission ON moderation_events(submission_id);

CREATE INDEX submissions_status ON submissions(status, received_at);
CREATE INDEX submissions_key ON submissions(key_id, received_at);
