-- A handle's confusable skeleton (see src/handles.rs): two handles a reader
-- could take for each other share one, and only one of them may be
-- registered. Handles registered before this column are filled in when the
-- store opens; one whose skeleton an older handle holds keeps NULL here
-- (NULLs are distinct in a unique index) and is listed by
-- `wattcounts admin handle-collisions` for a maintainer to settle.
ALTER TABLE submitters ADD COLUMN handle_skeleton TEXT;
CREATE UNIQUE INDEX submitters_handle_skeleton ON submitters(handle_skeleton);
