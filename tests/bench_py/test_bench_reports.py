#!/usr/bin/env python3
"""The benchmark report tools whose numbers go into docs/BENCHMARKS.md, on synthetic CSVs with known answers:
scripts/prefill-ab/il_table.py (interleaved rows: median time, each process's ratio to its peer row) and
bench/gpu/hybrid_report.py (issue 6: the hybrid within 5% of the faster of its two paths). Run by ctest
(Tools.BenchReports); argument: the project's root."""
import csv
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
IL_TABLE = os.path.join(ROOT, "scripts", "prefill-ab", "il_table.py")
HYBRID_REPORT = os.path.join(ROOT, "bench", "gpu", "hybrid_report.py")


def write_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def run(script, *args):
    p = subprocess.run([sys.executable, script, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


IL_HEADER = ["kernel", "shape", "M", "us", "rel_err"]


class IlTable(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        d = self.dir.name
        # Process a: cuBLAS fp16 100 us, cuBLAS bf16 80, ours 110; process b: 200 / 160 / 100 (another clock).
        self.a, self.b = os.path.join(d, "a.csv"), os.path.join(d, "b.csv")
        write_csv(self.a, IL_HEADER, [["cublas_f16_il", "s", "64", "100", "0"], ["cublas_bf16_il", "s", "64", "80", "0"],
                                      ["cuda_prefill_il", "s", "64", "110", "2e-5"], ["cuda_prefill", "s", "64", "1", "0"]])
        write_csv(self.b, IL_HEADER, [["cublas_f16_il", "s", "64", "200", "0"], ["cublas_bf16_il", "s", "64", "160", "0"],
                                      ["cuda_prefill_il", "s", "64", "100", "7e-5"]])

    def tearDown(self):
        self.dir.cleanup()

    def row(self, out, kernel):
        lines = [l for l in out.splitlines() if l.split()[2] == kernel]
        self.assertEqual(len(lines), 1, out)
        return lines[0]

    def test_ratio_within_each_process_and_median_time(self):
        rc, out, err = run(IL_TABLE, self.a, self.b)
        self.assertEqual(rc, 0, err)
        ours = self.row(out, "cuda_prefill_il")
        self.assertIn("105.0 us", ours)          # median of 110 and 100
        self.assertIn("x cuBLAS 0.909 2.000", ours)  # 100 / 110 in a, 200 / 100 in b: never across processes
        self.assertIn("err 7.0e-05", ours)       # the largest over the files
        self.assertNotIn(" cuda_prefill ", out)  # sequential rows are not interleaved rows

    def test_peer_of_another_row(self):
        rc, out, err = run(IL_TABLE, self.a, self.b, "--peer", "cublas_bf16_il")
        self.assertEqual(rc, 0, err)
        self.assertIn("x cublas_bf16_il 0.727 1.600", self.row(out, "cuda_prefill_il"))

    def test_markdown_names_the_peer(self):
        rc, out, _ = run(IL_TABLE, self.a, "--markdown", "--peer", "cublas_bf16_il")
        self.assertEqual(rc, 0)
        self.assertIn("x cublas_bf16_il per process", out.splitlines()[0])

    def test_refusals(self):
        rc, _, err = run(IL_TABLE, self.a, "--peer", "nope_il")
        self.assertEqual(rc, 1)
        self.assertIn("no nope_il rows", err)
        rc, _, err = run(IL_TABLE, self.a, "--peer")
        self.assertEqual(rc, 2)
        empty = os.path.join(self.dir.name, "e.csv")
        write_csv(empty, IL_HEADER, [["cuda_prefill", "s", "64", "1", "0"]])
        rc, _, err = run(IL_TABLE, empty)
        self.assertEqual(rc, 1)
        self.assertIn("no interleaved rows", err)


HY_HEADER = ["kernel", "shape", "m", "dtype", "format", "us", "ok"]


class HybridReport(unittest.TestCase):
    def report(self, rows):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "h.csv")
            write_csv(path, HY_HEADER, rows)
            return run(HYBRID_REPORT, path, "--markdown")

    def test_within_and_miss(self):
        rows = [["cuda_decode", "s", "1", "float16", "uint4b8", "10.0", "1"],
                ["cuda_prefill (registry)", "s", "1", "float16", "uint4b8", "12.0", "1"],
                ["cuda_hybrid (registry)", "s", "1", "float16", "uint4b8", "10.4", "1"],   # 1.04x decode: within
                ["cuda_decode", "s", "16", "float16", "uint4b8", "17.4", "1"],
                ["cuda_prefill (registry)", "s", "16", "float16", "uint4b8", "16.0", "1"],
                ["cuda_hybrid (registry)", "s", "16", "float16", "uint4b8", "17.4", "1"],  # 1.0875x prefill: a miss
                ["cublas_f16", "s", "16", "float16", "dense", "30.0", "1"]]
        rc, out, _ = self.report(rows)
        self.assertEqual(rc, 1, out)
        self.assertIn("1 of 2 points", out)
        self.assertIn("miss ('s', 'float16', 'uint4b8', 16): hybrid 1.09x", out)
        self.assertIn("| s | 10.4 (1.04 D) | 17.4 (1.09 P) |", out)

    def test_prefill_alone_is_the_reference_and_failed_rows_count(self):
        rows = [["cuda_prefill (registry)", "s", "256", "bfloat16", "uint4", "50.0", "1"],
                ["cuda_hybrid (registry)", "s", "256", "bfloat16", "uint4", "51.0", "1"]]
        rc, out, _ = self.report(rows)
        self.assertEqual(rc, 0, out)
        self.assertIn("1 of 1 points; 0 rows failed", out)
        rows[1][6] = "0"
        rc, out, _ = self.report(rows)
        self.assertEqual(rc, 1, out)
        self.assertIn("1 rows failed their check", out)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=1)
