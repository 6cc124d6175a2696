"""Record the golden digests of every `lvu build ...` command's outputs (tests/golden/_builds.py)
into tests/golden/construct_outputs.json, which tests/test_construct_golden.py compares against.

Recorded from commit 4b1c0a2 (before the construction pipelines moved onto one mechanism):

    git worktree add /tmp/golden-base 4b1c0a2
    export PYTHONPATH=/tmp/golden-base/src:/tmp/golden-base/tests
    python tests/golden/record_construct_outputs.py --expect-lvu /tmp/golden-base/src
    git worktree remove /tmp/golden-base --force

(lvu and the fixture helpers of tests/ both from that commit; `--expect-lvu` fails the recording if
any lvu module came from elsewhere.) The build runs in a temporary folder, about 15 s on 2 CPUs.

Re-record only on purpose (an output change that is meant), never to make the test pass; a partial
re-record (one file of some commands, from `--out FILE`) is listed under "rerecorded" with why.
`--out FILE` writes elsewhere (e.g. to compare two runs); `--keep DIR` builds in DIR and leaves it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _builds import EXPECTED, build_env, run_and_digest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=EXPECTED, help="where to write the digests")
    parser.add_argument("--keep", type=Path, help="build in this (new) folder and leave it there")
    parser.add_argument("--expect-lvu", type=Path, help="fail unless `lvu` is imported from this source folder")
    args = parser.parse_args()

    import lvu

    source = Path(lvu.__file__).resolve().parents[1]
    print(f"lvu from {source}", file=sys.stderr)
    if args.expect_lvu and source != args.expect_lvu.resolve():
        sys.exit(f"lvu is imported from {source}, not {args.expect_lvu} — set PYTHONPATH")
    commit = subprocess.run(["git", "-C", str(source), "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=False).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(source), "status", "--porcelain", "--", "."], capture_output=True,
                           text=True, check=False).stdout.strip()

    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="lvu-golden-") as tmp:
        root = args.keep.resolve() if args.keep else Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        with build_env(root):
            digests = run_and_digest(root, log=lambda line: print(line, file=sys.stderr))
    if args.expect_lvu:  # every lvu module the builds imported came from there
        stray = sorted(name for name, module in list(sys.modules.items())
                       if (name == "lvu" or name.startswith("lvu.")) and getattr(module, "__file__", None)
                       and not Path(module.__file__).resolve().is_relative_to(args.expect_lvu.resolve()))
        if stray:
            sys.exit(f"modules imported from elsewhere than {args.expect_lvu}: {', '.join(stray)}")
    helpers = sorted({str(Path(m.__file__).resolve().parent) for n, m in list(sys.modules.items())
                      if n in ("neptune_example", "neptune_replies", "needle_videos", "build_videos")})
    print(f"fixture helpers from {', '.join(helpers)}", file=sys.stderr)
    record = {"recorded_from": {"commit": commit or "unknown", "src_modified": bool(dirty)},
              "note": "tests/golden/_builds.py describes the builds and the normalisations; re-record with "
                      "tests/golden/record_construct_outputs.py",
              "commands": digests}
    args.out.write_text(json.dumps(record, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    n = sum(len(d["hashes"]) for d in digests.values())
    print(f"{len(digests)} commands, {n} digests → {args.out} ({time.monotonic() - started:.1f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
