"""Checks the meter's sample spacing in harness results CSVs.

For every row of every *_results.csv under the given folders: n samples
(len(gpu_0_power_draw_watts)), measurement_duration D, the spacing D/n, the
meter's gpu_energy E, and the relative error against E of the trapezoid over
the power samples at a uniform spacing of
  - D/n   (the spacing the samples really had), and
  - 0.1 s (the meter's nominal sampling interval).
When the meter's sampler ran late (STANDIN_NVML_READ_S > 0), the first stays
near 0 and the second is low by about 1 - 0.1 / (D/n).

Usage: python check_spacing.py <folder>...   (uses only the standard library)
"""
import ast
import csv
import glob
import os
import sys


def rows(folder):
    pattern = os.path.join(folder, "**", "*_results.csv")
    for path in sorted(glob.glob(pattern, recursive=True)):
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                yield os.path.relpath(path, folder), row


def main(folders):
    print(f"{'case/model/program':<52} {'qps':>4} {'it':>2} {'n':>4} {'D s':>8} "
          f"{'D/n ms':>7} {'E J':>9} {'err D/n':>8} {'err 0.1':>8}")
    worst = 0.0
    for folder in folders:
        for name, row in rows(folder):
            p = ast.literal_eval(row["gpu_0_power_draw_watts"])
            n = len(p)
            d = float(row["measurement_duration"])
            e = float(row["gpu_energy"])
            inner = sum(p) - (p[0] + p[-1]) / 2
            dt = d / n
            err_dn = dt * inner / e - 1
            err_01 = 0.1 * inner / e - 1
            worst = max(worst, abs(err_dn))
            parts = name.split(os.sep)
            label = "/".join([os.path.basename(os.path.normpath(folder)), parts[-2],
                              parts[-1].split("_")[1]])
            print(f"{label:<52} {row.get('lambda_qps', '-') or '-':>4} "
                  f"{row.get('iteration', '-'):>2} {n:>4} {d:>8.3f} "
                  f"{dt * 1000:>7.2f} {e:>9.2f} {err_dn:>+8.3%} {err_01:>+8.3%}")
    print(f"worst |error| at D/n: {worst:.3%}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
