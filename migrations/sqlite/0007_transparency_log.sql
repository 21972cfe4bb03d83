-- The transparency log (RFC 6962 tree, C2SP checkpoints): primary data.
-- `db rebuild` never touches these tables; `db copy` carries them as they are.
--
-- One row, locked by every appender (PostgreSQL: FOR UPDATE), so that
-- instances sharing a database keep one linear log; it also records the
-- log's verifier key, which every instance must sign with.
CREATE TABLE log_head (
    id           INTEGER PRIMARY KEY CHECK (id = 1),
    origin       TEXT,
    verifier_key TEXT
);
INSERT INTO log_head (id) VALUES (1);
-- One row per leaf: its index and its bytes (RFC 8785 canonical JSON).
-- (INTEGER PRIMARY KEY: the index is SQLite's rowid, no second index.)
CREATE TABLE log_entries (
    idx        INTEGER PRIMARY KEY,
    leaf       TEXT NOT NULL,
    -- Appended by the start-up backfill (stored before the log existed).
    backfilled BOOLEAN NOT NULL DEFAULT FALSE
);
-- The tree's stored hashes (Go sumdb / C2SP tiles numbering: a leaf's
-- record hash and the root of every complete subtree it closes), hex.
-- Roots, proofs and tiles read O(log n) of them, never the whole tree.
CREATE TABLE log_hashes (
    idx  INTEGER PRIMARY KEY,
    hash TEXT NOT NULL
);
-- The log page counts backfilled leaves: this index holds only those.
CREATE INDEX log_entries_backfilled ON log_entries(idx) WHERE backfilled;
-- Published checkpoints (signed notes); the newest is /log/checkpoint.
CREATE TABLE log_checkpoints (
    size         BIGINT PRIMARY KEY,
    signed       TEXT NOT NULL,
    published_at TEXT NOT NULL
);
-- Where each submission and decision sits in the log.
ALTER TABLE submissions ADD COLUMN log_index BIGINT;
ALTER TABLE moderation_events ADD COLUMN log_index BIGINT;
-- The start-up backfill asks for rows without a leaf: these partial
-- indexes hold only those (empty once backfilled), so asking reads no table.
CREATE INDEX submissions_unlogged ON submissions(received_at, id) WHERE log_index IS NULL;
CREATE INDEX moderation_unlogged ON moderation_events(created_at, id) WHERE log_index IS NULL;
