"""The Δ table of issue 20: lmms-eval 0.7.3's own task code vs `lvu score BENCH FILE --set
compat=lmms-eval` on the adversarial replies of tests/test_peer_lmms_eval.py, every breakdown
lmms-eval prints, each number written at the precision lmms-eval prints it; `lvu score` reads
lmms-eval's --log_samples file (replies as its evaluator filtered them) and lvu's own export of the
raw replies (what `lvu run` stores).

    pip install --no-deps lmms-eval==0.7.3     # the README's test command installs it
    python benchmarks/peer_parity_lmms_eval.py [--only-differences]

The lvu side is whichever lvu Python imports (PYTHONPATH=<other checkout>/src compares another version).
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_peer_lmms_eval import BENCHMARKS, EXPORT, LOG  # noqa: E402
from lmms_eval_peer import Peer  # noqa: E402


def last_number(text: str) -> float | None:
    found = re.findall(r"-?\d+(?:\.\d+)?", text)
    return float(found[-1]) if found else None


def main() -> None:
    only_differences = "--only-differences" in sys.argv
    print(f"{'benchmark':<15} {'file':<15} {'breakdown':<40} {'lmms-eval 0.7.3':>22} {'lvu':>22} {'Δ':>8}")
    for (name, pairs_of), source in ((b, s) for b in BENCHMARKS.items() for s in (LOG, EXPORT)):
        with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as tmp:
            pairs = pairs_of(Peer(mp, Path(tmp) / "hf_home"), mp, Path(tmp), source)
        for p in pairs:
            a, b = last_number(p.lmms), last_number(p.lvu)
            delta = "" if p.lmms == p.lvu else (f"{b - a:+.1f}" if a is not None and b is not None else "differs")
            if only_differences and not delta:
                continue
            show = (lambda t: t if len(t) <= 22 else "…" + t[-21:])
            print(f"{name:<15} {source:<15} {p.breakdown[:40]:<40} {show(p.lmms):>22} {show(p.lvu):>22} "
                  f"{delta or '0':>8}")


if __name__ == "__main__":
    main()
