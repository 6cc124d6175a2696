"""Arguments are read as the user meant them or refused in one line (issue 12, defect 8; issue 21):
the lmms-eval comma form, typed model arguments (one converter, lvu.args), the common benchmark
settings, --limit and --resize. Nothing here touches the network or a GPU."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import fakes  # noqa: F401  (registers the fake benchmark)
import pytest

from lvu.args import as_bool, as_cache, as_float, as_int, check_known
from lvu.benchmarks import load_all as load_benchmarks
from lvu.benchmarks.base import BENCHMARKS
from lvu.cli import main, parse_kv
from lvu.errors import LvuError
from lvu.models import load_all as load_models
from lvu.models.base import MODELS
from lvu.models.response_cache import resolve_cache_dir

LOCAL = "http://127.0.0.1:9/v1"


@pytest.fixture(autouse=True)
def _offline_env(tmp_path, monkeypatch):
    load_models()
    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real")


def cli(capsys, monkeypatch, *args: str) -> tuple[int, str]:
    """`lvu ARGS` in-process (so the test's fake benchmark is registered): (exit code, stderr)."""
    monkeypatch.setattr(sys, "argv", ["lvu", *args])
    with pytest.raises(SystemExit) as e:
        main()
    return e.value.code, capsys.readouterr().err


def lvu(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lvu.cli", *args], capture_output=True, text=True)


def assert_one_line(err: str, *needles: str) -> None:
    assert err.strip().count("\n") == 0 and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, (needle, err)


# ---- the comma form -------------------------------------------------------------------------------


def test_comma_form_is_several_arguments_and_reaches_the_backend(capsys, monkeypatch):
    parsed = parse_kv([f"model=x,base_url={LOCAL},temperature=0"], "--model-arg")
    assert parsed == {"model": "x", "base_url": LOCAL, "temperature": 0}

    seen = {}

    class Stop(Exception):
        pass

    def fake_run(benchmark, model, **kw):
        seen.update(model=model, **kw)
        raise Stop

    monkeypatch.setattr("lvu.api.run", fake_run)
    monkeypatch.setattr(sys, "argv", ["lvu", "run", "-b", "fake", "-m", "openai",
                                      "-a", f"model=x,base_url={LOCAL}", "-a", "seed=3"])
    with pytest.raises(Stop):
        main()
    assert seen["model_args"] == {"model": "x", "base_url": LOCAL, "seed": 3}
    backend = MODELS.get("openai")(**seen["model_args"])  # constructed, never called
    assert backend.model == "x" and backend.base_url == LOCAL


def test_commas_inside_one_value_stay_or_are_refused():
    assert parse_kv(["prompt=a,b"], "-a") == {"prompt": "a,b"}  # no KEY= piece: one value
    assert parse_kv(['extra_body={"a": 1,"b": 2}'], "-a") == {"extra_body": {"a": 1, "b": 2}}  # JSON keeps commas
    assert parse_kv(['model="x,base_url=y"'], "-a") == {"model": "x,base_url=y"}  # a quoted JSON string
    assert parse_kv(["answerer.model=m,answerer.temperature=0"], "-a") == {"answerer.model": "m",
                                                                            "answerer.temperature": 0}
    with pytest.raises(LvuError, match="mixes KEY=VALUE pieces") as e:  # model 'x,y' or model 'x' and y?
        parse_kv([f"model=x,y,base_url={LOCAL}"], "--model-arg")
    assert "\n" not in str(e.value)
    with pytest.raises(LvuError, match="is not KEY=VALUE"):
        parse_kv(["=3"], "-a")


# ---- typed model arguments ------------------------------------------------------------------------


@pytest.mark.parametrize("model, arg, needle", [
    ("random", "seed=abc", "random: seed='abc' is not a whole number"),
    ("ocr-match", "threads=abc", "ocr-match: threads='abc' is not a whole number"),
    ("openai", "model=x,max_retries=many", "openai: max_retries='many' is not a whole number"),
])
def test_bad_model_numbers_are_one_line_errors(capsys, monkeypatch, model, arg, needle):
    code, err = cli(capsys, monkeypatch, "run", "-b", "fake", "-m", model, "-a", arg, "--no-report")
    assert code == 2
    assert_one_line(err, needle)


def test_unknown_model_argument_names_the_known_ones(capsys, monkeypatch):
    code, err = cli(capsys, monkeypatch, "run", "-b", "fake", "-m", "openai", "-a", "modle=x", "--no-report")
    assert code == 2
    assert_one_line(err, "openai has no argument(s) modle", "did you mean model", "known: ", "base_url")
    for name, args in (("hf", {"model": "m", "trust_remote_cod": True}), ("vllm", {"model": "m", "tempreature": 0}),
                       ("gemini", {"model": "m", "sed": 1}), ("random", {"sede": 1})):
        with pytest.raises(LvuError, match=rf"{name} has no argument\(s\) .*; known: "):
            MODELS.get(name)(**args)


def test_one_bool_converter_reads_false_as_false():
    for word in (False, "False", "false", "FALSE", "no", "No", "0", 0):
        assert as_bool("hf", "trust_remote_code", word) is False, word
    for word in (True, "True", "true", "yes", "YES", "1", 1):
        assert as_bool("hf", "trust_remote_code", word) is True, word
    with pytest.raises(LvuError, match=r"hf: trust_remote_code='maybe' is not true/false — use true or false"):
        as_bool("hf", "trust_remote_code", "maybe")
    assert as_int("x", "n", "12") == 12 and as_int("x", "n", 12.0) == 12 and as_int("x", "n", "1e3") == 1000
    for bad in ("abc", 2.5, True, None, "inf"):
        with pytest.raises(LvuError, match="is not a whole number"):
            as_int("x", "n", bad)
    with pytest.raises(LvuError, match=r"x: fps=0 must be more than 0"):
        as_float("x", "fps", 0, above=0)
    assert as_cache("x", "cache", "No") is False and as_cache("x", "cache", "/tmp/c") == Path("/tmp/c")
    assert resolve_cache_dir("no", "responses") is None and resolve_cache_dir("False", "responses") is None
    check_known("x", {"a": 1}, {"a", "b"})


@pytest.mark.slow
def test_hf_reads_trust_remote_code_false_as_false(monkeypatch):
    hf = pytest.importorskip("lvu.models.hf")
    pytest.importorskip("transformers")
    monkeypatch.setattr(hf.HFModel, "_load", lambda self: None)  # the argument parsing only, no weights
    assert hf.HFModel(model="m", trust_remote_code="False").trust_remote_code is False
    assert hf.HFModel(model="m", trust_remote_code="True", batch_size="2").trust_remote_code is True
    for args, needle in (({"trust_remote_code": "maybe"}, "hf: trust_remote_code='maybe' is not true/false"),
                         ({"batch_size": 0}, "hf: batch_size=0 must be at least 1"),
                         ({"seed": "abc"}, "hf: seed='abc' is not a whole number"),
                         ({"dtype": "fp8"}, "hf: unknown dtype 'fp8'; use auto")):
        with pytest.raises(LvuError) as e:
            hf.HFModel(model="m", **args)
        assert needle in str(e.value) and "\n" not in str(e.value)


def test_vllm_reads_trust_remote_code_false_as_false(monkeypatch):
    import types

    module = types.ModuleType("vllm")
    module.LLM = lambda **kwargs: types.SimpleNamespace(kwargs=kwargs)
    module.SamplingParams = dict
    monkeypatch.setitem(sys.modules, "vllm", module)
    vllm = MODELS.get("vllm")
    kwargs = vllm(model="m", trust_remote_code="False", enforce_eager="no", seed="7").llm.kwargs
    assert kwargs["trust_remote_code"] is False and kwargs["enforce_eager"] is False and kwargs["seed"] == 7
    assert vllm(model="m", trust_remote_code="True").llm.kwargs["trust_remote_code"] is True
    for args, needle in (({"seed": "abc"}, "vllm: seed='abc' is not a whole number"),
                         ({"gpu_memory_utilization": 1.5}, "vllm: gpu_memory_utilization=1.5 must be more than 0"),
                         ({"trust_remote_code": "perhaps"}, "vllm: trust_remote_code='perhaps' is not true/false")):
        with pytest.raises(LvuError) as e:
            vllm(model="m", **args)
        assert needle in str(e.value) and "\n" not in str(e.value)


# ---- benchmark settings, --limit, --resize --------------------------------------------------------


def test_common_benchmark_settings_are_checked_for_every_benchmark():
    load_benchmarks()
    cases = [
        ("haystack", {"resize": 0}, "haystack: resize=0 must be at least 1"),
        ("haystack", {"resize": "abc"}, "haystack: resize='abc' is not a whole number"),
        ("haystack", {"resize": True}, "haystack: resize=True is not a whole number"),
        ("haystack", {"seed": "abc"}, "haystack: seed='abc' is not a whole number"),
        ("haystack", {"limit": 0}, "haystack: limit=0 must be at least 1"),
        ("haystack", {"frames": -1}, "frames=-1 is not a frame count"),  # the benchmark's own check
        ("lvbench", {"fps": 0}, "fps=0 is not a positive rate"),  # the benchmark's own check
        ("mlvu", {"resize": -5}, "mlvu: resize=-5 must be at least 1"),
        ("videomme", {"resize": 0}, "videomme: resize=0 must be at least 1"),
        ("neptune", {"resize": 0}, "neptune: resize=0 must be at least 1"),
        ("longvideobench", {"resize": 0}, "longvideobench: resize=0 must be at least 1"),
    ]
    for name, settings, needle in cases:
        with pytest.raises(LvuError) as e:
            BENCHMARKS.get(name)(**settings)
        assert needle in str(e.value) and "\n" not in str(e.value), (name, settings, str(e.value))
    assert BENCHMARKS.get("haystack")(resize="448").settings["resize"] == 448  # YAML text that is a number
    assert BENCHMARKS.get("neptune")(frames="1fps").settings["frames"] == "1fps"  # a benchmark's own word stays


@pytest.mark.parametrize("limit", ["0", "-3"])
def test_limit_below_one_is_refused(tmp_path, limit):
    results = tmp_path / "results"
    out = lvu("run", "-m", "random", "--limit", limit, "--results-dir", str(results), "--no-report")
    assert out.returncode == 2 and "nan" not in out.stdout
    assert_one_line(out.stderr, f"--limit {limit}: must be at least 1")
    assert not results.exists()  # nothing stored


@pytest.mark.slow
def test_resize_zero_is_refused_before_a_run_is_stored(tmp_path):
    results = tmp_path / "results"
    out = lvu("run", "-m", "random", "--limit", "2", "--resize", "0", "--results-dir", str(results), "--no-report")
    assert out.returncode == 2
    assert_one_line(out.stderr, "resize=0 must be at least 1")
    assert not results.exists()  # the old code stored a run whose every sample failed


def test_frames_option_takes_what_the_benchmarks_accept(capsys, monkeypatch, tmp_path):
    """`--frames 1fps` reaches the benchmark (Neptune and LongVideoBench accept it) instead of
    typer refusing every non-integer; a benchmark that takes only counts refuses it in one line."""
    from lvu.cli.common import frames_setting
    from lvu.runs.grading import make_benchmark

    assert frames_setting("32") == 32 and frames_setting(" 0 ") == 0 and frames_setting("1fps") == "1fps"
    assert frames_setting(None) is None
    assert make_benchmark("neptune", {"frames": frames_setting("1fps")}).settings["frames"] == "1fps"
    code, err = cli(capsys, monkeypatch, "run", "-b", "haystack", "-m", "random", "--frames", "1fps", "--no-report",
                    "--results-dir", str(tmp_path / "res"))
    assert code == 2 and "frames='1fps' is not a frame count" in err


def test_benchmark_switches_read_false_as_false():
    """A benchmark setting whose default is a bool goes through the same converter as model flags:
    `--set vlmevalkit_flag_bug=False` (text "False": not JSON) is False, not a truthy string."""
    from lvu.runs.grading import make_benchmark

    for text, want in (("False", False), ("false", False), ("no", False), ("True", True), ("1", True)):
        bench = make_benchmark("longvideobench", {"compat": "vlmevalkit", "vlmevalkit_flag_bug": text})
        assert bench.settings["vlmevalkit_flag_bug"] is want
    with pytest.raises(LvuError, match="vlmevalkit_flag_bug"):
        make_benchmark("longvideobench", {"compat": "vlmevalkit", "vlmevalkit_flag_bug": "maybe"})
