//! Text that spreadsheets would run as a formula. CSV files we publish (the
//! leaderboard export and its twins, snapshots, and the peer releases'
//! exports, whose text is a third party's) pass every text cell through
//! [`text_cell`]; numbers are never touched, so they stay numbers.

/// A text cell made safe for spreadsheets: one starting with = + - @ tab or
/// CR gets a leading apostrophe.
pub fn text_cell(s: &str) -> String {
    if needs_prefix(s) {
        format!("'{s}")
    } else {
        s.to_string()
    }
}

pub fn needs_prefix(s: &str) -> bool {
    matches!(s.chars().next(), Some('=' | '+' | '-' | '@' | '\t' | '\r'))
}

/// A CSV cell by its kind: text goes through [`text_cell`], figures and
/// counts are written as numbers (an absent figure is an empty cell), so
/// the formula guard follows the column's kind, not each call site.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// Text a submitter or a publisher chose (names, labels, ids).
    Text(String),
    /// A figure; empty when absent.
    Figure(Option<f64>),
    Count(u64),
    /// A count that may be absent (empty then).
    MaybeCount(Option<u64>),
    Flag(bool),
    /// Text this service made (a scenario, an origin, a UUID): never a
    /// formula, written as it is.
    Own(String),
}

impl Cell {
    pub fn render(&self) -> String {
        match self {
            Cell::Text(t) => text_cell(t),
            Cell::Figure(v) => v.map(|v| format!("{v}")).unwrap_or_default(),
            Cell::Count(n) => n.to_string(),
            Cell::MaybeCount(n) => n.map(|n| n.to_string()).unwrap_or_default(),
            Cell::Flag(b) => b.to_string(),
            Cell::Own(t) => t.clone(),
        }
    }
}

/// One column of a CSV export: its header and how a row fills it (`at` is
/// the row's ordinal, for a rank column). A table's columns are one list of
/// these, so the header and the records cannot drift apart.
pub struct Column<R> {
    pub name: &'static str,
    pub cell: fn(at: usize, row: &R) -> Cell,
}

/// The header names of `columns`, in order.
pub fn header<R>(columns: &[Column<R>]) -> Vec<&'static str> {
    columns.iter().map(|c| c.name).collect()
}

/// `rows` as CSV under `columns`' header; the first row's ordinal is `first`.
pub fn write_csv<R>(columns: &[Column<R>], rows: &[R], first: usize) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(header(columns)).expect("write to memory");
    for (i, row) in rows.iter().enumerate() {
        w.write_record(columns.iter().map(|c| (c.cell)(first + i, row).render()))
            .expect("write to memory");
    }
    w.into_inner().expect("flush to memory")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formula_cells_are_defused() {
        for s in ["=1+1", "+x", "-2", "@SUM(A1)", "\tx", "\rx"] {
            assert_eq!(text_cell(s), format!("'{s}"));
        }
        assert_eq!(
            text_cell("meta-llama/Llama-3.1-8B"),
            "meta-llama/Llama-3.1-8B"
        );
        assert_eq!(text_cell(""), "");
    }

    #[test]
    fn the_guard_follows_the_kind_and_header_and_records_share_one_list() {
        assert_eq!(Cell::Text("=cmd()".into()).render(), "'=cmd()");
        assert_eq!(Cell::Own("-x".into()).render(), "-x");
        assert_eq!(Cell::Figure(Some(-0.5)).render(), "-0.5");
        assert_eq!(Cell::Figure(None).render(), "");
        assert_eq!(Cell::Count(7).render(), "7");
        assert_eq!(Cell::MaybeCount(Some(3)).render(), "3");
        assert_eq!(Cell::MaybeCount(None).render(), "");
        assert_eq!(Cell::Flag(true).render(), "true");
        let columns: [Column<(&str, f64)>; 3] = [
            Column {
                name: "rank",
                cell: |at, _| Cell::Count(at as u64),
            },
            Column {
                name: "name",
                cell: |_, r| Cell::Text(r.0.into()),
            },
            Column {
                name: "value",
                cell: |_, r| Cell::Figure(Some(r.1)),
            },
        ];
        let out = write_csv(&columns, &[("@a", 1.5), ("b", -2.0)], 3);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "rank,name,value\n3,'@a,1.5\n4,b,-2\n"
        );
    }
}
