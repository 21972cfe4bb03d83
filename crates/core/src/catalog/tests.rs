use super::*;

#[test]
fn catalogues_load() {
    assert!(gpus().len() >= 60, "{} GPUs", gpus().len());
    assert_eq!(paper_gpus().count(), 11);
    assert_eq!(models().len(), 51);
    let h100 = gpu_by_nvml_name("NVIDIA H100 PCIe").unwrap();
    assert_eq!(h100.id, "h100-pcie");
    assert_eq!(h100.tdp_w, 350.0);
    assert_eq!(gpu_by_nvml_name("Tesla T4").unwrap().id, "t4");
    assert_eq!(
        gpu_by_nvml_name("NVIDIA GeForce RTX 4090").unwrap().id,
        "rtx-4090"
    );
    // The GPUs a community owns, as NVML names them.
    for name in [
        "NVIDIA A100-SXM4-80GB",
        "NVIDIA H100 80GB HBM3",
        "NVIDIA B200",
        "NVIDIA GH200 480GB",
        "NVIDIA L40",
        "NVIDIA A10G",
        "NVIDIA A40",
        "NVIDIA RTX A6000",
        "NVIDIA RTX 6000 Ada Generation",
        "NVIDIA GeForce RTX 5090",
    ] {
        let g = gpu_by_nvml_name(name).unwrap_or_else(|| panic!("{name} missing"));
        assert!(!g.in_paper(), "{name}");
    }
    let llama = model_by_id("meta-llama/Llama-3.1-8B-Instruct").unwrap();
    assert_eq!(llama.params_b, 8.03);
    assert_eq!(llama.kv_heads, 8);
    let ids: std::collections::HashSet<_> = gpus().iter().map(|g| &g.id).collect();
    assert_eq!(ids.len(), gpus().len(), "gpu ids are unique");
    let names: std::collections::HashSet<_> = gpus().iter().map(|g| &g.nvml_name).collect();
    assert_eq!(names.len(), gpus().len(), "NVML names are unique");
}

/// The paper's eleven rows hold, figure for figure, what the WattGPU
/// release states (read here by its own header, not through `gpus()`), and
/// the loaded-idle powers the service used before the catalogue grew.
#[test]
fn the_paper_rows_are_the_wattgpu_release() {
    let text = include_str!("../../catalog/gpu_features.csv");
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header: Vec<&str> = lines.next().unwrap().split(';').collect();
    let at = |row: &[&str], name: &str| -> String {
        row[header.iter().position(|h| *h == name).unwrap()].to_string()
    };
    let f = |row: &[&str], name: &str| -> f64 { at(row, name).parse().unwrap() };
    let idle = [
        ("NVIDIA A30", 33.0),
        ("NVIDIA H200", 80.0),
        ("NVIDIA A100-SXM4-40GB", 52.0),
        ("NVIDIA L40S", 38.0),
        ("NVIDIA H100 PCIe", 55.0),
        ("NVIDIA H100 NVL", 62.0),
        ("Tesla V100-SXM2-32GB", 42.0),
        ("NVIDIA L4", 24.0),
        ("NVIDIA GeForce RTX 3090", 44.0),
        ("Tesla T4", 28.0),
        ("NVIDIA GeForce RTX 4090", 38.0),
    ];
    let mut seen = 0;
    for line in lines {
        let row: Vec<&str> = line.split(';').collect();
        let name = at(&row, "gpu_type");
        let g = gpu_by_nvml_name(&name).unwrap_or_else(|| panic!("{name} missing"));
        assert!(g.in_paper(), "{name}");
        assert_eq!(g.tdp_w, f(&row, "thermal_design_power_w"), "{name}");
        assert_eq!(g.memory_gb, f(&row, "memory_size_gb"), "{name}");
        assert_eq!(g.memory_bandwidth_gb_s, f(&row, "memory_bandwidth_gb_s"));
        assert_eq!(g.tensor_tflops, f(&row, "tensor_tflops"), "{name}");
        let fp16 = f(&row, "half_float_performance_gflop_s") / 1000.0;
        assert!((g.fp16_tflops - fp16).abs() < 1e-9, "{name}");
        assert_eq!(g.base_clock_mhz, f(&row, "base_clock_mhz"), "{name}");
        assert_eq!(g.boost_clock_mhz, f(&row, "boost_clock_mhz"), "{name}");
        assert_eq!(g.release_year, f(&row, "release_year"), "{name}");
        assert_eq!(g.transistor_count_m, f(&row, "transistor_count_m"));
        assert_eq!(g.memory_type, at(&row, "memory_type"), "{name}");
        assert_eq!(g.architecture, at(&row, "architecture"), "{name}");
        assert_eq!(g.release_date, at(&row, "release_date"), "{name}");
        let (_, w) = idle.iter().find(|(n, _)| *n == name).unwrap();
        assert_eq!(g.idle_w, *w, "{name}");
        seen += 1;
    }
    assert_eq!(seen, 11);
}

/// Per-pin data rate, Gbit/s, each memory type reaches on shipping boards
/// (JEDEC and vendor ranges; the T4's GDDR6 runs at 10).
fn pin_rate_range(memory_type: &str) -> Option<(f64, f64)> {
    Some(match memory_type {
        "HBM2" => (1.4, 2.6),
        "HBM2e" => (2.4, 3.7),
        "HBM3" => (4.0, 6.5),
        "HBM3e" => (6.0, 9.8),
        "GDDR5" => (5.0, 9.0),
        "GDDR6" => (10.0, 20.5),
        "GDDR6X" => (19.0, 23.5),
        "GDDR7" => (27.0, 32.0),
        _ => return None,
    })
}

/// Most board power a form factor carries, W (SXM modules up to B200's
/// 1,000 W; a PCIe or workstation card up to 600 W on one 16-pin plug).
fn tdp_ceiling(form_factor: &str) -> Option<f64> {
    Some(match form_factor {
        "SXM" | "Superchip" => 1200.0,
        "PCIe" | "NVL" | "Workstation" | "Consumer" => 600.0,
        _ => return None,
    })
}

#[test]
fn every_row_is_plausible() {
    let mut problems = Vec::new();
    for g in gpus() {
        let n = &g.nvml_name;
        let mut bad = |what: String| problems.push(format!("{n}: {what}"));
        // NVML's form: a vendor word first, no stray spaces, consumer
        // cards as "NVIDIA GeForce RTX …".
        let prefix_ok = ["NVIDIA ", "Tesla ", "Quadro "]
            .iter()
            .any(|p| n.starts_with(p));
        if !prefix_ok || n.trim() != n || n.contains("  ") {
            bad("not an NVML product name".into());
        }
        if (g.form_factor == "Consumer") != n.starts_with("NVIDIA GeForce RTX ") {
            bad(format!("form factor {} against the name", g.form_factor));
        }
        match tdp_ceiling(&g.form_factor) {
            None => bad(format!("unknown form factor {}", g.form_factor)),
            Some(max) if !(40.0..=max).contains(&g.tdp_w) => {
                bad(format!("TDP {} W outside 40–{max} W", g.tdp_w))
            }
            _ => {}
        }
        if !(g.idle_w > 0.03 * g.tdp_w && g.idle_w < 0.45 * g.tdp_w) {
            bad(format!(
                "loaded idle {} W against TDP {} W",
                g.idle_w, g.tdp_w
            ));
        }
        if !["wattgpu", "measured", "tdp_share_0.15"].contains(&g.idle_basis.as_str()) {
            bad(format!("idle basis {}", g.idle_basis));
        }
        match pin_rate_range(&g.memory_type) {
            None => bad(format!("unknown memory type {}", g.memory_type)),
            Some((lo, hi)) => {
                let rate = g.memory_bandwidth_gb_s * 8.0 / g.memory_bus_bits;
                if !(lo..=hi).contains(&rate) {
                    bad(format!(
                        "{} GB/s on {} bits is {rate:.2} Gbit/s a pin, outside {lo}–{hi} for {}",
                        g.memory_bandwidth_gb_s, g.memory_bus_bits, g.memory_type
                    ));
                }
            }
        }
        if !(4.0..=200.0).contains(&g.memory_gb) {
            bad(format!("memory {} GB", g.memory_gb));
        }
        if !(g.fp16_tflops > 1.0 && g.fp16_tflops < 2500.0) {
            bad(format!("FP16 {} TFLOPS", g.fp16_tflops));
        }
        if !(g.tensor_tflops > 10.0 && g.tensor_tflops < 2500.0) {
            bad(format!("tensor {} TFLOPS", g.tensor_tflops));
        }
        if !(300.0..=3000.0).contains(&g.base_clock_mhz) || g.boost_clock_mhz < g.base_clock_mhz {
            bad(format!(
                "clocks {} / {} MHz",
                g.base_clock_mhz, g.boost_clock_mhz
            ));
        }
        if !(5_000.0..=250_000.0).contains(&g.transistor_count_m) {
            bad(format!("{} M transistors", g.transistor_count_m));
        }
        let year: f64 = g
            .release_date
            .get(..4)
            .and_then(|y| y.parse().ok())
            .unwrap_or(0.0);
        if year != g.release_year || !(2017.0..=2026.0).contains(&year) {
            bad(format!(
                "released {} in year {}",
                g.release_date, g.release_year
            ));
        }
        if !g.source.starts_with("https://") {
            bad(format!("source {}", g.source));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
