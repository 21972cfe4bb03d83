"""Reads a wattcounts snapshot back the way a researcher would (pyarrow,
pandas, polars) and checks it against the manifest, the dataset card and
the service's own API answers.

    python readback.py SNAPSHOT_DIR API_DUMP.json

API_DUMP.json: {"leaderboard": [entries of /api/v1/leaderboard],
                "receipts": {submission_id: /api/v1/submissions/{id}}}

Exits 0 and prints one summary line when everything agrees; otherwise
prints each disagreement and exits 1.
"""

import base64
import hashlib
import json
import math
import re
import sys
from pathlib import Path

import pandas as pd
import polars as pl
import pyarrow.parquet as pq

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
problems = []


def problem(msg):
    problems.append(msg)
    print("MISMATCH:", msg)


def same_float(a, b, rel=0.0):
    a_missing = a is None or (isinstance(a, float) and math.isnan(a))
    b_missing = b is None or (isinstance(b, float) and math.isnan(b))
    if a_missing or b_missing:
        return a_missing and b_missing
    if rel == 0.0:
        return float(a) == float(b)
    return abs(float(a) - float(b)) <= rel * max(abs(float(a)), abs(float(b)), 1e-300)


def card_columns(card):
    """The card's column tables: {file: [(name, type)]}."""
    out = {}
    files = []
    for line in card.splitlines():
        if line.startswith("### "):
            files = re.findall(r"`([^`]+)`", line)
            for f in files:
                out[f] = []
        m = re.match(r"^\| `([^`]+)` \| ([^|]+) \|", line)
        if m and files and m.group(2).strip() not in ("", "rows"):
            for f in files:
                out[f].append((m.group(1), m.group(2).strip()))
    return out


def check_schema(snap, manifest, card):
    documented = card_columns(card)
    for f in manifest["files"]:
        # log.jsonl counts lines, not table rows: check_log reads it.
        if "rows" not in f or f["path"].endswith(".jsonl"):
            continue
        name = f["path"]
        want = [(c["name"], c["type"]) for c in f["columns"]]
        if documented.get(name) != want:
            problem(f"{name}: card documents {documented.get(name)}, manifest says {want}")
        if name.endswith(".parquet"):
            schema = pq.read_schema(snap / name)
            got = [(fld.name, str(fld.type)) for fld in schema]
            if got != want:
                problem(f"{name}: pyarrow reads columns {got}, manifest/card say {want}")
            rows = pq.ParquetFile(snap / name).metadata.num_rows
        else:
            df = pd.read_csv(snap / name, keep_default_na=False)
            got = list(df.columns)
            if got != [n for n, _ in want]:
                problem(f"{name}: header {got}, manifest/card say {[n for n, _ in want]}")
            rows = len(df)
        if rows != f["rows"]:
            problem(f"{name}: {rows} rows, manifest says {f['rows']}")


def unescape(v):
    return v[1:] if isinstance(v, str) and v.startswith("'") and v[1:2] and v[1] in FORMULA_START else v


def check_csv_round_trip(snap, stem, text_columns):
    """The CSV holds the Parquet's values: numbers exactly, text with the
    spreadsheet guard as the only difference."""
    par = pd.read_parquet(snap / f"{stem}.parquet")
    csv = pd.read_csv(snap / f"{stem}.csv", keep_default_na=False, na_values={
        c: [""] for c in par.columns if c not in text_columns})
    if len(par) != len(csv):
        problem(f"{stem}: {len(par)} Parquet rows, {len(csv)} CSV rows")
        return
    for col in par.columns:
        for i, (p, c) in enumerate(zip(par[col].tolist(), csv[col].tolist())):
            if col in text_columns:
                guarded = isinstance(p, str) and p.startswith(FORMULA_START)
                if (guarded and c != "'" + p) or (not guarded and c != p):
                    problem(f"{stem}.csv row {i + 2} column {col}: {c!r}, Parquet has {p!r}")
                    return
                if unescape(c) != p:
                    problem(f"{stem}.csv row {i + 2} column {col}: unescaped {unescape(c)!r} != {p!r}")
                    return
            elif isinstance(p, bool) or isinstance(c, bool):
                if bool(p) != bool(c):
                    problem(f"{stem}.csv row {i + 2} column {col}: {c!r}, Parquet has {p!r}")
                    return
            elif not same_float(p, c):
                problem(f"{stem}.csv row {i + 2} column {col}: {c!r}, Parquet has {p!r} (not the same number)")
                return
    # polars reads the same CSV to the same numbers.
    pcsv = pl.read_csv(snap / f"{stem}.csv", infer_schema_length=None)
    ppar = pl.read_parquet(snap / f"{stem}.parquet")
    for col in ppar.columns:
        if col in text_columns or ppar[col].dtype == pl.Boolean:
            continue
        a, b = ppar[col].to_list(), pcsv[col].to_list()
        if not all(same_float(x, y) for x, y in zip(a, b)):
            problem(f"{stem}.csv column {col}: polars reads other numbers than the Parquet holds")


def key(model, scenario, lam):
    return (model, scenario, None if lam is None or (isinstance(lam, float) and math.isnan(lam)) else round(float(lam), 9))


def group_key(r):
    return (r["origin"], r["protocol_id"], r["gpu_id"]) + key(r["model"], r["scenario"], r["lambda_qps"])


def check_configurations(snap, leaderboard):
    df = pl.read_parquet(snap / "configurations.parquet")
    rows = {group_key(r): r for r in df.iter_rows(named=True)}
    api = {group_key(e): e for e in leaderboard}
    if set(rows) != set(api):
        problem(f"configurations.parquet has {len(rows)} rows, the API {len(api)}; differing keys: "
                f"{sorted(set(rows) ^ set(api), key=str)[:5]}")
    fields = ["energy_per_token_j", "energy_per_token_cv", "energy_per_request_j", "throughput_tok_s",
              "power_mean_w", "ttft_p50_s", "itl_s"]
    for k, r in rows.items():
        e = api.get(k)
        if e is None:
            continue
        for f in fields:
            if not same_float(r[f], e.get(f)):
                problem(f"configurations {k} {f}: snapshot {r[f]!r}, API {e.get(f)!r}")
        interval = e["energy_per_token_interval"]
        for f, g in [("energy_per_token_lo_j", "lo"), ("energy_per_token_hi_j", "hi"),
                     ("energy_per_token_confidence", "confidence")]:
            if not same_float(r[f], interval[g]):
                problem(f"configurations {k} {f}: snapshot {r[f]!r}, API {interval[g]!r}")
        for f in ["iterations", "submissions", "submitters", "demo", "gpu_name", "protocol"]:
            if r[f] != e[f]:
                problem(f"configurations {k} {f}: snapshot {r[f]!r}, API {e[f]!r}")
        if r["evidence_submission_id"] != e["evidence"]:
            problem(f"configurations {k}: evidence {r['evidence_submission_id']} vs API {e['evidence']}")
    return len(rows)


def median(values):
    v = sorted(values)
    pos = 0.5 * (len(v) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def check_runs(snap, receipts):
    runs = pd.read_parquet(snap / "runs.parquet")
    subs = pd.read_csv(snap / "submissions.csv", keep_default_na=False)
    if set(runs["submission_id"]) != set(subs["submission_id"]) or set(subs["submission_id"]) != set(receipts):
        problem("runs.parquet, submissions.csv and the API name different submissions")
    for sid, receipt in receipts.items():
        mine = runs[runs["submission_id"] == sid]
        if len(mine) != receipt["counts"]["iterations"]:
            problem(f"runs of {sid}: {len(mine)} rows, the receipt counts {receipt['counts']['iterations']}")
        if int(mine["power_samples"].sum()) != receipt["counts"]["power_samples"]:
            problem(f"runs of {sid}: {mine['power_samples'].sum()} power samples, receipt {receipt['counts']['power_samples']}")
        sub = subs[subs["submission_id"] == sid].iloc[0]
        if sub["submitter"] != receipt["submitter"] or bool(sub["demo"]) != receipt["demo"] or sub["status"] != "accepted":
            problem(f"submissions.csv row of {sid} disagrees with its receipt")
        counted = mine[mine["generation_tokens"] > 0]
        for c in receipt["configurations"]:
            sel = counted[(counted["model"] == c["model"]) & (counted["scenario"] == c["scenario"])]
            if c["lambda_qps"] is None:
                sel = sel[sel["lambda_qps"].isna()]
            else:
                sel = sel[(sel["lambda_qps"] - c["lambda_qps"]).abs() < 1e-9]
            if len(sel) != c["iterations"]:
                problem(f"{sid} {c['model']} {c['scenario']} {c['lambda_qps']}: {len(sel)} iterations, receipt {c['iterations']}")
                continue
            for col, spread in [("energy_per_token_j", c["energy_per_token_j"]),
                                ("throughput_tok_s", c["throughput_tok_s"]),
                                ("power_mean_w", c["power_mean_w"])]:
                got = median(sel[col].tolist())
                if not same_float(got, spread["median"], rel=1e-12):
                    problem(f"{sid} {c['model']} {c['scenario']} {col}: median of runs {got!r}, receipt {spread['median']!r}")
    return len(runs)


def check_traces(snap):
    # One file per GPU: power_traces-<gpu_id>.parquet.
    paths = sorted(snap.glob("power_traces-*.parquet"))
    if not paths:
        return None
    traces = pl.concat([pl.read_parquet(p) for p in paths])
    runs = pl.read_parquet(snap / "runs.parquet")
    keys = ["submission_id", "model", "scenario", "lambda_qps", "iteration"]
    agg = traces.group_by(keys).agg(pl.col("watts").mean().alias("mean_w"), pl.len().alias("n"),
                                    pl.col("t_s").max().alias("t_max"))
    joined = runs.join(agg, on=keys, how="left", nulls_equal=True)
    missing = joined.filter(pl.col("n").is_null()).height
    if missing:
        problem(f"power_traces-*.parquet lack the traces of {missing} iterations")
    for r in joined.filter(pl.col("n").is_not_null()).iter_rows(named=True):
        if r["n"] != r["power_samples"] or not same_float(r["mean_w"], r["power_mean_w"], rel=1e-9):
            problem(f"trace of {r['submission_id']} {r['model']} {r['scenario']} it {r['iteration']}: "
                    f"{r['n']} samples mean {r['mean_w']} W, runs say {r['power_samples']} mean {r['power_mean_w']} W")
            break
        if not same_float(r["t_max"], round((r["n"] - 1) * 0.1, 1), rel=1e-12):
            problem(f"trace time axis of {r['submission_id']} {r['model']}: last t_s {r['t_max']}")
            break
    return traces.height


def rfc6962_root(leaves):
    """The Merkle tree hash of the leaves (RFC 6962), leaf by leaf."""
    stack = []  # (height, hash) of complete subtrees, largest first
    for leaf in leaves:
        node = (0, hashlib.sha256(b"\x00" + leaf).digest())
        while stack and stack[-1][0] == node[0]:
            height, left = stack.pop()
            node = (height + 1, hashlib.sha256(b"\x01" + left + node[1]).digest())
        stack.append(node)
    if not stack:
        return hashlib.sha256(b"").digest()
    root = stack[-1][1]
    for _, left in reversed(stack[:-1]):
        root = hashlib.sha256(b"\x01" + left + root).digest()
    return root


def check_log(snap, manifest):
    """log.jsonl hashes to the root manifest.json records, and every row
    of submissions.csv is, at its log_index, that submission's leaf."""
    log = manifest.get("log")
    if not log:
        problem("manifest.json records no transparency-log checkpoint")
        return 0
    lines = (snap / log["entries_file"]).read_bytes().split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if len(lines) != log["size"]:
        problem(f"{log['entries_file']}: {len(lines)} leaves, the manifest says {log['size']}")
    root = base64.b64encode(rfc6962_root(lines)).decode()
    if root != log["root"]:
        problem(f"{log['entries_file']} hashes to {root}, the manifest says {log['root']}")
    if log["checkpoint"].split("\n")[:3] != [log["origin"], str(log["size"]), log["root"]]:
        problem("the signed checkpoint's text is not the manifest's origin, size and root")
    subs = pd.read_csv(snap / "submissions.csv", keep_default_na=False)
    for row in subs.itertuples():
        leaf = json.loads(lines[int(row.log_index)])
        if (leaf.get("kind"), leaf.get("submission_id"), leaf.get("bundle_sha256")) != (
                "submission", row.submission_id, row.bundle_sha256):
            problem(f"submissions.csv {row.submission_id}: leaf {row.log_index} is {leaf}")
    return len(lines)


def main():
    snap = Path(sys.argv[1])
    dump = json.loads(Path(sys.argv[2]).read_text())
    manifest = json.loads((snap / "manifest.json").read_text())
    card = (snap / "README.md").read_text()
    check_schema(snap, manifest, card)
    check_csv_round_trip(snap, "runs", {"submission_id", "submitter", "origin", "protocol_id", "gpu_id",
                                        "gpu_name", "model", "scenario", "started_at"})
    check_csv_round_trip(snap, "configurations", {"gpu_id", "gpu_name", "model", "model_precision", "scenario", "origin",
                                                  "protocol_id", "protocol", "evidence_submission_id"})
    n_conf = check_configurations(snap, dump["leaderboard"])
    n_runs = check_runs(snap, dump["receipts"])
    n_traces = check_traces(snap)
    n_leaves = check_log(snap, manifest)
    if problems:
        print(f"{len(problems)} problem(s)")
        sys.exit(1)
    print(f"ok: {manifest['snapshot_id']}: {n_runs} runs, {n_conf} configurations, "
          f"{n_traces if n_traces is not None else 'no'} trace samples read with pyarrow {pq.__name__ and __import__('pyarrow').__version__}, "
          f"pandas {pd.__version__}, polars {pl.__version__}; schema, card, CSV and API agree; "
          f"log.jsonl's {n_leaves} leaves hash to the recorded root and hold every submission")


if __name__ == "__main__":
    main()
