-- Published dataset snapshots, listed from here rather than from a folder:
-- an object store (S3) has no atomic rename, so a snapshot is reserved
-- here, its files are written, its manifest.json last, and only then is
-- its row marked published. A reservation never published is a creation
-- that failed or crashed; it is swept, with its files, after an hour.
CREATE TABLE snapshots (
    id              TEXT PRIMARY KEY,
    reserved_at     TEXT NOT NULL,
    published_at    TEXT,
    -- The manifest's created_at: the list's order.
    created_at      TEXT,
    -- manifest.json's exact bytes, so listing reads no file.
    manifest        TEXT,
    manifest_sha256 TEXT
);
-- The list and `latest` read published rows newest first.
CREATE INDEX snapshots_published ON snapshots(created_at, id) WHERE published_at IS NOT NULL;
