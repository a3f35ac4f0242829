#!/usr/bin/env python3
"""Every environment variable the library reads (a "W4A16_..." string literal under src/, include/, tools/ or
python/src/) has a row in docs/TUNING.md, and every row there names one the library reads: the table cannot drift
from the code. Exit 1 with the difference printed. Run by ctest (Docs.EnvironmentVariablesMatchTuningMd)."""

import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
literal = re.compile(r'"(W4A16_[A-Z0-9_]+)"')
# Names that are not environment variables: compile definitions and the build's own options.
not_env = {"W4A16_HAVE_CUDA", "W4A16_TOOL_HAVE_CUDA", "W4A16_PY_HAVE_CUDA", "W4A16_DIAG_MOE_STAGES"}
read = set()
for folder in ("src", "include", "tools", "python/src"):
    for f in (root / folder).rglob("*"):
        if f.suffix in {".cpp", ".hpp", ".cu", ".cuh", ".h"}:
            read |= set(literal.findall(f.read_text(errors="replace")))
read -= not_env
rows = set(re.findall(r"^\| `(W4A16_[A-Z0-9_]+)`", (root / "docs/TUNING.md").read_text(), re.M))
missing, stale = sorted(read - rows), sorted(rows - read)
for name in missing:
    print(f"docs/TUNING.md: no row for {name}, which the library reads")
for name in stale:
    print(f"docs/TUNING.md: a row for {name}, which nothing in the library reads")
print(f"{len(read)} variables read, {len(rows)} rows" + ("" if missing or stale else ": the same set"))
sys.exit(1 if missing or stale else 0)
