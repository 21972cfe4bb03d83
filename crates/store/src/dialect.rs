//! What differs between the backends' SQL, in one place: the statements
//! themselves are shared (see `sql`), these are the few that are not.

/// One backend's differences.
pub(crate) struct Dialect {
    /// The backend's name, as `Store::backend` and `/status` give it.
    pub name: &'static str,
    /// Locks a group's key row while a writer recomputes the group.
    pub lock_group: Option<&'static str>,
    /// Locks the log's head while an appender reads the next index.
    pub lock_log: Option<&'static str>,
    /// Begins a write transaction.
    pub begin_write: &'static str,
    /// Refreshes the planner's statistics after a rebuild.
    pub analyze: Option<&'static str>,
    /// Run first in a transaction that reads a snapshot.
    pub read_snapshot: &'static [&'static str],
    /// Appended to text in ORDER BY so both backends list models alike.
    pub byte_order: &'static str,
}

pub(crate) const SQLITE: Dialect = Dialect {
    name: "sqlite",
    // SQLite needs no row lock: one writer holds the database (the
    // store's write mutex, then BEGIN IMMEDIATE).
    lock_group: None,
    // Likewise for the log: the writer appends alone.
    lock_log: None,
    // Write transactions take SQLite's write lock up front: a second
    // process on the same file then waits (busy timeout) instead of
    // failing with "database is locked" when a deferred transaction that
    // has read tries to write.
    begin_write: "BEGIN IMMEDIATE",
    // SQLite's planner takes the group index without statistics.
    analyze: None,
    // SQLite's read transaction already sees one state of the database.
    read_snapshot: &[],
    // SQLite compares text byte by byte already.
    byte_order: "",
};

pub(crate) const POSTGRES: Dialect = Dialect {
    name: "postgres",
    // Two instances adding to one group at once take turns and lose
    // nothing.
    lock_group: Some("SELECT group_key FROM group_keys WHERE group_key = $1 FOR UPDATE"),
    // Appenders of every instance take turns on the one head row, so the
    // log stays linear.
    lock_log: Some("SELECT id FROM log_head WHERE id = 1 FOR UPDATE"),
    // Row locks and unique constraints order writers; a plain BEGIN.
    begin_write: "BEGIN",
    // Statistics for the tables a rebuild rewrote (allowed in a
    // transaction).
    analyze: Some("ANALYZE configurations, submissions"),
    // PostgreSQL's default (READ COMMITTED) lets each statement see newer
    // commits; the runs stream for as long as the files take to write,
    // and the service-wide statement timeout is for requests, not exports.
    read_snapshot: &[
        "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ",
        "SET LOCAL statement_timeout = 0",
    ],
    // Orders text byte by byte, as SQLite does, whatever the database's
    // collation.
    byte_order: " COLLATE \"C\"",
};
