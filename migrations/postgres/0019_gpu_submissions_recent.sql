-- A GPU's accepted submissions newest first, ties in receipt broken by
-- id (issue #55): the GPU page and the GPU feed list them a page at a
-- time down this index (a keyset on received_at, id), so a page reads its
-- 50 rows however many the GPU has. It extends submissions_gpu, which it
-- replaces.
CREATE INDEX submissions_gpu_recent ON submissions(gpu_id, status, received_at, id);
DROP INDEX submissions_gpu;
