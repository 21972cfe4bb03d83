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

#[test]
fn every_row_is_plausible() {
    let problems: Vec<String> = gpus()
        .iter()
        .flat_map(|g| {
            plausibility_problems(g)
                .into_iter()
                .map(move |p| format!("{}: {p}", g.nvml_name))
        })
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A row with every field plausible (an A100 80 GB SXM's figures).
fn plausible() -> GpuSpec {
    gpu_by_nvml_name("NVIDIA A100-SXM4-80GB").unwrap().clone()
}

/// One change to a plausible row.
type Edit = Box<dyn Fn(&mut GpuSpec)>;

#[test]
fn each_implausible_field_is_named_with_its_figure() {
    let cases: Vec<(&str, Edit)> = vec![
        (
            "nvml_name",
            Box::new(|g| g.nvml_name = "NVIDIA  A100-SXM4-80GB".into()),
        ),
        (
            "form_factor",
            Box::new(|g| g.form_factor = "Consumer".into()),
        ),
        ("tdp_w 1500", Box::new(|g| g.tdp_w = 1500.0)),
        ("idle_w 300", Box::new(|g| g.idle_w = 300.0)),
        ("idle_basis", Box::new(|g| g.idle_basis = "guess".into())),
        // 2039 GB/s on 5120 bits is 3.19 Gbit/s a pin: HBM2e, not HBM3.
        ("3.19 Gbit/s", Box::new(|g| g.memory_type = "HBM3".into())),
        (
            "memory_type 'DDR4'",
            Box::new(|g| g.memory_type = "DDR4".into()),
        ),
        ("memory_gb 800", Box::new(|g| g.memory_gb = 800.0)),
        ("fp16_tflops 0.5", Box::new(|g| g.fp16_tflops = 0.5)),
        ("tensor_tflops 5", Box::new(|g| g.tensor_tflops = 5.0)),
        (
            "boost_clock_mhz 900",
            Box::new(|g| g.boost_clock_mhz = 900.0),
        ),
        (
            "transistor_count_m 54",
            Box::new(|g| g.transistor_count_m = 54.0),
        ),
        ("release_year 2019", Box::new(|g| g.release_year = 2019.0)),
        (
            "release_date '2021-13-01'",
            Box::new(|g| g.release_date = "2021-13-01".into()),
        ),
        (
            "source 'techpowerup'",
            Box::new(|g| g.source = "techpowerup".into()),
        ),
        ("id 'a100'", Box::new(|g| g.id = "a100".into())),
    ];
    assert!(plausibility_problems(&plausible()).is_empty());
    for (want, edit) in cases {
        let mut g = plausible();
        edit(&mut g);
        let problems = plausibility_problems(&g);
        assert_eq!(problems.len(), 1, "{want}: {problems:?}");
        assert!(problems[0].contains(want), "{want}: {problems:?}");
    }
}
