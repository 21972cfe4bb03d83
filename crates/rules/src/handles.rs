//! What makes a handle: its characters, its separators, and its skeleton,
//! the form two handles share when a reader could take one for the other.
//! Handles are shown on every page beside a submitter's figures; a handle
//! that looks like another's would let one submitter pass as another.

/// The handle the service registers for its own synthetic demo data.
pub const DEMO_HANDLE: &str = "demo";

/// Handles nobody may register: the demo's and the service's own names.
pub const RESERVED_HANDLES: &[&str] = &[DEMO_HANDLE, "admin", "wattcounts", "maintainers"];

/// The rule a handle breaks, said to the person who chose it.
pub fn handle_fault(h: &str) -> Option<String> {
    if !(3..=39).contains(&h.len()) || !h.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return Some(format!(
            "handle '{h}' must be 3 to 39 characters of ASCII letters, digits and '-'"
        ));
    }
    if h.starts_with('-') || h.ends_with('-') || h.contains("--") {
        return Some(format!(
            "handle '{h}': '-' separates words, so it may not start or end a handle nor come twice in a row"
        ));
    }
    None
}

/// The handle's skeleton: Unicode TR39's confusable skeleton of the
/// lowercased handle, lowercased again, with the pairs TR39 keeps apart
/// merged too. Handles compare case-insensitively, so `I` is `i`; as `I`
/// also looks like `l` and `1`, all four are one letter here, as are `0`
/// and `o`. Two handles with one skeleton are one handle.
pub fn skeleton(handle: &str) -> String {
    let lower = handle.to_lowercase();
    unicode_security::confusable_detection::skeleton(&lower)
        .flat_map(char::to_lowercase)
        .map(|c| match c {
            '1' | 'i' | '|' => 'l',
            '0' => 'o',
            c => c,
        })
        .collect()
}

/// Registered handles that share a skeleton, each group in the order
/// given (maintainers decide what to do; nothing is renamed).
pub fn collisions<'a>(handles: impl IntoIterator<Item = &'a str>) -> Vec<Vec<String>> {
    let mut by_skeleton: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for h in handles {
        by_skeleton
            .entry(skeleton(h))
            .or_default()
            .push(h.to_string());
    }
    by_skeleton.into_values().filter(|g| g.len() > 1).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookalikes_share_a_skeleton() {
        let alice = skeleton("alice");
        for twin in ["aIice", "a1ice", "ALICE", "AL1CE", "aLice"] {
            assert_eq!(skeleton(twin), alice, "{twin}");
        }
        assert_eq!(skeleton("b0b"), skeleton("bob"));
        assert_eq!(skeleton("B0B"), skeleton("bob"));
        // TR39 itself: rn is m.
        assert_eq!(skeleton("rnodern"), skeleton("modern"));
        // Different handles stay different.
        assert_ne!(skeleton("alice"), skeleton("alicia"));
        assert_ne!(skeleton("bob"), skeleton("rob"));
        assert_ne!(skeleton("gpu-lab"), skeleton("gpulab"));
    }

    #[test]
    fn separators_have_a_rule() {
        for bad in ["-alice", "alice-", "al--ice", "---"] {
            let why = handle_fault(bad).unwrap_or_else(|| panic!("{bad} passed"));
            assert!(why.contains("may not start or end"), "{why}");
        }
        assert!(handle_fault("al").unwrap().contains("3 to 39"));
        assert!(handle_fault("al_ice").unwrap().contains("ASCII letters"));
        assert_eq!(handle_fault("gpu-lab-7"), None);
    }

    #[test]
    fn length_has_edges_at_3_and_39() {
        assert_eq!(handle_fault("abc"), None);
        assert_eq!(handle_fault(&"a".repeat(39)), None);
        for bad in ["ab".to_string(), "a".repeat(40), String::new()] {
            let why = handle_fault(&bad).unwrap_or_else(|| panic!("'{bad}' passed"));
            assert!(why.contains("3 to 39"), "{why}");
        }
        // One '-' between words is a separator; the letters and digits of
        // ASCII only.
        assert_eq!(handle_fault("a-b"), None);
        for bad in ["a b", "a.b", "älice", "a_b"] {
            assert!(
                handle_fault(bad).unwrap().contains("ASCII letters"),
                "{bad}"
            );
        }
    }

    #[test]
    fn collisions_group_by_skeleton() {
        let found = collisions(["alice", "bob", "aIice", "carol", "a1ice", "b0b", "dave"]);
        assert_eq!(
            found,
            vec![vec!["alice", "aIice", "a1ice"], vec!["bob", "b0b"]]
        );
        assert!(collisions(["alice", "bob"]).is_empty());
    }
}
