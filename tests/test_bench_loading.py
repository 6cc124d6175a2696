"""The loaders the benchmarks share (lvu.benchmarks.loading): one mechanism, one shape of error.

The five release benchmarks read the hub, release files and JSON lines through the same helpers,
so the same failure reads the same way whichever benchmark hits it: a one-line hub error naming
the dataset, a broken JSON file named with line and column, a bad JSON line named with its column.
Nothing is downloaded: `datasets` is replaced by a stub.
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

from lvu.benchmarks.jsonl import read_samples
from lvu.benchmarks.loading import (
    RecordError,
    Unparsed,
    collect_samples,
    json_lines,
    parse_json,
    read_text,
    use_hub,
)
from lvu.benchmarks.longvideobench import LongVideoBench
from lvu.benchmarks.lvbench import LvbenchBenchmark
from lvu.benchmarks.mlvu import Mlvu
from lvu.benchmarks.neptune import Neptune
from lvu.benchmarks.videomme import VideoMME
from lvu.errors import DataError, LvuError
from lvu.types import Sample

HUB = {  # benchmark, the dataset its hub loader names, its name in the "needs `datasets`" line
    "videomme": (VideoMME, "lmms-eval/Video-MME", "Video-MME"),
    "mlvu": (Mlvu, "MLVU/MVLU", "MLVU"),
    "lvbench": (LvbenchBenchmark, "THUDM/LVBench", "LVBench"),
    "neptune": (Neptune, "lmms-lab/GoogleDeepMind-NEPTUNE", "Neptune"),
    "longvideobench": (LongVideoBench, "longvideobench/LongVideoBench", "LongVideoBench"),
}


@pytest.mark.parametrize("name", sorted(HUB))
def test_a_hub_failure_is_one_line_naming_the_dataset(name, monkeypatch):
    cls, dataset, _ = HUB[name]

    def load_dataset(*args, **kwargs):
        raise ConnectionError("Couldn't reach the hub\nTraceback (most recent call last):\n  ...")

    monkeypatch.delenv("LVU_OFFLINE", raising=False)
    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))
    with pytest.raises(LvuError) as e:
        cls(data="hf:").load()
    message = str(e.value)
    assert "\n" not in message, message
    assert message.startswith(f"cannot load {dataset}") and "(ConnectionError: Couldn't reach the hub)" in message
    assert " — " in message and "--data" in message.split(" — ", 1)[1]  # the fix: local release files


@pytest.mark.parametrize("name", sorted(HUB))
def test_without_datasets_every_hub_loader_says_the_same_thing(name, monkeypatch):
    cls, _, what = HUB[name]
    monkeypatch.delenv("LVU_OFFLINE", raising=False)
    monkeypatch.setitem(sys.modules, "datasets", None)  # as if `datasets` were not installed
    with pytest.raises(LvuError) as e:
        cls(data="hf:").load()
    assert str(e.value).startswith(f"reading {what} from the hub needs `datasets`: pip install 'lvu[hub]' (or pass")


@pytest.mark.parametrize("cls, name", [
    (VideoMME, "videomme.json"), (Neptune, "neptune_full.json"), (LongVideoBench, "lvb_val.json"),
])
def test_a_broken_release_json_is_named_with_line_and_column(cls, name, tmp_path):
    path = tmp_path / name
    path.write_text('[\n {"id": "a",, "x": 1}\n]', encoding="utf-8")
    with pytest.raises(DataError, match=rf"{name}: not valid JSON \(Expecting property name enclosed in double "
                                        rf"quotes\) at line 2, column 13 — "):
        cls(data=str(path)).load()


def test_a_bad_json_line_is_one_bad_record_naming_line_and_column(tmp_path):
    """jsonl samples, Video-MME JSONL rows and LVBench's meta file: the other lines still load."""
    sample = {"id": "q1", "video": "a.mp4", "question": "Q?", "options": ["x", "y"], "answer": 0}
    (tmp_path / "s.jsonl").write_text(json.dumps(sample) + '\n{"id": oops}\n', encoding="utf-8")
    (tmp_path / "rows.jsonl").write_text('\n{"id": oops}\n', encoding="utf-8")
    (tmp_path / "video_info.meta.jsonl").write_text('{"id": oops}\n', encoding="utf-8")
    samples, (jsonl_bad,) = read_samples(tmp_path / "s.jsonl")
    _, (videomme_bad,) = VideoMME(data=str(tmp_path / "rows.jsonl")).load()
    _, (lvbench_bad,) = LvbenchBenchmark(data=str(tmp_path / "video_info.meta.jsonl")).load()
    assert [s.id for s in samples] == ["q1"]
    why = "not valid JSON (Expecting value at column 8)"
    assert jsonl_bad.error == f"{tmp_path / 's.jsonl'}:2: {why} — each line must be one JSON object"
    assert videomme_bad.error == f"rows.jsonl:2: {why}"
    assert lvbench_bad.error == f"{tmp_path / 'video_info.meta.jsonl'}:1: {why} — each line must be one video object"


# ---- the helpers themselves ------------------------------------------------------------------------


def sample(sid: str) -> Sample:
    return Sample(id=sid, benchmark="t", video={"path": "v.mp4"}, question="Q?")


def test_collect_samples_keeps_going_past_bad_records_and_repeated_ids():
    def to_sample(where, record):
        if record == "skip":
            return None
        if not isinstance(record, str):
            raise RecordError(f"a {type(record).__name__} — give an id")
        return sample(record)

    records = [("f:1", "a"), ("f:2", 7), ("f:3", "skip"), ("f:4", "a"), ("f:5", "b")]
    samples, bad = collect_samples(records, to_sample)
    assert [s.id for s in samples] == ["a", "b"]
    assert [(b.id, b.error) for b in bad] == [("f:2", "f:2: a int — give an id"),
                                             ("f:4", "f:4: id 'a' repeats f:1 — ids must be unique")]
    _, bad = collect_samples(records, to_sample, repeated=lambda sid, first: f"{sid} again (first: {first})")
    assert bad[1].error == "f:4: a again (first: f:1)"


def test_json_lines_skips_blank_lines_and_keeps_the_reason_of_a_bad_one():
    rows = json_lines('{"a": 1}\n\n  \n[1,\n', "x.jsonl")
    assert rows[0] == ("x.jsonl:1", {"a": 1})
    where, why = rows[1]
    assert where == "x.jsonl:4" and isinstance(why, Unparsed) and why.startswith("not valid JSON (")


def test_release_files_read_with_one_line_errors(tmp_path):
    with pytest.raises(DataError, match=r"nope\.json: file not found — pass the folder$"):
        read_text(tmp_path / "nope.json", missing="pass the folder", unreadable="-")
    with pytest.raises(DataError, match=r"nope\.json: file not found$"):
        read_text(tmp_path / "nope.json", missing="", unreadable="-")
    (tmp_path / "latin1.json").write_bytes("[\"caf\xe9\"]".encode("latin-1"))
    with pytest.raises(DataError, match=r"latin1\.json: cannot read \(.*\) — it must be UTF-8$"):
        read_text(tmp_path / "latin1.json", missing="", unreadable="it must be UTF-8")
    (tmp_path / "bom.json").write_bytes("\ufeff[1]".encode("utf-8"))
    assert read_text(tmp_path / "bom.json", missing="", unreadable="") == "[1]"
    assert parse_json('[{"a": 1,}, ]', Path("t.json"), fix="-", trailing_commas=True) == [{"a": 1}]
    assert parse_json('["a,]"]', Path("t.json"), fix="-", trailing_commas=True) == ["a,]"]  # commas in strings stay
    with pytest.raises(DataError, match=r"t\.json: not valid JSON \(.*\) at line 1, column 10 — fix it"):
        parse_json('[{"a": 1,}]', Path("t.json"), fix="fix it")


def test_use_hub_only_without_data_or_with_hf_and_never_silently_offline(monkeypatch):
    monkeypatch.delenv("LVU_OFFLINE", raising=False)
    assert use_hub(None, benchmark="b", holding="x.json") and use_hub("hf:", benchmark="b", holding="x.json")
    assert not use_hub("/data/release", benchmark="b", holding="x.json")
    monkeypatch.setenv("LVU_OFFLINE", "1")
    assert use_hub("hf:", benchmark="b", holding="x.json")  # asked for by name: still the hub
    with pytest.raises(LvuError, match=r"^b needs its release files: --data DIR holding x\.json \(LVU_OFFLINE"):
        use_hub(None, benchmark="b", holding="x.json")


def test_benchmark_protocol_modules_stay_readable():
    """Each benchmark module under ~500 lines: formats and loaders live beside the protocol."""
    folder = Path(__file__).resolve().parents[1] / "src" / "lvu" / "benchmarks"
    long = {p.name: n for p in folder.glob("*.py") if (n := len(p.read_text(encoding="utf-8").splitlines())) > 500}
    assert long == {}
