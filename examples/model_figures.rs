//! The config.json → figures formula (crates/rules/src/model_config.rs) on
//! every catalogue model, beside the parameter count its publisher states:
//! the table in docs/model-figures.md.
//!
//!   cargo run --release --example model_figures > table.md

use wattcounts::model_config::{catalogue_configs, figures};

fn main() {
    println!("| model | type | stated (B) | formula total (B) | active (B) | gap | precision | weights (GB) |");
    println!("|---|---|---:|---:|---:|---:|---|---:|");
    let (mut n, mut within) = (0, 0);
    for (id, stated, config) in catalogue_configs() {
        n += 1;
        let kind = config["model_type"].as_str().unwrap_or("?").to_string();
        match figures(&config) {
            Ok(f) => {
                let gap = (f.total_params / stated - 1.0) * 100.0;
                within += usize::from(gap.abs() <= 2.0);
                println!(
                    "| {id} | {kind} | {:.2} | {:.2} | {:.2} | {gap:+.1} % | {} | {:.1} |",
                    stated / 1e9,
                    f.total_params / 1e9,
                    f.active_params / 1e9,
                    f.precision.name,
                    f.weight_bytes() / 1e9
                );
            }
            Err(e) => println!(
                "| {id} | {kind} | {:.2} | – | – | – | – | {e} |",
                stated / 1e9
            ),
        }
    }
    eprintln!("{within} of {n} catalogue models within 2 % of the stated count");
}
