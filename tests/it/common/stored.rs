//! What an app has stored: every table the database's own catalogue lists
//! (so a table added by a later migration is covered without editing this),
//! each as a digest of its rows' text, and the files in both blob
//! locations. A refused request has stored nothing when this is the same
//! before and after it: no row added, changed or removed anywhere (the log,
//! groups, counters, check rows, rate counters, sessions included), no blob.

use std::collections::BTreeMap;

use sha2::Digest;

use super::{walk_files_if_any, RawDb, TestApp};

#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    /// Table → (rows, SHA-256 of the rows' text, sorted).
    pub tables: BTreeMap<String, (usize, String)>,
    pub blobs: Vec<String>,
}

impl RawDb {
    async fn texts(&self, sql: &str) -> Vec<String> {
        match self {
            RawDb::Sqlite(p) => sqlx::query_scalar(sql).fetch_all(p).await,
            RawDb::Pg(p) => sqlx::query_scalar(sql).fetch_all(p).await,
        }
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// Every table with its rows' digest.
    pub async fn tables(&self) -> BTreeMap<String, (usize, String)> {
        // One cell as text: SQLite's quote() writes a blob as a hex literal
        // (a migration checksum is not UTF-8); PostgreSQL casts bytea to
        // its hex text by itself.
        let (tables, columns, cell) = match self {
            RawDb::Sqlite(_) => (
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
                "SELECT name FROM pragma_table_info('{t}') ORDER BY cid",
                "quote(\"{c}\")",
            ),
            RawDb::Pg(_) => (
                "SELECT table_name::text FROM information_schema.tables
                 WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY 1",
                "SELECT column_name::text FROM information_schema.columns
                 WHERE table_schema = current_schema() AND table_name = '{t}' ORDER BY ordinal_position",
                "COALESCE(CAST(\"{c}\" AS TEXT), '<null>')",
            ),
        };
        let mut out = BTreeMap::new();
        for t in self.texts(tables).await {
            let cols = self.texts(&columns.replace("{t}", &t)).await;
            assert!(
                !cols.is_empty(),
                "table {t} has no columns in the catalogue"
            );
            // One text per row: every column as text, NULL marked.
            let row = cols
                .iter()
                .map(|c| cell.replace("{c}", c))
                .collect::<Vec<_>>()
                .join(" || '|' || ");
            let mut rows = self.texts(&format!("SELECT {row} FROM \"{t}\"")).await;
            rows.sort();
            let digest = hex::encode(sha2::Sha256::digest(rows.join("\n").as_bytes()));
            out.insert(t, (rows.len(), digest));
        }
        assert!(
            out.contains_key("submissions") && out.contains_key("log_entries"),
            "the catalogue listed {:?}: not this service's database",
            out.keys().collect::<Vec<_>>()
        );
        out
    }
}

impl TestApp {
    /// What this app has stored now (see the module's header).
    pub async fn stored(&self) -> Stored {
        let raw = self
            .raw
            .as_ref()
            .expect("this TestApp keeps no handle on its database; build it with one");
        let mut blobs: Vec<String> = match &self.bucket {
            None => walk_files_if_any(&self.dir.path().join("blobs"))
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
            Some(bucket) => bucket
                .list("blobs")
                .await
                .unwrap()
                .into_iter()
                .map(|l| format!("bucket:{}", l.name))
                .collect(),
        };
        // Where uploads are staged before they are stored.
        blobs.extend(
            walk_files_if_any(&self.dir.path().join("scratch/blobs"))
                .iter()
                .map(|p| p.display().to_string()),
        );
        blobs.sort();
        Stored {
            tables: raw.tables().await,
            blobs,
        }
    }

    /// Nothing was stored since `before`: every table and both blob
    /// locations as they were. Names each table that changed.
    pub async fn assert_nothing_stored_since(&self, before: &Stored) {
        let after = self.stored().await;
        let changed: Vec<String> = after
            .tables
            .iter()
            .filter(|(t, v)| before.tables.get(*t) != Some(v))
            .map(|(t, (n, _))| {
                let was = before.tables.get(t).map_or(0, |v| v.0);
                format!("{t} ({was} rows before, {n} after)")
            })
            .chain(
                before
                    .tables
                    .keys()
                    .filter(|t| !after.tables.contains_key(*t))
                    .map(|t| format!("{t} (dropped)")),
            )
            .collect();
        assert!(changed.is_empty(), "tables changed: {}", changed.join(", "));
        assert_eq!(after.blobs, before.blobs, "blobs written");
    }
}
