"""Every benchmark keeps the settings it kept and refuses what it refused, with the same words
(tests/golden/benchmark_settings.json, recorded before settings became typed pydantic models, #31).
The kept dict is hashed into the run id, so a changed value or type (1 vs 1.0) would orphan every
stored run. The one intended change: a bad value that crashed with a raw TypeError (e.g. data=16)
is now a one-line LvuError. Re-recorded since only where the unknown-compat message lists new modes
(#32: vlmevalkit@e8e78f05, vlmevalkit@296425e2, mlvu-literal)."""

from __future__ import annotations

import json
from pathlib import Path

from golden.record_benchmark_settings import record

GOLDEN = Path(__file__).parent / "golden" / "benchmark_settings.json"


def test_every_benchmark_keeps_and_refuses_settings_as_recorded():
    pinned, live = json.loads(GOLDEN.read_text(encoding="utf-8")), record()
    assert sorted(live) == sorted(pinned)
    changed = []
    for bench, rows in pinned.items():
        for key, was in rows.items():
            now = live[bench].get(key)
            if was.startswith("TypeError") and now is not None and now.startswith("LvuError") and "\n" not in now:
                continue  # a crash became a one-line error
            if now != was:
                changed.append(f"{bench} {key}: was {was[:160]!r}, now {str(now)[:160]!r}")
    assert not changed, f"{len(changed)} changed:\n" + "\n".join(changed[:40])
