"""`lvu.api.build_status`, `build_item` and `pipelines`: a build folder's state, one item's stored
outputs and the pipelines' options, as the library returns them and `lvu build status / show / list`
print them."""

from __future__ import annotations

import json
import os

import pytest

import build_toy  # noqa: F401  (registers the toy pipeline and its model)

from lvu.api import BuildStatus, PipelineInfo, build, build_item, build_status, pipelines
from lvu.errors import LvuError
from test_headline_and_limit import invoke


@pytest.fixture
def built(tmp_path):
    folder = tmp_path / "videos"
    folder.mkdir()
    for name, size in (("alpha", 10), ("beta", 20), ("drop-me", 30)):
        (folder / f"{name}.mp4").write_bytes(os.urandom(size))
    out = tmp_path / "out"
    done = build("toy", [str(folder)], out, models={"llm": ("toy-llm", {"log": str(tmp_path / "calls.log")})},
                 show_progress=False)
    assert done.status == "complete"
    return out


def test_build_status_is_what_lvu_build_status_prints(built):
    status = build_status(built)
    assert isinstance(status, BuildStatus) and status.pipeline == "toy" and status.pending == 0
    assert status.items == ["alpha", "beta", "drop-me"]
    cli = invoke("build", "status", built)
    assert cli.exit_code == 0, cli.output
    assert f"lvu build toy — {built} (3 item(s))" in cli.stdout
    calls = sum(s.calls for s in status.state.stages)
    assert f"total: {calls} model call(s)" in cli.stdout and calls > 0
    for stage, item, why in status.state.skipped():
        assert f"{item} at {stage}: {why}" in cli.stdout


def test_build_item_is_what_lvu_build_show_json_prints(built):
    dump = build_item(built, "alpha")
    assert [block["stage"] for block in dump] == [s.name for s in build_status(built).state.stages]
    assert all(u["state"] == "done" for block in dump for u in block["units"])
    cli = invoke("build", "show", built, "alpha", "--json")
    assert cli.exit_code == 0, cli.output
    assert json.loads(cli.stdout) == dump
    with pytest.raises(LvuError, match=r"no item 'gamma' — its items: alpha, beta, drop-me"):
        build_item(built, "gamma")


def test_pipelines_are_what_lvu_build_list_prints():
    infos = pipelines()
    assert all(isinstance(i, PipelineInfo) for i in infos)
    names = [i.name for i in infos]
    assert {"neptune", "needle", "select", "blind-filter"} <= set(names)
    (neptune,) = pipelines("neptune")
    captioner = next(o for o in neptune.options if o.name == "captioner")
    assert captioner.default_text == json.dumps(captioner.default) and "llm" in neptune.models
    cli = invoke("build", "list", "neptune")
    assert cli.exit_code == 0, cli.output
    assert cli.stdout.startswith(f"neptune — {neptune.summary[:40]}")
    for role, what in neptune.models.items():
        assert f"  model {role}: {what}" in cli.stdout
