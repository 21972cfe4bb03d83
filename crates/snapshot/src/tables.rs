//! Rows to polars frames, one column per [`Field`], and frames to Parquet
//! and CSV bytes on disk.

use std::io::Write;
use std::path::Path;

use polars::io::parquet::write::KeyValueMetadata;
use polars::prelude::*;

use super::columns::{ColumnDoc, Field, Kind, Value};
use wattcounts_rules::spreadsheet::text_cell;

/// Which file a frame is for: CSV text cells are made safe for spreadsheets,
/// Parquet keeps them as they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Parquet,
    Csv,
}

/// Builds a frame with the documented columns, in order.
pub fn frame<R>(fields: &[Field<R>], rows: &[R], target: Target) -> PolarsResult<DataFrame> {
    let columns = fields
        .iter()
        .map(|f| column(&f.doc, rows.iter().map(|r| (f.get)(r)), target))
        .collect::<PolarsResult<Vec<_>>>()?;
    DataFrame::new(rows.len(), columns)
}

/// The column's cells, each of its documented kind.
fn cells<T>(
    doc: &ColumnDoc,
    values: impl Iterator<Item = Value>,
    pick: fn(Value) -> Result<T, Value>,
) -> PolarsResult<Vec<T>> {
    values.map(pick).collect::<Result<Vec<T>, Value>>().map_err(
        |v| polars_err!(ComputeError: "column {} is {:?} but a row gave {:?}", doc.name, doc.kind, v),
    )
}

fn column(
    doc: &ColumnDoc,
    values: impl Iterator<Item = Value>,
    target: Target,
) -> PolarsResult<Column> {
    let name = PlSmallStr::from_static(doc.name);
    Ok(match doc.kind {
        Kind::Text => {
            let texts: Vec<String> = cells(doc, values, |v| match v {
                Value::Text(s) => Ok(s),
                other => Err(other),
            })?;
            match target {
                Target::Csv => {
                    Column::new(name, texts.iter().map(|t| text_cell(t)).collect::<Vec<_>>())
                }
                Target::Parquet => Column::new(name, texts),
            }
        }
        Kind::Int => Column::new(
            name,
            cells(doc, values, |v| match v {
                Value::Int(i) => Ok(i),
                other => Err(other),
            })?,
        ),
        Kind::Float => Column::new(
            name,
            cells(doc, values, |v| match v {
                Value::Float(f) => Ok(f),
                other => Err(other),
            })?,
        ),
        Kind::Bool => Column::new(
            name,
            cells(doc, values, |v| match v {
                Value::Bool(b) => Ok(b),
                other => Err(other),
            })?,
        ),
        Kind::Timestamp => Column::new(
            name,
            cells(doc, values, |v| match v {
                Value::Timestamp(ms) => Ok(ms),
                other => Err(other),
            })?,
        )
        .cast(&DataType::Datetime(TimeUnit::Milliseconds, None))?,
    })
}

/// What writing a file produced.
#[derive(Debug, Clone)]
pub struct Written {
    pub bytes: u64,
    pub sha256: String,
    /// Data rows; None for the card and the citation.
    pub rows: Option<u64>,
}

/// A new file, digested as the bytes go out, so nothing is read back to
/// fill the manifest.
pub struct DigestFile {
    file: std::fs::File,
    hasher: sha2::Sha256,
    bytes: u64,
}

impl DigestFile {
    pub fn create(path: &Path) -> std::io::Result<Self> {
        Ok(DigestFile {
            file: std::fs::File::create(path)?,
            hasher: sha2::Digest::new(),
            bytes: 0,
        })
    }

    /// Fsyncs the file and says what was written.
    pub fn finish(mut self, rows: Option<u64>) -> std::io::Result<Written> {
        self.file.flush()?;
        self.file.sync_all()?;
        Ok(Written {
            bytes: self.bytes,
            sha256: hex::encode(sha2::Digest::finalize(self.hasher)),
            rows,
        })
    }
}

impl Write for DigestFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        sha2::Digest::update(&mut self.hasher, &buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// Writes bytes made in memory (the card, the citation).
pub fn write_bytes(path: &Path, bytes: &[u8]) -> std::io::Result<Written> {
    let mut f = DigestFile::create(path)?;
    f.write_all(bytes)?;
    f.finish(None)
}

/// A zstd Parquet writer whose Arrow schema names text `large_string`.
/// Polars would record its in-memory `string_view`, which pyarrow before
/// 16 and other older readers do not know; the bytes on disk are the same
/// UTF-8 columns either way.
pub fn parquet_writer<W: Write>(out: W, schema: &Schema) -> ParquetWriter<W> {
    let arrow =
        polars_parquet::write::schema_to_metadata_key(&schema.to_arrow(CompatLevel::oldest()));
    let metadata = arrow
        .value
        .map(|v| KeyValueMetadata::from_static(vec![(arrow.key, v)]));
    ParquetWriter::new(out)
        .with_compression(ParquetCompression::Zstd(None))
        .with_key_value_metadata(metadata)
}

/// Writes a frame as Parquet (zstd) and fsyncs it.
pub fn write_parquet(df: &mut DataFrame, path: &Path) -> anyhow::Result<Written> {
    let mut file = DigestFile::create(path)?;
    let schema = df.schema().clone();
    parquet_writer(&mut file, &schema).finish(df)?;
    Ok(file.finish(Some(df.height() as u64))?)
}

/// The CSV conventions of every table: header row, empty cell for null,
/// `.`-decimal floats as short as round-trips, ISO timestamps in UTC.
pub fn csv_writer<W: Write>(out: W) -> CsvWriter<W> {
    CsvWriter::new(out)
        .include_header(true)
        .with_datetime_format(Some("%Y-%m-%dT%H:%M:%S%.3fZ".into()))
}

/// Writes a frame as CSV and fsyncs it.
pub fn write_csv(df: &mut DataFrame, path: &Path) -> anyhow::Result<Written> {
    let mut file = DigestFile::create(path)?;
    csv_writer(&mut file).finish(df)?;
    Ok(file.finish(Some(df.height() as u64))?)
}
