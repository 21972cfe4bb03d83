//! The one way tests make a bundle: [`BundleBuilder`] says which run (the
//! shared fixture, a GPU and models, a fault), what is changed in its
//! files, and who signs it; `build` packs it as `wattcounts pack` would.

use std::sync::OnceLock;

use serde_json::Value;
use ssh_key::PrivateKey;

use wattcounts::catalog;
use wattcounts::pack::{self, PackInput};
use wattcounts::signing;
use wattcounts::synth::{self, RunFolder, SynthOptions};

use super::AUDIENCE;

/// The model most single-model runs measure.
pub const QWEN: &str = "Qwen/Qwen2.5-0.5B-Instruct";

/// An L4 run of two small models in the harness's format, on the reference
/// protocol (generated once).
pub fn fixture() -> &'static RunFolder {
    static RUN: OnceLock<RunFolder> = OnceLock::new();
    RUN.get_or_init(|| {
        BundleBuilder::on("l4", &[QWEN, "meta-llama/Llama-3.2-3B-Instruct"]).generate()
    })
}

/// The protocol a generated run follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// The reference protocol with three iterations: joins the default view.
    Reference,
    /// A smaller, non-reference protocol (quick to generate and check).
    Small,
}

enum Source<'a> {
    /// The shared fixture.
    Fixture,
    /// A run given by the test.
    Run(&'a RunFolder),
    /// A run generated for this bundle.
    Generate {
        gpu: String,
        models: Vec<String>,
        protocol: Protocol,
        fault: synth::Fault,
        seed: Option<u64>,
        physics: synth::Physics,
    },
}

type Edit<'a> = Box<dyn Fn(&str) -> String + 'a>;

pub struct BundleBuilder<'a> {
    source: Source<'a>,
    files: Option<Vec<(String, Vec<u8>)>>,
    edits: Vec<(String, Edit<'a>)>,
    marker: Option<String>,
    model_name: Option<String>,
    signer: Option<(String, PrivateKey)>,
    declare_power_limit: bool,
    model_configs: Vec<(String, Option<String>, Vec<u8>)>,
    weights_indexes: Vec<(String, Vec<u8>)>,
}

impl<'a> BundleBuilder<'a> {
    fn from(source: Source<'a>) -> Self {
        BundleBuilder {
            source,
            files: None,
            edits: Vec::new(),
            marker: None,
            model_name: None,
            signer: None,
            declare_power_limit: false,
            model_configs: Vec::new(),
            weights_indexes: Vec::new(),
        }
    }

    /// The shared fixture: L4, two models, reference protocol.
    pub fn fixture() -> Self {
        Self::from(Source::Fixture)
    }

    /// A run the test made (or changed) itself.
    pub fn of(run: &'a RunFolder) -> Self {
        Self::from(Source::Run(run))
    }

    /// A reference-protocol run of catalogue `models` on catalogue `gpu`.
    pub fn on(gpu: &str, models: &[&str]) -> Self {
        Self::from(Source::Generate {
            gpu: gpu.into(),
            models: models.iter().map(|m| m.to_string()).collect(),
            protocol: Protocol::Reference,
            fault: synth::Fault::None,
            seed: None,
            physics: synth::Physics::Demo,
        })
    }

    /// One model (Qwen 0.5B) on an L4 carrying `fault`, with its own seed
    /// (the small protocol unless `.protocol(Reference)`).
    pub fn faulty(fault: synth::Fault, seed: u64) -> Self {
        Self::from(Source::Generate {
            gpu: "l4".into(),
            models: vec![QWEN.into()],
            protocol: Protocol::Small,
            fault,
            seed: Some(seed),
            physics: synth::Physics::Demo,
        })
    }

    /// The seed of a generated run (its protocol's unless set): another
    /// seed, other measurements.
    pub fn seeded(mut self, s: u64) -> Self {
        if let Source::Generate { seed, .. } = &mut self.source {
            *seed = Some(s);
        } else {
            panic!("only a generated run has a seed to choose");
        }
        self
    }

    /// Ships `config` as model `id`'s config.json (as `pack` does from the
    /// Hugging Face cache), at `revision`.
    pub fn with_model_config(mut self, id: &str, revision: &str, config: &[u8]) -> Self {
        self.model_configs
            .push((id.into(), Some(revision.into()), config.to_vec()));
        self
    }

    /// Ships `index` as model `id`'s model.safetensors.index.json (as
    /// `pack` does when the Hugging Face cache has it).
    pub fn with_weights_index(mut self, id: &str, index: &[u8]) -> Self {
        self.weights_indexes.push((id.into(), index.to_vec()));
        self
    }

    /// The catalogue GPU (its id) of a generated run.
    pub fn gpu(mut self, id: &str) -> Self {
        if let Source::Generate { gpu, .. } = &mut self.source {
            *gpu = id.into();
        } else {
            panic!("only a generated run has a GPU to choose");
        }
        self
    }

    /// The physics of a generated run (the demo's unless set).
    pub fn physics(mut self, p: synth::Physics) -> Self {
        if let Source::Generate { physics, .. } = &mut self.source {
            *physics = p;
        } else {
            panic!("only a generated run has a physics to choose");
        }
        self
    }

    /// The protocol of a generated run.
    pub fn protocol(mut self, p: Protocol) -> Self {
        if let Source::Generate { protocol, .. } = &mut self.source {
            *protocol = p;
        } else {
            panic!("only a generated run has a protocol to choose");
        }
        self
    }

    /// These files instead of the run's.
    pub fn files(mut self, files: Vec<(String, Vec<u8>)>) -> Self {
        self.files = Some(files);
        self
    }

    /// The first file whose path ends with `suffix`, rewritten by `edit`.
    pub fn edit(mut self, suffix: &str, edit: impl Fn(&str) -> String + 'a) -> Self {
        self.edits.push((suffix.into(), Box::new(edit)));
        self
    }

    /// The run's content made unique by `n` (a comment line in
    /// system_info.txt): another run as far as the service can tell.
    pub fn marked(mut self, n: impl std::fmt::Display) -> Self {
        self.marker = Some(format!("run copy {n}"));
        self
    }

    /// Qwen 0.5B's id replaced by `name` in every file (hostile or unknown
    /// model names).
    pub fn model_named(mut self, name: &str) -> Self {
        self.model_name = Some(name.into());
        self
    }

    /// Signed for `handle` with `key`.
    pub fn by(mut self, handle: &str, key: &PrivateKey) -> Self {
        self.signer = Some((handle.into(), key.clone()));
        self
    }

    /// The manifest declares the GPU's power limit.
    pub fn declaring_power_limit(mut self) -> Self {
        self.declare_power_limit = true;
        self
    }

    /// The run itself, generated when the builder names one.
    pub fn generate(&self) -> RunFolder {
        match &self.source {
            Source::Fixture => fixture().clone(),
            Source::Run(run) => (*run).clone(),
            Source::Generate {
                gpu,
                models,
                protocol,
                fault,
                seed,
                physics,
            } => {
                let models: Vec<&catalog::ModelSpec> = models
                    .iter()
                    .map(|m| catalog::model_by_id(m).unwrap_or_else(|| panic!("{m}")))
                    .collect();
                let base = match protocol {
                    Protocol::Reference => SynthOptions::reference_quick(),
                    Protocol::Small => SynthOptions::small(),
                };
                let options = SynthOptions {
                    seed: seed.unwrap_or(base.seed),
                    fault: *fault,
                    physics: *physics,
                    ..base
                };
                synth::generate_run(catalog::gpu_by_id(gpu).unwrap(), &models, &options)
            }
        }
    }

    fn with_run<T>(&self, f: impl FnOnce(&RunFolder) -> T) -> T {
        match &self.source {
            Source::Fixture => f(fixture()),
            Source::Run(run) => f(run),
            Source::Generate { .. } => f(&self.generate()),
        }
    }

    /// The files as the bundle will carry them, every change applied.
    pub fn bundle_files(&self) -> Vec<(String, Vec<u8>)> {
        self.with_run(|run| self.files_of(run))
    }

    fn files_of(&self, run: &RunFolder) -> Vec<(String, Vec<u8>)> {
        let mut files = match (&self.files, &self.marker) {
            (Some(files), _) => files.clone(),
            (None, Some(marker)) => run.files_marked(marker),
            (None, None) => run.files.clone(),
        };
        for (suffix, edit) in &self.edits {
            let (_, data) = files
                .iter_mut()
                .find(|(p, _)| p.ends_with(suffix.as_str()))
                .unwrap_or_else(|| panic!("no file ends with {suffix}"));
            *data = edit(std::str::from_utf8(data).unwrap()).into_bytes();
        }
        if let Some(name) = &self.model_name {
            for (_, data) in files.iter_mut() {
                let text = String::from_utf8(std::mem::take(data)).unwrap();
                *data = text.replace(QWEN, name).into_bytes();
            }
        }
        files
    }

    /// What `wattcounts pack` is given.
    pub fn pack_input(&self) -> PackInput {
        let (handle, key) = self
            .signer
            .as_ref()
            .expect("say who signs the bundle: .by(handle, &key)");
        self.with_run(|run| PackInput {
            run_name: run.name.clone(),
            files: self.files_of(run),
            config_file: "config-v2.yaml".into(),
            config_yaml: run.config_yaml.clone(),
            handle: handle.clone(),
            key_fingerprint: signing::fingerprint(key.public_key()),
            audience: AUDIENCE.into(),
            harness_commit: "abc1234".into(),
            vllm_version: Some("0.14.0".into()),
            declare_power_limit: self.declare_power_limit,
            created_at: chrono::Utc::now(),
            model_configs: self.model_configs.clone(),
            weights_indexes: self.weights_indexes.clone(),
        })
    }

    /// The manifest a pack would write, as JSON to edit.
    pub fn manifest_json(&self) -> Value {
        serde_json::to_value(pack::build_manifest(&self.pack_input()).unwrap()).unwrap()
    }

    /// The bundle's bytes (.tar.gz).
    pub fn build(&self) -> Vec<u8> {
        pack::pack(&self.pack_input()).unwrap().bytes
    }
}
