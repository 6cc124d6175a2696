"""The one construction mechanism as a user meets it: the docs' own pipeline runs as printed and
`lvu build status` / `show` open its folder from anywhere; `lvu build run` / `list`; options
validated by the library; every dropped item named with its reason; one builder per folder."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lvu.cli import app
from lvu.construct.neptune import Neptune
from lvu.construct.runner import find_videos, run_build
from lvu.construct.store import BuildInProgress, build_lock
from lvu.errors import LvuError
from lvu.media.testing import make_video
from lvu.models.testing_server import FakeOpenAIServer

ROOT = Path(__file__).resolve().parents[1]


def docs_pipeline() -> str:
    section = (ROOT / "docs" / "build.md").read_text().split("### Your own pipeline", 1)[1]
    return re.findall(r"```python\n(.*?)```", section, re.S)[0]


@pytest.fixture
def titled(tmp_path):
    """titles.py from the docs, three videos (intro: 1 s, too short), a fake LLM answering titles."""
    work = tmp_path / "work"
    (work / "videos").mkdir(parents=True)
    (work / "titles.py").write_text(docs_pipeline())
    for name, seconds in (("intro", 1.0), ("harbor", 3.0), ("valley", 3.0)):
        make_video(work / "videos" / f"{name}.mp4", seconds=seconds, fps=10, gop=10)
    env = {**os.environ, "LVU_CACHE_DIR": str(tmp_path / "cache"), "LVU_PROGRESS_INTERVAL": "0",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    return work, env


def title_reply(body: dict) -> str:
    prompt = body["messages"][-1]["content"]
    prompt = prompt if isinstance(prompt, str) else " ".join(p.get("text", "") for p in prompt)
    return "TITLE: " + re.search(r"named (\w+)", prompt).group(1).upper() + " AT DUSK"


def lvu(*args: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["lvu", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_the_docs_pipeline_runs_as_printed_and_status_opens_it_from_anywhere(titled, tmp_path):
    work, env = titled
    with FakeOpenAIServer(answer=title_reply) as server:
        done = lvu("build", "run", "titles:Titles", "videos", "-o", "titled", "--opt", "words=4", "--model",
                   "llm=openai", "-a", "llm.model=fake", "-a", f"llm.base_url={server.base_url}", "-a", "llm.cache=false",
                   "-q", cwd=work, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        assert server.n_requests == 2  # intro is too short: no call for it
        again = lvu("build", "run", "titles:Titles", "videos", "-o", "titled", "--opt", "words=4", "--model",
                    "llm=openai", "-a", "llm.model=fake", "-a", f"llm.base_url={server.base_url}", "-a",
                    "llm.cache=false", "-q", cwd=work, env=env)
        assert again.returncode == 0 and server.n_requests == 2  # resumed: nothing asked again
    assert (work / "titled" / "titles.tsv").read_text() == "harbor\tHARBOR AT DUSK\nvalley\tVALLEY AT DUSK\n"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    status = lvu("build", "status", str(work / "titled"), cwd=elsewhere, env=env)
    assert status.returncode == 0, status.stdout + status.stderr
    assert "lvu build titles" in status.stdout and "titles.title" in status.stdout
    assert "skipped (1):" in status.stdout
    assert "intro at titles.title: 1.0 s is shorter than min_seconds=2" in status.stdout
    show = lvu("build", "show", str(work / "titled"), "harbor", "--prompts", cwd=elsewhere, env=env)
    assert show.returncode == 0 and "at most 4 words for a 3-second video named harbor" in show.stdout
    assert "HARBOR AT DUSK" in show.stdout
    listed = lvu("build", "list", "titles:Titles", cwd=work, env=env)
    assert "words" in listed.stdout and "most words in a title" in listed.stdout and "model llm" in listed.stdout


@pytest.mark.slow
def test_bad_options_are_refused_by_the_library_in_one_line(titled):
    work, env = titled
    bad = lvu("build", "run", "titles:Titles", "videos", "-o", "o", "--opt", "words=0", "--model", "llm=openai",
              cwd=work, env=env)
    assert bad.returncode == 2 and "titles build: option words=0" in bad.stderr and "Traceback" not in bad.stderr
    unknown = lvu("build", "run", "titles:Titles", "videos", "-o", "o", "--opt", "wrods=3", cwd=work, env=env)
    assert unknown.returncode == 2 and "unknown option 'wrods'" in unknown.stderr and "words" in unknown.stderr
    assert not (work / "o" / "build.json").exists()  # refused before anything ran


@pytest.mark.parametrize("options, message", [
    ({"filter_threshold": 5, "filter_seeds": 3}, "filter_threshold 5 must be from 1 to filter_seeds (3)"),
    ({"questions": 0}, "option questions=0"),
    ({"captioner": "pali"}, "option captioner='pali'"),
    ({"max_seconds": 10, "min_seconds": 20}, "max_seconds 10 is below min_seconds 20"),
    ({"filter_seed": 3}, "unknown option 'filter_seed'"),
])
def test_neptune_refuses_bad_options_without_the_cli(options, message):
    with pytest.raises(LvuError, match=re.escape(message)):
        Neptune(options)


def test_neptune_options_are_typed_and_complete():
    pipeline = Neptune({"questions": "7", "asr": "none"})  # --opt values arrive as text or JSON
    assert pipeline.config.questions == 7 and pipeline.options["questions"] == 7
    assert pipeline.options["filter_seeds"] == 3 and pipeline.options["min_seconds"] is None  # no invented minimum
    assert pipeline.options["truncate_seconds"] == 900.0


def test_list_names_every_builtin_pipeline_with_options_and_roles():
    out = CliRunner().invoke(app, ["build", "list"])
    assert out.exit_code == 0, out.output
    assert "neptune" in out.output and "filter_threshold" in out.output and "model vlm" in out.output


def test_a_second_builder_into_one_folder_is_refused(tmp_path):
    (tmp_path / "videos").mkdir()
    make_video(tmp_path / "videos" / "a.mp4", seconds=1.0, fps=10, gop=10)
    import asyncio

    with build_lock(tmp_path / "out"):
        with pytest.raises(BuildInProgress, match=rf"build {re.escape(str(tmp_path / 'out'))} is in progress "
                                                  rf"\(pid {os.getpid()}\)"):
            asyncio.run(run_build(Neptune({"captioner": "ocr"}), find_videos(tmp_path / "videos"), tmp_path / "out",
                                  {"llm": ("random", {})}, show_progress=False))
    with build_lock(tmp_path / "out"):  # released when the first builder ends (kill -9 too: flock)
        pass


@pytest.mark.slow
def test_the_construction_mechanism_imports_no_pipeline():
    from test_layering import import_graph

    mechanism = ("lvu.construct.pipeline", "lvu.construct.store", "lvu.construct.runner", "lvu.construct.ray_units")
    graph = import_graph()
    for module in mechanism:
        if module not in graph:
            continue
        inside = [i.target for i in graph[module] if i.target.startswith("lvu.construct.")]
        assert set(inside) <= set(mechanism), f"{module} imports {sorted(set(inside) - set(mechanism))}"


@pytest.mark.slow
def test_a_build_exported_from_the_store_is_byte_identical_to_the_uninterrupted_one(tmp_path, monkeypatch):
    # Each stage result re-read from the store has its keys sorted; the one just computed once had
    # them in insertion order, so a resumed Neptune build wrote another removed.json.
    from neptune_example import write_videos

    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path / "cache"))
    videos = write_videos(tmp_path / "videos")
    args = ["build", "neptune", str(videos), "-o", str(tmp_path / "out"), "--captioner", "ocr", "--asr", "none",
            "--llm", "neptune_example:ScriptedLLM", "-q"]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    names = ("removed.json", "neptune_full.json", "benchmark.jsonl")
    built = {n: (tmp_path / "out" / n).read_bytes() for n in names}
    assert json.loads(built["removed.json"]), "the scripted filter removes some questions"
    for n in names:
        (tmp_path / "out" / n).unlink()
    again = CliRunner().invoke(app, args)  # every unit from the store: exported from re-read results
    assert again.exit_code == 0 and again.output.count("all done before") == 13, again.output
    assert {n: (tmp_path / "out" / n).read_bytes() for n in names} == built


@pytest.mark.slow
def test_build_run_neptune_writes_what_the_shortcut_writes(tmp_path, monkeypatch):
    from neptune_example import write_videos

    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path / "cache"))
    videos = write_videos(tmp_path / "videos")
    short = CliRunner().invoke(app, ["build", "neptune", str(videos), "-o", str(tmp_path / "a"), "--captioner", "ocr",
                                     "--asr", "none", "--questions", "3", "--llm", "neptune_example:ScriptedLLM", "-q"])
    assert short.exit_code == 0, short.output
    run = CliRunner().invoke(app, ["build", "run", "neptune", str(videos), "-o", str(tmp_path / "b"), "--opt",
                                   "captioner=ocr", "--opt", "asr=none", "--opt", "questions=3", "--model",
                                   "llm=neptune_example:ScriptedLLM", "-q"])
    assert run.exit_code == 0, run.output
    assert "skipped (2):" in run.output and "presenter at neptune.shots: dropped by the talking_head filter" in run.output
    for name in ("neptune_full.json", "removed.json", "benchmark.jsonl"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


@pytest.mark.slow
def test_a_build_into_another_pipelines_folder_is_refused_and_changes_nothing(titled, tmp_path):
    work, env = titled
    out = work / "nep"
    out.mkdir()
    (out / "build.json").write_text('{"pipeline": "neptune"}\n')
    (out / "kept.jsonl").write_text("the neptune build's file\n")
    run = lvu("build", "run", "titles:Titles", "videos", "-o", "nep", "--model", "llm=openai", cwd=work, env=env)
    assert run.returncode == 2 and "nep holds a neptune build (build.json)" in run.stderr.replace("\n", "")
    data = work / "q.jsonl"
    data.write_text('{"id": "a", "video": "videos/harbor.mp4", "question": "Q?", "options": ["x", "y"], "answer": 0}\n')
    filt = lvu("build", "filter", "q.jsonl", "--rule", "text-only", "-m", "random", "-o", "nep", cwd=work,
               env={**env, "LVU_RESULTS_DIR": str(tmp_path / "results")})
    assert filt.returncode == 2 and "holds a neptune build" in filt.stderr.replace("\n", "")
    assert (out / "build.json").read_text() == '{"pipeline": "neptune"}\n'
    assert sorted(p.name for p in out.iterdir()) == ["build.json", "kept.jsonl"]
    assert (out / "kept.jsonl").read_text() == "the neptune build's file\n"


@pytest.mark.slow
def test_an_installed_pipeline_is_found_by_its_entry_point_name(titled, tmp_path):
    """docs/plugins.md's `lvu.pipelines` group: the docs' titles.py declared as an entry point."""
    work, env = titled
    info = tmp_path / "site" / "my_project-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-project\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[lvu.pipelines]\ntitles = titles:Titles\n")
    env = {**env, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), str(work)])}
    listed = lvu("build", "list", "titles", cwd=tmp_path, env=env)
    assert listed.returncode == 0 and "most words in a title" in listed.stdout, listed.stdout + listed.stderr
    unknown = lvu("build", "list", "titels", cwd=tmp_path, env=env)
    assert unknown.returncode == 2 and "Did you mean 'titles'?" in unknown.stderr
    assert all(name in unknown.stderr for name in ("neptune", "blind-filter", "needle", "ladder", "titles"))


def _titles(work: Path, env: dict, server: FakeOpenAIServer, videos: str, *extra: str) -> subprocess.CompletedProcess:
    return lvu("build", "run", "titles:Titles", videos, "-o", "titled", "--model", "llm=openai", "-a", "llm.model=fake",
               "-a", f"llm.base_url={server.base_url}", "-a", "llm.cache=false", "-q", *extra, cwd=work, env=env)


@pytest.mark.slow
def test_a_build_of_other_inputs_or_settings_is_refused_unless_replace(titled):
    """#27: a re-run into an existing -o with other videos or options silently replaced the earlier
    build; now it is refused with what differs, --replace rebuilds and says so, more videos resume."""
    work, env = titled
    (work / "two").mkdir()
    for name in ("harbor", "valley"):
        (work / "two" / f"{name}.mp4").symlink_to(work / "videos" / f"{name}.mp4")
    with FakeOpenAIServer(answer=title_reply) as server:
        assert _titles(work, env, server, "two").returncode == 0
        files = {p: p.read_bytes() for p in (work / "titled").rglob("*")
                 if p.is_file() and "sqlite" not in p.name and p.parent.name != "locks"}
        (work / "one").mkdir()
        (work / "one" / "harbor.mp4").symlink_to(work / "videos" / "harbor.mp4")
        for videos, extra, change in (("one", (), "1 item(s) no longer built: valley"),
                                      ("two", ("--opt", "words=5"), "option words: 6 -> 5")):
            refused = _titles(work, env, server, videos, *extra)
            assert refused.returncode == 2 and change in refused.stderr and "--replace" in refused.stderr, refused.stderr
            assert refused.stderr.count("error:") == 1 and "Traceback" not in refused.stderr
        assert {p: p.read_bytes() for p in files} == files and server.n_requests == 2
        grown = _titles(work, env, server, "videos")  # more videos: the same build, resumed
        assert grown.returncode == 0 and server.n_requests == 2  # intro (1 s) is skipped, nothing asked again
        replaced = _titles(work, env, server, "one", "--replace")
        assert replaced.returncode == 0 and "--replace: rebuilding titled" in replaced.stdout
        assert "2 item(s) no longer built: intro, valley" in replaced.stdout
    assert (work / "titled" / "titles.tsv").read_text() == "harbor\tHARBOR AT DUSK\n"


def test_neptune_export_keeps_inputs_and_drops_what_is_no_longer_built(tmp_path):
    from lvu.construct.neptune_export import _link, _remove_stale

    out = tmp_path / "nep"
    (out / "videos").mkdir(parents=True)
    (out / "asr").mkdir()
    own = out / "videos" / "own.mp4"  # an input video kept in OUT/videos
    own.write_bytes(b"input")
    old = tmp_path / "old.mp4"
    old.write_bytes(b"old")
    (out / "videos" / "old.mp4").symlink_to(old)
    (out / "asr" / "old.srt").write_text("")
    (out / "asr" / "own.srt").write_text("")
    _link(str(own), own)  # the link target is the input itself: left alone
    assert own.read_bytes() == b"input" and not own.is_symlink()
    _remove_stale(out, {"own.mp4"}, {"own"})
    assert sorted(p.name for p in (out / "videos").iterdir()) == ["own.mp4"] and old.read_bytes() == b"old"
    assert sorted(p.name for p in (out / "asr").iterdir()) == ["own.srt"]


def test_an_option_added_by_a_later_lvu_is_a_change_only_away_from_its_default(tmp_path):
    """A folder built before an option existed (build.json lacks it) resumes while the option is at
    its default; set to anything else it is a change like any other option."""
    from lvu.construct.filtering import BlindFilter, pipeline_options
    from lvu.construct.blind_rules import FilterSettings
    from lvu.construct.pipeline import Item
    from lvu.construct.store import CONFIG_FILE, changes_from_record

    pipeline = BlindFilter(pipeline_options(FilterSettings("lvbench"), 2))
    items = [Item("q1", "v.mp4", {})]
    recorded = dict(pipeline.options)
    del recorded["allow_single"]  # what an lvu from before --allow-single wrote
    (tmp_path / CONFIG_FILE).write_text(json.dumps({"options": recorded, "videos": [{"id": "q1", "path": "v.mp4"}]}))
    assert changes_from_record(tmp_path, pipeline, items, {}) == []
    allowed = BlindFilter({**pipeline.options, "allow_single": True})
    assert changes_from_record(tmp_path, allowed, items, {}) == ["option allow_single: None -> True"]
