"""Real English documents beyond the eval sets: this machine's man pages, as eval-format JSON lines.

    python benchmarks/man_pages_corpus.py --pages 1000

The side-by-side benchmark reaches 100k sentences with noisy copies of the 57,312 real units of
../shared/eval (docs/performance.md); clusters of near-copies are a hard case for an HNSW graph.
These pages give it distinct real sentences instead (`side_by_side.py --more-documents`), so that
recall can be read on rows that are all different text. Every page of sections 1, 5, 7 and 8 of
/usr/share/man (English only), sorted by path, then every k-th to --pages; each rendered by man(1)
at a wide line (so that paragraphs are single lines, not hard-wrapped), overstrikes removed by
col(1), the header and footer lines dropped; pages shorter than 2,000 characters, or repeating a
page already taken, are left out. The file stays out of the repository (benchmarks/out/): technical
prose, not the eval sets' kinds, a measurement aid only.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

MAN_ROOT = Path("/usr/share/man")
SECTIONS = ("man1", "man5", "man7", "man8")


def man_files(root: Path) -> list[Path]:
    return sorted(p for section in SECTIONS for p in (root / section).glob("*") if p.is_file())


def render(path: Path) -> str:
    env = dict(os.environ, MANWIDTH="2000", LC_ALL="C.UTF-8", MAN_KEEP_FORMATTING="0")
    page = subprocess.run(["man", "-l", "-P", "cat", str(path)], env=env, capture_output=True, timeout=60)
    plain = subprocess.run(["col", "-bx"], input=page.stdout, capture_output=True, timeout=60)
    return plain.stdout.decode("utf-8", "replace")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=1000, help="pages to render (every k-th of the sorted list)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "out" / "man_pages.jsonl")
    args = parser.parse_args()
    files = man_files(MAN_ROOT)
    if not files:
        sys.exit(f"{MAN_ROOT}: no man pages in {', '.join(SECTIONS)}")
    step = max(1, len(files) // args.pages)
    seen, written, chars = set(), 0, 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w") as out:
        for path in files[::step]:
            lines = [line.rstrip() for line in render(path).splitlines()]
            lines = [line for line in lines if line.strip()][1:-1]  # man's header and footer lines
            text = "\n".join(lines).strip()
            digest = hashlib.sha1(text.encode()).hexdigest()
            if len(text) < 2000 or digest in seen:
                continue
            seen.add(digest)
            name = path.name.split(".gz")[0]
            out.write(json.dumps({"id": f"man:{path.parent.name}/{name}", "title": name, "text": text,
                                  "format": "text", "metadata": {"source": str(path)}}) + "\n")
            written += 1
            chars += len(text)
    print(f"{args.out}: {written} pages, {chars:,} characters (of {len(files)} man pages, every {step}-th)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
