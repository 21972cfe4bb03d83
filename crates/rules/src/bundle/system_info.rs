//! `system_info.txt`: the harness dumps `lscpu`, `nvidia-smi -q`, `free -h`
//! and `df -h` into one file, each under a header line naming the command.
//! We read the few facts the manifest and checks need.

#[derive(Debug, Clone, Default, PartialEq)]
pub struct SystemInfo {
    /// NVML product name of device 0.
    pub gpu_name: Option<String>,
    pub gpu_count: Option<u32>,
    pub driver_version: Option<String>,
    pub cuda_version: Option<String>,
    /// Current (enforced) power limit of device 0, watts.
    pub power_limit_w: Option<f64>,
    pub default_power_limit_w: Option<f64>,
    pub cpu_model: Option<String>,
    pub memory_gib: Option<f64>,
}

pub const FILE_NAME: &str = "system_info.txt";

pub fn parse(text: &str) -> SystemInfo {
    let mut info = SystemInfo::default();
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix("Mem:") {
            if info.memory_gib.is_none() {
                info.memory_gib = rest.split_whitespace().next().and_then(parse_human_size);
            }
            continue;
        }
        let Some((key, value)) = trimmed.split_once(':') else {
            continue;
        };
        let key = key.trim();
        let value = value.trim();
        match key {
            "Product Name" if info.gpu_name.is_none() => info.gpu_name = Some(value.to_string()),
            "Driver Version" if info.driver_version.is_none() => {
                info.driver_version = Some(value.to_string())
            }
            "CUDA Version" if info.cuda_version.is_none() => {
                info.cuda_version = Some(value.to_string())
            }
            "Attached GPUs" => info.gpu_count = value.parse().ok(),
            // Newer drivers say "Current Power Limit", older ones "Power Limit"
            // or "Enforced Power Limit"; the first one seen is device 0's.
            "Current Power Limit" | "Power Limit" | "Enforced Power Limit"
                if info.power_limit_w.is_none() =>
            {
                info.power_limit_w = parse_watts(value)
            }
            "Default Power Limit" if info.default_power_limit_w.is_none() => {
                info.default_power_limit_w = parse_watts(value)
            }
            "Model name" if info.cpu_model.is_none() => info.cpu_model = Some(value.to_string()),
            _ => {}
        }
    }
    info
}

fn parse_watts(v: &str) -> Option<f64> {
    let n: f64 = v.trim_end_matches('W').trim().parse().ok()?;
    n.is_finite().then_some(n)
}

/// `free -h` sizes: 503Gi, 1.0Ti, 512Mi.
fn parse_human_size(v: &str) -> Option<f64> {
    let split = v.find(|c: char| c.is_ascii_alphabetic())?;
    let (num, unit) = v.split_at(split);
    let n: f64 = num.parse().ok()?;
    let gib = match unit.trim_end_matches('B').trim_end_matches('i') {
        "K" => n / (1024.0 * 1024.0),
        "M" => n / 1024.0,
        "G" => n,
        "T" => n * 1024.0,
        _ => return None,
    };
    Some((gib * 100.0).round() / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_nvidia_smi_and_friends() {
        let text = "=== lscpu ===\nModel name:            AMD EPYC 7763 64-Core Processor\n\
            === nvidia-smi -q ===\n\nDriver Version                            : 550.54.15\n\
            CUDA Version                              : 12.4\n\nAttached GPUs                             : 1\n\
            GPU 00000000:01:00.0\n    Product Name                          : NVIDIA H100 PCIe\n\
                GPU Power Readings\n        Current Power Limit               : 300.00 W\n\
            \x20       Default Power Limit               : 350.00 W\n\
            === free -h ===\n               total        used\nMem:           503Gi        12Gi\n";
        let info = parse(text);
        assert_eq!(info.gpu_name.as_deref(), Some("NVIDIA H100 PCIe"));
        assert_eq!(info.gpu_count, Some(1));
        assert_eq!(info.power_limit_w, Some(300.0));
        assert_eq!(info.default_power_limit_w, Some(350.0));
        assert_eq!(
            info.cpu_model.as_deref(),
            Some("AMD EPYC 7763 64-Core Processor")
        );
        assert_eq!(info.memory_gib, Some(503.0));
        assert_eq!(info.driver_version.as_deref(), Some("550.54.15"));
    }
}
