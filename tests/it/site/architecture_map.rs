//! docs/architecture.md is the map a newcomer reads first (issue #56): it
//! names every module of every crate with a line of its job and stays
//! short. This keeps it true: a module added without its line, or one
//! renamed, fails here, naming it.

use std::path::Path;

const MAP: &str = "docs/architecture.md";
const MOST_LINES: usize = 250;

/// Each crate's heading in the map and its source root.
const CRATES: &[(&str, &str)] = &[
    ("wattcounts (the binary, src/)", "src"),
    ("wattcounts-rules", "crates/rules/src"),
    ("wattcounts-analytics", "crates/analytics/src"),
    ("wattcounts-store", "crates/store/src"),
    ("wattcounts-snapshot", "crates/snapshot/src"),
    ("wattcounts-service", "crates/service/src"),
    ("wattcounts-web", "crates/web/src"),
    ("wattcounts-synth", "crates/synth/src"),
    ("wattcounts-submit", "crates/submit/src"),
];

/// The modules under `dir`, as the map writes them: the path below the
/// crate's src without `.rs`, a `mod.rs` by its folder; test modules left
/// out (they are where their module is).
fn modules(root: &Path, dir: &Path, out: &mut Vec<String>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.is_dir() {
            modules(root, &path, out);
            continue;
        }
        let name = path.file_name().unwrap().to_str().unwrap();
        if !name.ends_with(".rs") || name == "tests.rs" || name == "test_support.rs" {
            continue;
        }
        let rel = path.strip_prefix(root).unwrap().to_str().unwrap();
        let rel = rel.trim_end_matches(".rs");
        out.push(rel.strip_suffix("/mod").unwrap_or(rel).to_string());
    }
}

/// The bullets under one crate's heading: `- \`path\`: job`.
fn listed(map: &str, heading: &str) -> Vec<String> {
    let start = map
        .find(&format!("\n### {heading}\n"))
        .unwrap_or_else(|| panic!("{MAP} has no heading '### {heading}'"));
    map[start + 1..]
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with('#'))
        .filter_map(|l| l.strip_prefix("- `"))
        .filter_map(|l| l.split_once("`: "))
        .map(|(path, job)| {
            assert!(!job.trim().is_empty(), "{heading}: `{path}` has no job");
            path.to_string()
        })
        .collect()
}

#[test]
fn the_architecture_map_names_every_module_and_stays_short() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let map = std::fs::read_to_string(repo.join(MAP)).unwrap();
    let lines = map.lines().count();
    assert!(
        lines <= MOST_LINES,
        "{MAP} is {lines} lines, over {MOST_LINES}"
    );
    let mut problems = Vec::new();
    for (heading, src) in CRATES {
        let root = repo.join(src);
        let mut have = Vec::new();
        modules(&root, &root, &mut have);
        have.sort();
        let named = listed(&map, heading);
        for m in &have {
            if !named.contains(m) {
                problems.push(format!("{heading}: module `{m}` ({src}) is not in the map"));
            }
        }
        for m in &named {
            if !have.contains(m) {
                problems.push(format!(
                    "{heading}: the map names `{m}`, which {src} does not hold"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{MAP}:\n{}", problems.join("\n"));
}
