//! `croissant.json`: the snapshot described in Croissant 1.1 (MLCommons'
//! JSON-LD vocabulary for ML datasets), so dataset search engines and
//! loaders (`mlcroissant`, TFDS, Hugging Face) read it without our docs.
//! Each data file is a `FileObject` with its SHA-256; each table is a
//! `RecordSet` whose fields come from the same column lists that write the
//! files and the card ([`super::columns`]), so the three cannot disagree.

use serde_json::{json, Map, Value};

use super::card::CardInput;
use super::columns::{ColumnDoc, Kind};
use wattcounts_rules::bundle::manifest::DATASET_LICENCE;

pub const FILE_NAME: &str = "croissant.json";

/// The JSON-LD context of Croissant 1.1, as `mlcroissant` writes it
/// (`mlcroissant._src.core.rdf.make_context()`, mlcroissant 1.1.0).
fn context() -> Value {
    json!({
        "@language": "en",
        "@vocab": "https://schema.org/",
        "citeAs": "cr:citeAs",
        "column": "cr:column",
        "conformsTo": "dct:conformsTo",
        "cr": "http://mlcommons.org/croissant/",
        "data": {"@id": "cr:data", "@type": "@json"},
        "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
        "dct": "http://purl.org/dc/terms/",
        "equivalentProperty": "cr:equivalentProperty",
        "examples": {"@id": "cr:examples", "@type": "@json"},
        "extract": "cr:extract",
        "field": "cr:field",
        "fileObject": "cr:fileObject",
        "fileProperty": "cr:fileProperty",
        "fileSet": "cr:fileSet",
        "format": "cr:format",
        "includes": "cr:includes",
        "isLiveDataset": "cr:isLiveDataset",
        "jsonPath": "cr:jsonPath",
        "key": "cr:key",
        "md5": "cr:md5",
        "parentField": "cr:parentField",
        "path": "cr:path",
        "rai": "http://mlcommons.org/croissant/RAI/",
        "recordSet": "cr:recordSet",
        "references": "cr:references",
        "regex": "cr:regex",
        "repeated": "cr:repeated",
        "replace": "cr:replace",
        "samplingRate": "cr:samplingRate",
        "sc": "https://schema.org/",
        "separator": "cr:separator",
        "source": "cr:source",
        "subField": "cr:subField",
        "transform": "cr:transform"
    })
}

/// The schema.org type a column's values have.
fn data_type(kind: Kind) -> &'static str {
    match kind {
        Kind::Text => "sc:Text",
        Kind::Int => "sc:Integer",
        Kind::Float => "sc:Float",
        Kind::Bool => "sc:Boolean",
        Kind::Timestamp => "sc:DateTime",
    }
}

/// The encoding format Croissant readers dispatch on (the manifest's
/// media types carry a charset or the IANA Parquet name).
fn encoding_format(path: &str) -> &'static str {
    match path.rsplit('.').next() {
        Some("parquet") => "application/x-parquet",
        Some("csv") => "text/csv",
        Some("jsonl") => "application/jsonlines",
        Some("md") => "text/markdown",
        Some("json") => "application/json",
        _ => "text/plain",
    }
}

/// A record set's id: the file name with `_` for `.`, since the same table
/// is published as Parquet and as CSV and each file's id is its name
/// (`configurations.csv` → `configurations_csv`).
fn table_id(path: &str) -> String {
    path.replace('.', "_")
}

fn field(table: &str, file: &str, c: &ColumnDoc) -> Value {
    let description = if c.unit.is_empty() {
        c.meaning.to_string()
    } else {
        format!("{} ({})", c.meaning, c.unit)
    };
    json!({
        "@type": "cr:Field",
        "@id": format!("{table}/{}", c.name),
        "name": c.name,
        "description": description,
        "dataType": data_type(c.kind),
        "source": {"fileObject": {"@id": file}, "extract": {"column": c.name}}
    })
}

/// The Croissant description of the files in `input` (the data files,
/// the card and the citation; not the manifest, which lists this file).
pub fn document(input: &CardInput<'_>, extra_files: &[(&str, u64, &str)]) -> Value {
    // Relative to this file: it resolves to the served copy
    // (/snapshots/ID/FILE) and to a downloaded folder alike.
    let content_url = |path: &str| path.to_string();
    let mut distribution = Vec::new();
    let mut record_sets = Vec::new();
    for (f, what, docs) in &input.files {
        distribution.push(json!({
            "@type": "cr:FileObject",
            "@id": f.path,
            "name": f.path,
            "description": what,
            "contentUrl": content_url(&f.path),
            "contentSize": format!("{} B", f.bytes),
            "encodingFormat": encoding_format(&f.path),
            "sha256": f.sha256,
        }));
        if docs.is_empty() {
            continue;
        }
        let table = table_id(&f.path);
        record_sets.push(json!({
            "@type": "cr:RecordSet",
            "@id": table,
            "name": table,
            "description": what,
            "field": docs.iter().map(|c| field(&table, &f.path, c)).collect::<Vec<_>>(),
        }));
    }
    for (path, bytes, sha256) in extra_files {
        distribution.push(json!({
            "@type": "cr:FileObject",
            "@id": path,
            "name": path,
            "contentUrl": content_url(path),
            "contentSize": format!("{bytes} B"),
            "encodingFormat": encoding_format(path),
            "sha256": sha256,
        }));
    }
    let c = &input.coverage;
    let mut description = format!(
        "Energy of LLM inference on NVIDIA GPUs, measured by the Watt Counts benchmark harness \
         (vLLM, batch and server scenarios, GPU board power from NVML at 10 Hz) and submitted to the \
         open Watt Counts service: {} accepted submissions from {} GPUs and {} models, {} iterations, \
         {} configurations. Only accepted submissions are published; every figure is derived by the \
         service from the raw harness files.",
        c.submissions, c.gpus, c.models, c.iterations, c.configurations
    );
    if c.demo_submissions > 0 {
        description.push_str(&format!(
            " {} of the {} submissions are synthetic demo data (demo = true), not measurements.",
            c.demo_submissions, c.submissions
        ));
    }
    description.push_str(
        " Published peer datasets the service imports (e.g. ML.ENERGY v3) are not part of this snapshot.",
    );
    let mut doc = Map::new();
    doc.insert("@context".into(), context());
    doc.insert("@type".into(), json!("sc:Dataset"));
    doc.insert(
        "conformsTo".into(),
        json!("http://mlcommons.org/croissant/1.1"),
    );
    doc.insert(
        "name".into(),
        json!(format!("watt-counts-{}", input.snapshot_id)),
    );
    doc.insert("description".into(), json!(description));
    doc.insert(
        "license".into(),
        json!(format!("https://spdx.org/licenses/{DATASET_LICENCE}.html")),
    );
    doc.insert(
        "creator".into(),
        json!({"@type": "sc:Organization", "name": "Watt Counts contributors"}),
    );
    doc.insert("datePublished".into(), json!(input.created_at));
    doc.insert("version".into(), json!(input.snapshot_id));
    doc.insert(
        "citeAs".into(),
        json!(format!(
            "Watt Counts contributors. Watt Counts: energy of LLM inference on NVIDIA GPUs, snapshot {} ({}). License {DATASET_LICENCE}.",
            input.snapshot_id,
            input.created_at.get(..10).unwrap_or(input.created_at)
        )),
    );
    if let Some(url) = &input.url {
        doc.insert("url".into(), json!(url));
    }
    doc.insert(
        "keywords".into(),
        json!(["energy", "LLM inference", "GPU", "benchmark", "vLLM"]),
    );
    doc.insert("distribution".into(), Value::Array(distribution));
    doc.insert("recordSet".into(), Value::Array(record_sets));
    Value::Object(doc)
}
