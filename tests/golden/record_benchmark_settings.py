"""Record what each registered benchmark makes of a grid of settings: the settings dict it keeps
(each value's repr, so 1 and 1.0 differ: the dict is hashed into the run id) or the one-line error
it refuses with. tests/test_settings_pinned.py compares the live code with the recording, so a
refactor of how settings are declared and checked (typed Settings, #31) changes neither run ids nor
messages. Re-record only on purpose:

    PYTHONPATH=tests python tests/golden/record_benchmark_settings.py --out tests/golden/benchmark_settings.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

TRIES: list[Any] = ["16", 16, 0, -1, 1.5, 16.0, "1fps", "fps:1", "abc", True, "false", "none", None, "all",
                    "interleave", "per-frame", "whole"]
EXTRA: dict[str, list[Any]] = {
    "compat": ["official", "lmms-eval", "lmms-eval@0.7.1", "lmms-eval@0.6", "lmms-eval@0.5", "vlmevalkit", "x"],
    "split": ["val", "test", "dev", "test-m", "x"], "subset": ["full", "mma", "mmh", "x"],
    "tasks": ["all", "count", "plotQA,count", "ssc", "x"], "prompt": ["gemini", "x"],
    "scorer": ["official", "strict", "lmms-eval", "x"], "response_key": ["response", "answer"],
    "audio": ["none", "whole", "interleave", "x"], "fps": [1, "1", 0.5, 0, "2"], "seed": [0, "3", "x"],
    "resize": [448, "448", 448.0, 0], "frames": [1, 32, "32", 0, "0", "2fps", "lmms:8"],
}
COMMON = {"limit": [1, "3", 0], "data": ["x.jsonl"], "video_dir": ["vids"], "nonsense": [1]}


def outcome(cls: type, settings: dict[str, Any]) -> str:
    try:
        bench = cls(**settings)
    except Exception as e:  # noqa: BLE001 — the class and message are what is pinned
        return f"{type(e).__name__}: {e}"
    return repr(sorted((k, v) for k, v in bench.settings.items()))


def builtin_benchmarks() -> list[str]:
    """lvu's own benchmarks (not the fakes other test modules register in the same process)."""
    from lvu.benchmarks import load_all
    from lvu.benchmarks.base import BENCHMARKS

    load_all()
    return sorted(n for n in BENCHMARKS.names() if BENCHMARKS.get(n).__module__.startswith("lvu."))


def record() -> dict[str, dict[str, str]]:
    from lvu.benchmarks.base import BENCHMARKS

    out: dict[str, dict[str, str]] = {}
    for name in builtin_benchmarks():
        cls = BENCHMARKS.get(name)
        rows = {"{}": outcome(cls, {})}
        keys = sorted({*cls.defaults, "audio", *COMMON})
        for key in keys:
            for value in [*TRIES, *EXTRA.get(key, []), *COMMON.get(key, [])]:
                rows[f"{key}={value!r}"] = outcome(cls, {key: value})
        out[name] = rows
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.write_text(json.dumps(record(), indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
