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
}
