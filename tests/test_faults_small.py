"""Issue 22, the smaller defects: the viewer's loopback checks, 404 bodies without file paths,
Markdown reports that escape what runs store, stale haystack temporary folders."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys

import pytest

from analysis_runs import result, store_run


@pytest.fixture()
def served(monkeypatch, tmp_path):
    """`lvu view` with uvicorn's serving replaced: returns (the app it would serve, stderr)."""
    import uvicorn

    from lvu.web.serve import view

    results = tmp_path / "results"
    store_run(results, "jsonl", "some-model", [result("a", True)])
    apps = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: apps.append(self.config.app))

    def serve(host: str, capsys):
        view(results_dir=results, port=0, host=host, open_browser=False)
        return apps[-1], capsys.readouterr().err

    return serve


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback here")
def test_view_on_ipv6_loopback_refuses_other_host_names(served, capsys):
    from starlette.testclient import TestClient

    app, err = served("::1", capsys)
    assert "warning" not in err
    assert TestClient(app, base_url="http://[::1]:8765").get("/").status_code == 200
    assert TestClient(app, base_url="http://attacker.example").get("/").status_code == 400  # DNS rebinding


def test_view_on_any_127_address_is_loopback_with_no_warning(served, capsys):
    from starlette.testclient import TestClient

    app, err = served("127.0.0.2", capsys)
    assert "warning" not in err
    assert TestClient(app, base_url="http://127.0.0.2:8765").get("/").status_code == 200
    assert TestClient(app, base_url="http://attacker.example").get("/").status_code == 400
    _, err = served("0.0.0.0", capsys)
    assert "warning: bound to 0.0.0.0: anyone who can reach this machine can read these runs" in err


def test_a_404_body_never_shows_the_store_path(tmp_path):
    from starlette.testclient import TestClient

    from lvu.web.app import create_app

    results = tmp_path / "results"
    store_run(results, "jsonl", "m", [result("a", True)])
    client = TestClient(create_app(results))
    for path in ("/runs/nosuchrun", "/api/runs/nosuchrun", "/media/nosuchrun/a/0.jpg"):
        response = client.get(path)
        assert response.status_code == 404 and str(tmp_path) not in response.text, (path, response.text)
        assert "nosuchrun" in response.text


def test_markdown_reports_escape_labels_and_model_names(tmp_path):
    from lvu.analysis.report import build_report, write
    from lvu.analysis.runs import load_runs
    from lvu.runs.store import Store

    hostile = "<img src=x onerror=alert(1)>"
    link = "[click](javascript:alert(2))"
    results = tmp_path / "results"
    run_id = store_run(results, "jsonl", f"model*{hostile}", [
        result("a", True, {"kind": hostile}), result("b", False, {"kind": link}), result("c", True, {"kind": "a|b_c"})])
    store = Store(results)
    md = write(build_report(load_runs(store, [run_id]), n_boot=20), tmp_path / "r.md", "md").read_text()
    store.close()
    outside_code = re.sub(r"```.*?```", "", md, flags=re.S)  # the run spec's JSON block is verbatim
    assert not re.search(r"(?<!\\)<img", outside_code) and "](javascript" not in outside_code
    assert "\\<img src=x onerror=alert(1)\\>" in md and "[click]\\(javascript:alert(2))" in md
    assert "a\\|b\\_c" in md  # a cell never splits, and no emphasis starts


def test_stale_haystack_temporary_folders_are_removed_on_the_next_generation(tmp_path):
    from lvu.benchmarks.haystack import JSONL_NAME, MARKER_NAME, _params, generate

    out = tmp_path / "haystack"
    out.mkdir()
    (out / MARKER_NAME).write_text(json.dumps(_params(0, 1, 0.2)))  # a finished haystack
    (out / JSONL_NAME).write_text("")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    killed = tmp_path / f".haystack.tmp-{int(dead.stdout)}-123"  # a SIGKILLed generator's half-built folder
    (killed / "videos").mkdir(parents=True)
    running = tmp_path / f".haystack.tmp-{__import__('os').getpid()}-456"  # a live generator's (this process)
    running.mkdir()
    assert generate(out, seed=0, n_videos=1, scale=0.2) == out / JSONL_NAME
    assert not killed.exists() and running.exists()
