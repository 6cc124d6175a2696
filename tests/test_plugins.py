"""Your own model and benchmark as plugins (`module:Class`, entry points), and docs/plugins.md run
as written: its files are written into an empty folder and its `lvu` commands run there."""

from __future__ import annotations

import csv
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from lvu.errors import LvuError
from lvu.media.testing import make_video
from lvu.models.base import Model
from lvu.models.baselines import RandomChoice
from lvu.registry import Registry, _import_module
from lvu.runs.store import Store
from lvu.types import Sample, VideoRef

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "plugins.md"
SCRIPT = Path(sys.executable).with_name("lvu")
# The installed `lvu` script, as a user runs it (the current folder is not on its sys.path);
# without one, the same: python with '' taken off sys.path.
LVU = [str(SCRIPT)] if SCRIPT.exists() else \
    [sys.executable, "-c", "import sys; sys.path.remove(''); from lvu.cli import main; main()"]


def lvu(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    full = {**os.environ, **env}
    if not full.get("PYTHONPATH"):
        full.pop("PYTHONPATH", None)
    return subprocess.run([*LVU, *args], capture_output=True, text=True, cwd=cwd, env=full)


def titled_blocks(text: str) -> dict[str, tuple[str, str]]:
    """```LANG title="NAME" blocks: name -> (language, content)."""
    return {name: (lang, body) for lang, name, body in re.findall(r'```(\w+) title="([^"]+)"\n(.*?)```', text, flags=re.S)}


def lvu_commands(text: str) -> list[list[str]]:
    """The `lvu ...` lines of the ```bash blocks, as argument lists."""
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    return [shlex.split(line, comments=True)[1:] for block in blocks for line in block.splitlines()
            if line.startswith("lvu ")]


def write_dist_info(site: Path, name: str, entry_points: str) -> None:
    """What `pip install` leaves for a package declaring entry points: enough for importlib.metadata."""
    info = site / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    """Results and caches in an empty folder (the haystack is generated there once for this module)."""
    root = tmp_path_factory.mktemp("lvu-home")
    return {"LVU_CACHE_DIR": str(root / "cache"), "LVU_RESULTS_DIR": str(root / "results"), "PYTHONPATH": ""}


# ---- docs/plugins.md, as written ----------------------------------------------------------------


@pytest.mark.slow
def test_plugins_page_runs_as_written(tmp_path, env):
    text = DOC.read_text()
    work = tmp_path / "my_project"
    work.mkdir()
    files = titled_blocks(text)
    assert {"my_models.py", "my_benchmark.py", "questions.csv"} <= set(files)
    for name, (_, body) in files.items():
        (work / name).write_text(body)
    for row in csv.DictReader((work / "questions.csv").open()):  # the clips the questions are about
        if not (work / row["video"]).exists():
            (work / row["video"]).parent.mkdir(parents=True, exist_ok=True)
            make_video(work / row["video"], seconds=4, fps=10, gop=10)

    # Installing the package of the entry-points section: its declared entry points, the modules importable.
    local, installed = text.split("## Installed plugins")
    installed, construction = installed.split("## Build pipelines")  # its package is a sketch (my_pkg)
    toml = tomllib.loads(re.search(r"```toml\n(.*?)```", installed, flags=re.S).group(1))
    declared = toml["project"]["entry-points"]
    write_dist_info(tmp_path / "site", "my-project", "".join(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) for group, eps in declared.items()))
    installed_env = {**env, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), str(work)])}

    outputs = []
    for section, section_env in ((local, env), (installed, installed_env)):
        for args in lvu_commands(section):
            out = lvu(*args, cwd=work, env=section_env)
            assert out.returncode == 0, (args, out.stderr)
            outputs.append((args, out.stdout))
    assert len(outputs) >= 8

    by_command = {" ".join(args): stdout for args, stdout in outputs}
    csv_run = by_command["run -b my_benchmark:CsvQuiz --data questions.csv -m my_models:Always"]
    assert "score 33.3 %" in text and "score 33.3 %" in csv_run  # the number the page states
    report = Path(re.search(r"^report: (.+)$", csv_run, flags=re.M).group(1))
    assert "data:image/png" in report.read_text()  # the first run's report has its plots
    listing = by_command["list"]
    for names in declared.values():
        assert all(re.search(rf"│ {re.escape(name)}\s+│", listing) for name in names), listing
    assert "score 33.3 %" in by_command["run -b csv-quiz --data questions.csv -m always -a letter=C"]

    # The runs store the names as typed.
    runs = Store(Path(env["LVU_RESULTS_DIR"])).runs()
    assert {(r.benchmark, r.model) for r in runs} >= {
        ("haystack", "my_models:Always"), ("haystack", "my_models:SubtitleMatch"),
        ("my_benchmark:CsvQuiz", "my_models:Always"), ("csv-quiz", "always")}


@pytest.mark.slow
def test_plugins_page_error_lines_are_what_lvu_prints(tmp_path, env):
    """Each documented `error: KIND 'NAME': ...` line is the one `lvu run -m NAME` (-b) prints."""
    text = DOC.read_text()
    for name, (_, body) in titled_blocks(text).items():
        (tmp_path / name).write_text(body)
    errors = re.findall(r"^error: (model|benchmark) '([^']+)': .*$", text, flags=re.M)
    assert len(errors) >= 3
    for line in re.findall(r"^error: (?:model|benchmark) '[^']+': .*$", text, flags=re.M):
        kind, name = re.match(r"error: (\w+) '([^']+)'", line).groups()
        out = lvu("run", "-m" if kind == "model" else "-b", name, cwd=tmp_path, env=env)
        assert out.returncode == 2 and out.stderr.strip() == line


# ---- entry points ----------------------------------------------------------------------------------


ECHO = '''
from lvu.models.base import Model
from lvu.types import Response


class Echo(Model):
    """Answers A, saying how many frames it saw."""

    async def generate(self, prompt, *, sample_id=""):
        return Response(text=f"A ({len(prompt.frames)} frames)")
'''


@pytest.fixture()
def tiny_jsonl(tmp_path) -> Path:
    make_video(tmp_path / "clip.mp4", seconds=3, fps=10, gop=10)
    lines = [Sample(id=f"q{i}", benchmark="mine", video=VideoRef(path="clip.mp4"), question="Which?",
                    options=["x", "y"], answer=i % 2).model_dump_json() for i in range(2)]
    (tmp_path / "data.jsonl").write_text("\n".join(lines) + "\n")
    return tmp_path / "data.jsonl"


@pytest.mark.slow
def test_entry_point_model_is_listed_and_runs(tmp_path, env, tiny_jsonl):
    site = tmp_path / "site"
    site.mkdir()
    (site / "mymod.py").write_text(ECHO)
    write_dist_info(site, "my-echo", "[lvu.models]\nmy-echo = mymod:Echo\nbroken = mymod:Missing\n")
    plugin_env = {**env, "PYTHONPATH": str(site), "LVU_RESULTS_DIR": str(tmp_path / "res")}

    listing = lvu("list", cwd=tmp_path, env=plugin_env)
    assert listing.returncode == 0, listing.stderr
    assert re.search(r"│ my-echo\s+│ Answers A, saying how many frames it saw\.", listing.stdout)
    assert re.search(r"│ broken\s+│ \(cannot load", listing.stdout)  # listed with its problem,
    assert re.search(r"│ ocr-match\s+│", listing.stdout)  # and the others still show

    out = lvu("run", "-b", "jsonl", "--data", str(tiny_jsonl), "--frames", "2", "-m", "my-echo",
              cwd=tmp_path, env=plugin_env)
    assert out.returncode == 0, out.stderr
    assert "2 samples, 0 failed" in out.stdout
    exported = lvu("results", "export", "--format", "jsonl", cwd=tmp_path, env=plugin_env).stdout
    assert exported.count('"response": "A (2 frames)"') == 2
    shown = lvu("results", "show", cwd=tmp_path, env=plugin_env).stdout
    assert '"model": "my-echo"' in shown

    broken = lvu("run", "-m", "broken", cwd=tmp_path, env=plugin_env)
    assert broken.returncode == 2 and broken.stderr.count("\n") == 1
    assert "loading entry point 'mymod:Missing' (lvu.models) failed: AttributeError" in broken.stderr


def test_entry_point_cannot_shadow_a_builtin(tmp_path, monkeypatch):
    (tmp_path / "mymod.py").write_text(ECHO)
    monkeypatch.syspath_prepend(str(tmp_path))
    write_dist_info(tmp_path, "shadow", "[lvu.models]\nrandom = mymod:Echo\n")
    registry: Registry[Model] = Registry("model", base=Model, group="lvu.models")
    registry.register("random")(RandomChoice)
    assert registry.get("random") is RandomChoice and registry.names() == ["random"]


# ---- module:Class ----------------------------------------------------------------------------------


@pytest.fixture()
def user_module(tmp_path, monkeypatch) -> Registry[Model]:
    (tmp_path / "usermod.py").write_text(ECHO + "\n\nclass NotAModel:\n    pass\n\n\nclass Half(Model):\n    pass\n")
    (tmp_path / "badmod.py").write_text("import not_installed_anywhere\n")
    (tmp_path / "syntaxmod.py").write_text("def broken(:\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return Registry("model", base=Model, group="lvu.models.none")


def test_module_class_resolves_and_takes_its_typed_name(user_module):
    cls = user_module.get("usermod:Echo")
    assert issubclass(cls, Model) and cls.__name__ == "Echo" and cls.name == "usermod:Echo"
    assert user_module.get("usermod:Echo") is cls
    assert "usermod:Echo" not in user_module.names()  # any module works; nothing to list


@pytest.mark.parametrize("name, message", [
    ("nomod:Echo", "model 'nomod:Echo': cannot import module 'nomod' — install it, or run from its folder"),
    ("badmod:X", "cannot import module 'badmod' (it imports 'not_installed_anywhere', which is missing)"),
    ("syntaxmod:X", "model 'syntaxmod:X': importing module 'syntaxmod' failed: SyntaxError"),
    ("usermod:Ecko", "module 'usermod' has no attribute 'Ecko' — it has Echo, Half"),
    ("usermod:NotAModel", "class NotAModel is not a subclass of lvu.models.base.Model — subclass it"),
    ("usermod:Response", "class Response is not a subclass of lvu.models.base.Model"),
    ("usermod:Half", "class Half does not implement generate — define it"),
    ("usermod:", "write module:Class, e.g. my_pkg.my_module:MyModel"),
    ("echo", "unknown model 'echo'."),
])
def test_bad_plugin_names_are_one_line_errors(user_module, name, message):
    with pytest.raises(LvuError) as e:
        user_module.get(name)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_module_in_the_current_folder_is_found(tmp_path, monkeypatch):
    """The `lvu` script does not put the current folder on sys.path; `module:Class` still finds it."""
    (tmp_path / "herenow.py").write_text(ECHO)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    assert _import_module("herenow").Echo.__name__ == "Echo"
    assert sys.path[-1] == str(tmp_path)  # appended last: installed modules of the same name win


def test_run_spec_stores_the_name_as_typed(tmp_path, monkeypatch, tiny_jsonl):
    from lvu.api import run
    from lvu.runs.store import Store

    (tmp_path / "specmod.py").write_text(ECHO)
    monkeypatch.syspath_prepend(str(tmp_path))
    summary = run("jsonl", "specmod:Echo", settings={"data": str(tiny_jsonl), "frames": 1},
                  results_dir=tmp_path / "res", show_progress=False, report=False, frame_cache=False)
    assert summary.n_failed == 0 and summary.spec.model == "specmod:Echo"
    info = Store(tmp_path / "res").run(summary.run_id)
    assert info.model == "specmod:Echo" and info.env["model"]["backend"] == "specmod:Echo"
