//! `power_traces-<gpu>.parquet`: every 10 Hz GPU power sample of the accepted
//! submissions, in long format. Ingest keeps only statistics of the traces,
//! so they are read back from the stored bundles, whose digests are checked
//! first: the traces come from the bytes the submitter signed.

use std::path::Path;

use polars::prelude::*;
use rayon::prelude::*;

use super::tables::{DigestFile, Written};
use wattcounts_rules::bundle::harness::{
    self, FileKind, PowerTrace, Scenario, POWER_SAMPLES_PER_S,
};
use wattcounts_rules::bundle::unpack::{self, UnpackLimits};
use wattcounts_rules::digest::sha256_hex;
use wattcounts_store::blobs::BlobStore;
use wattcounts_store::SubmissionRecord;

/// One submission's traces: (scenario, trace) in harness file order.
fn read_traces(
    blobs: &BlobStore,
    s: &SubmissionRecord,
) -> anyhow::Result<Vec<(Scenario, PowerTrace)>> {
    let bytes = blobs
        .read(&s.blob_path)
        .map_err(|e| anyhow::anyhow!("reading the bundle of submission {}: {e}", s.id))?;
    let digest = sha256_hex(&bytes);
    anyhow::ensure!(
        digest == s.bundle_sha256,
        "the stored bundle of submission {} has sha256 {digest}, the database says {}",
        s.id,
        s.bundle_sha256
    );
    let mut files = Vec::new();
    unpack::unpack_each(&bytes, &UnpackLimits::STORED, |e| {
        let name = e.path.rsplit('/').next().unwrap_or(&e.path);
        if let Some(FileKind::Results(scenario)) = harness::classify(name) {
            if e.path.matches('/').count() == 1 {
                files.push((scenario, e));
            }
        }
    })
    .map_err(|r| {
        anyhow::anyhow!(
            "unpacking the bundle of submission {}: {}{}",
            s.id,
            r.message,
            unpack::audit_hint(&r)
        )
    })?;
    // Model folders in path order, as the harness laid them out.
    files.sort_by(|a, b| a.1.path.cmp(&b.1.path));
    let parsed = files
        .par_iter()
        .map(|(scenario, e)| {
            harness::parse_power_traces(&e.path, &e.data, *scenario)
                .map(|ts| ts.into_iter().map(|t| (*scenario, t)).collect::<Vec<_>>())
                .map_err(|r| anyhow::anyhow!("submission {}: {}", s.id, r.message))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(parsed.into_iter().flatten().collect())
}

/// One submission's traces as a long frame.
fn frame(submission: &str, traces: &[(Scenario, PowerTrace)]) -> PolarsResult<DataFrame> {
    let n: usize = traces.iter().map(|(_, t)| t.watts.len()).sum();
    let mut model = Vec::with_capacity(n);
    let mut scenario = Vec::with_capacity(n);
    let mut lambda = Vec::with_capacity(n);
    let mut iteration = Vec::with_capacity(n);
    let mut t_s = Vec::with_capacity(n);
    let mut watts = Vec::with_capacity(n);
    for (sc, t) in traces {
        for (i, w) in t.watts.iter().enumerate() {
            model.push(t.model.as_str());
            scenario.push(sc.as_str());
            lambda.push(t.lambda_qps);
            iteration.push(i64::from(t.iteration));
            // Division, not i × 0.1, so sample 3 is at 0.3 s, not 0.30000000000000004.
            t_s.push(i as f64 / POWER_SAMPLES_PER_S);
            watts.push(*w);
        }
    }
    let names = super::columns::POWER_TRACES;
    let name = |i: usize| PlSmallStr::from_static(names[i].name);
    DataFrame::new(
        n,
        vec![
            Column::new_scalar(name(0), Scalar::from(PlSmallStr::from(submission)), n),
            Column::new(name(1), model),
            Column::new(name(2), scenario),
            Column::new(name(3), lambda),
            Column::new(name(4), iteration),
            Column::new(name(5), t_s),
            Column::new(name(6), watts),
        ],
    )
}

/// Writes one GPU's `power_traces-<gpu>.parquet` one submission (one row group or more) at
/// a time, so memory holds one bundle's traces, not the dataset's.
pub fn write(
    blobs: &BlobStore,
    submissions: &[SubmissionRecord],
    path: &Path,
    mut progress: impl FnMut(usize),
) -> anyhow::Result<Written> {
    let mut file = DigestFile::create(path)?;
    let empty = frame("", &[])?;
    let mut writer =
        super::tables::parquet_writer(&mut file, empty.schema()).batched(empty.schema())?;
    let mut rows = 0u64;
    for (i, s) in submissions.iter().enumerate() {
        let traces = read_traces(blobs, s)?;
        let df = frame(&s.id.to_string(), &traces)?;
        rows += df.height() as u64;
        writer.write_batch(&df)?;
        progress(i + 1);
    }
    writer.finish()?;
    drop(writer);
    Ok(file.finish(Some(rows))?)
}
