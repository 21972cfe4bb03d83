-- Signed-in maintainers of the admin pages. The cookie carries a random
-- session id; only its SHA-256 is kept here, so a copy of this table signs
-- no one in. A session ends at `expires_at`, after an idle spell (see
-- src/service/admin_sessions.rs), when its maintainer signs out, or when
-- the token it was opened with is no longer configured (rotation).
CREATE TABLE admin_sessions (
    id_sha256     TEXT PRIMARY KEY,
    maintainer    TEXT NOT NULL,
    -- The configured token's SHA-256 the session was opened with.
    token_sha256  TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    expires_at    TEXT NOT NULL,
    last_used_at  TEXT NOT NULL
);
CREATE INDEX admin_sessions_expiry ON admin_sessions(expires_at);
