//! A synthetic run as the harness leaves it on disk, held in memory, and
//! how the harness names a model's folder.

/// One run folder, in memory: relative paths and contents.
#[derive(Debug, Clone)]
pub struct RunFolder {
    /// `run_YYYYmmdd_HHMMSS`, as the harness names it.
    pub name: String,
    pub config_yaml: String,
    pub files: Vec<(String, Vec<u8>)>,
    /// Models left out because they do not fit the GPU's memory.
    pub skipped_models: Vec<String>,
}

impl RunFolder {
    /// The files with `marker` as a comment line at the end of
    /// system_info.txt: the same measurements, another run to the service
    /// (its run-content digest differs). Tests and benchmarks that need
    /// many distinct submissions use it.
    pub fn files_marked(&self, marker: &str) -> Vec<(String, Vec<u8>)> {
        self.files
            .iter()
            .map(|(p, d)| {
                let mut d = d.clone();
                if p == "system_info.txt" {
                    d.extend(format!("\n# {marker}\n").bytes());
                }
                (p.clone(), d)
            })
            .collect()
    }
}

/// The folder the harness writes a model's CSVs to. `run_benchmark.sh`
/// takes the YAML's list item as written (`"Qwen/Qwen2.5-0.5B-Instruct"`,
/// quotes included), echoes it (a newline follows), turns `/` into `_`,
/// then every byte outside `[A-Za-z0-9_-]` into `_`:
/// `_Qwen_Qwen2_5-0_5B-Instruct__`.
pub fn model_dir_name(model_id: &str) -> String {
    format!("\"{model_id}\"\n")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn folder_names_are_the_harness_s() {
        // As run_benchmark.sh names them for config-v2.yaml's quoted items.
        assert_eq!(
            super::model_dir_name("Qwen/Qwen2.5-0.5B-Instruct"),
            "_Qwen_Qwen2_5-0_5B-Instruct__"
        );
        assert_eq!(
            super::model_dir_name("meta-llama/Llama-3.1-8B-Instruct"),
            "_meta-llama_Llama-3_1-8B-Instruct__"
        );
    }
}
