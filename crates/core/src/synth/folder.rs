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

pub fn model_dir_name(model_id: &str) -> String {
    model_id.replace('/', "_")
}
