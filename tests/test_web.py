"""The results viewer over a store made by real runs: pages and JSON show the stored numbers, the
sample page shows what the model saw in order, and frames are served only from stored records."""

from __future__ import annotations

import http.client
import io
import json
import re
import shutil
import threading
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pytest

pytest.importorskip("fastapi", reason="the viewer needs lvu[web]")
from fastapi.testclient import TestClient  # noqa: E402
from PIL import Image  # noqa: E402

from lvu.media.testing import read_index  # noqa: E402
from lvu.media.video import VideoReader  # noqa: E402
from lvu.runs.engine import benchmark_of  # noqa: E402
from lvu.runs.run_names import data_name, model_identity  # noqa: E402
from lvu.runs.store import Store  # noqa: E402
from lvu.types import LETTERS, RunSpec, SampleResult  # noqa: E402
from lvu.web.app import create_app  # noqa: E402
from lvu.web.catalog import prompt_parts  # noqa: E402
from web_store import CUES, WebStore, build, stored  # noqa: E402


@pytest.fixture(scope="module")
def web(tmp_path_factory) -> WebStore:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LVU_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        yield build(tmp_path_factory.mktemp("web"))


@pytest.fixture(scope="module")
def client(web: WebStore) -> TestClient:
    return TestClient(create_app(web.results_dir))


def copy_store(web: WebStore, tmp_path: Path) -> Path:
    """A private copy of the results dir, for tests that plant records."""
    return Path(shutil.copytree(web.results_dir, tmp_path / "results"))


class Rows(HTMLParser):
    """Table rows as (tr class, [cell text]); breakdown tables by their <h3> title."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[str, list[str]]] = []
        self.titled: dict[str, list[list[str]]] = {}
        self._title: str | None = None
        self._in_h3 = False
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "h3":
            self._in_h3, self._title = True, ""
        elif tag == "tr":
            self.rows.append((dict(attrs).get("class") or "", []))
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "h3":
            self._in_h3 = False
        elif tag == "table":
            self._title = None
        elif tag in ("td", "th") and self._cell is not None:
            self.rows[-1][1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._title and self.rows[-1][1] and self.rows[-1][1][0] != "group":
            self.titled.setdefault(self._title, []).append(self.rows[-1][1])

    def handle_data(self, data):
        if self._in_h3:
            self._title += data
        if self._cell is not None:
            self._cell.append(data)


def parse(text: str) -> Rows:
    rows = Rows()
    rows.feed(text)
    return rows


def letter(value) -> str:
    return LETTERS[value] if isinstance(value, int) else ("" if value is None else str(value))


# ---- pages ---------------------------------------------------------------------------------------


def test_runs_page_shows_each_runs_stored_numbers(web, client):
    page = client.get("/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    rows = {cells[0]: cells for cls, cells in parse(page.text).rows if cls == "run"}
    store = Store(web.results_dir)
    runs = store.runs()
    store.close()
    assert set(rows) == {r.run_id for r in runs} == {web.small, web.full}
    for r in runs:
        cells = rows[r.run_id]
        assert cells[1:3] == [data_name(r.spec), model_identity(r.spec)] and cells[4] == r.status
        assert cells[1:3] == ["jsonl(web.jsonl)", "fake-follow"]  # the data file's name; a backend serving no model id
        assert (cells[5], int(cells[6])) == (f"{r.n_ok}/{r.n_total}", r.n_errors)  # coverage, as results list
        official = benchmark_of(r.spec).aggregate(stored(web.results_dir, r.run_id)[1])[0].rows[0]
        assert cells[7] == f"{official[2]:.1f}"  # the headline: the benchmark's overall row, failures counted
    assert rows[web.full][5] != rows[web.small][5]  # the two runs really differ (3 vs 2 of 5 samples ok)
    assert (rows[web.full][4], rows[web.small][4]) == ("done", "partial")  # the small run is a --limit 3 run


def test_run_page_shows_the_benchmarks_own_breakdown_tables_and_the_spec(web, client):
    info, results = stored(web.results_dir, web.full)
    page = client.get(f"/runs/{web.full}")
    assert page.status_code == 200
    tables = parse(page.text).titled
    expected = benchmark_of(info.spec).aggregate(results)
    assert [t.title for t in expected] == list(tables)
    for t in expected:
        assert tables[t.title] == [[g, str(n), f"{s:.1f}"] for g, n, s in t.rows]
    assert json.dumps(info.spec.settings["data"]) in unescape(page.text)  # the spec is shown
    assert info.env["decoder"] in page.text


def sample_ids_shown(client: TestClient, url: str) -> list[str]:
    page = client.get(url)
    assert page.status_code == 200, page.text
    return [cells[0] for cls, cells in parse(page.text).rows if cls.startswith("sample")]


def test_run_page_filters_wrong_failed_and_by_label(web, client):
    _, results = stored(web.results_dir, web.full)
    base = f"/runs/{web.full}"
    assert sample_ids_shown(client, base) == [r.sample_id for r in results]
    wrong = [r.sample_id for r in results if r.correct is False and not r.error]
    failed = [r.sample_id for r in results if r.error]
    moves = [r.sample_id for r in results if r.labels.get("kind") == "move"]
    assert wrong and failed and moves  # the store really has each kind
    assert sample_ids_shown(client, f"{base}?show=wrong") == wrong
    assert sample_ids_shown(client, f"{base}?show=failed") == failed
    assert sample_ids_shown(client, f"{base}?label=kind%3Dmove") == moves
    both = [s for s in failed if s in moves]
    assert sample_ids_shown(client, f"{base}?show=failed&label=kind%3Dmove") == both
    assert client.get(f"{base}?show=bogus").status_code == 400
    assert client.get(f"{base}?label=nokey").status_code == 400


def timeline(page: str) -> str:
    """The kinds of the parts shown under "What the model saw", as F/S/T like the stored `order`."""
    section = page.split("<div class=timeline>", 1)[1].split("<h2>", 1)[0]
    return "".join({"figure": "F", "div class=cue": "S", "div class=text": "T"}[m]
                   for m in re.findall(r"<(figure|div class=cue|div class=text)\b", section))


def test_sample_page_shows_frames_cues_and_text_in_the_prompts_order(web, client):
    _, results = stored(web.results_dir, web.full)
    r = next(x for x in results if x.sample_id == "set/s3")
    page = client.get(f"/runs/{web.full}/samples/{quote(r.sample_id, safe='')}")
    assert page.status_code == 200
    text = unescape(page.text)
    assert timeline(page.text) == r.prompt["order"] and r.prompt["n_subtitles"] > 0
    shown_cues = re.findall(r"<div class=cue><span class=span>[^<]*</span>([^<]*)</div>", page.text)
    assert shown_cues == [p["subtitle"] for p in r.prompt["parts"] if "subtitle" in p]
    assert set(shown_cues) <= {c[2] for c in CUES}
    images = re.findall(r"<img src='([^']+)'", page.text)
    assert images == [f"/media/{web.full}/set%2Fs3/{i}.jpg" for i in range(len(r.frame_timestamps))]
    assert r.prompt["text"] in text and r.response in text  # the exact prompt and the raw response
    facts = dict(re.findall(r"id='fact-(\w+)'>([^<]*)<", text))
    assert facts["answer"] == letter(r.answer) and facts["prediction"] == letter(r.prediction)
    assert facts["outcome"] == ("correct" if r.correct else "wrong") and facts["explanation"] == r.explanation


def test_failed_sample_page_shows_its_error(web, client):
    _, results = stored(web.results_dir, web.full)
    r = next(x for x in results if x.error)
    page = client.get(f"/runs/{web.full}/samples/{quote(r.sample_id, safe='')}")
    assert page.status_code == 200 and r.error in unescape(page.text) and "<img" not in page.text


# ---- JSON ---------------------------------------------------------------------------------------


def test_json_endpoints_give_the_same_numbers(web, client):
    store = Store(web.results_dir)
    runs = {r.run_id: r for r in store.runs()}
    store.close()
    api = {r["run_id"]: r for r in client.get("/api/runs").json()}
    assert set(api) == set(runs)
    for run_id, r in runs.items():
        official = benchmark_of(r.spec).aggregate(stored(web.results_dir, run_id)[1])[0].rows[0]
        assert (api[run_id]["n_samples"], api[run_id]["n_failed"], api[run_id]["n_ok"], api[run_id]["n_total"]) == \
               (r.n_samples, r.n_errors, r.n_ok, r.n_total)
        assert (api[run_id]["score_row"], api[run_id]["score"]) == (official[0], pytest.approx(official[2]))
    info, results = stored(web.results_dir, web.full)
    one = client.get(f"/api/runs/{web.full}").json()
    assert one["spec"] == info.spec.model_dump(mode="json") and one["env"] == info.env
    expected = benchmark_of(info.spec).aggregate(results)
    assert [(t["title"], [(x["group"], x["n"], x["score"]) for x in t["rows"]]) for t in one["tables"]] == \
           [(t.title, [tuple(row) for row in t.rows]) for t in expected]
    assert [s["sample_id"] for s in one["samples"]] == [r.sample_id for r in results]
    wrong = client.get(f"/api/runs/{web.full}", params={"show": "wrong"}).json()["samples"]
    assert [s["sample_id"] for s in wrong] == [r.sample_id for r in results if r.correct is False]
    sample = client.get(f"/api/runs/{web.full}/samples/set%2Fs3").json()
    record = next(r for r in results if r.sample_id == "set/s3")
    assert sample["response"] == record.response and sample["prediction"] == record.prediction
    assert [f["timestamp"] for f in sample["frames"]] == record.frame_timestamps
    assert "".join(p["kind"][0].upper() for p in sample["parts"]) == record.prompt["order"]
    assert client.get("/api/runs/000000000000").status_code == 404
    assert client.get(f"/api/runs/{web.full}/samples/nope").status_code == 404


# ---- frames ---------------------------------------------------------------------------------------


def frame_shown_at(web: WebStore, t: float) -> int:
    """The barcode video's frame on screen at time t, from its ground truth."""
    return max(i for i, x in enumerate(web.video.times) if x <= t + 1e-6)


@pytest.mark.parametrize("which, height", [("full", 96), ("small", 48)])
def test_media_is_the_frame_the_model_saw(web, client, which, height):
    run_id = getattr(web, which)
    _, results = stored(web.results_dir, run_id)
    r = next(x for x in results if x.sample_id == "s0")
    with VideoReader(web.video.path) as reader:
        reference = reader.get_frames_played_at(r.frame_timestamps, resize=None if height == 96 else height)
    for i, t in enumerate(r.frame_timestamps):
        got = client.get(f"/media/{run_id}/s0/{i}.jpg")
        assert got.status_code == 200 and got.headers["content-type"] == "image/jpeg"
        image = np.asarray(Image.open(io.BytesIO(got.content)).convert("RGB"))
        assert image.shape[0] == height  # the run's resize setting is honoured
        if height == 96:  # full size: the barcode is readable
            assert read_index(image) == frame_shown_at(web, t)
        diff = np.abs(image.astype(int) - reference.data[i].astype(int)).mean()
        assert diff < 6, f"frame {i} differs from an independent decode by {diff:.1f} on average"


def test_records_stored_before_parts_and_video_still_show_and_serve_frames(web, tmp_path):
    results_dir = copy_store(web, tmp_path)
    store = Store(results_dir)
    old = next(r for r in store.results(web.full) if r.sample_id == "s0")
    old.prompt = {k: v for k, v in old.prompt.items() if k not in ("parts", "video")}
    store.put(web.full, old, 0)
    store.close()
    client = TestClient(create_app(results_dir))
    page = client.get(f"/runs/{web.full}/samples/s0")
    assert page.status_code == 200
    assert timeline(page.text).replace("S", "T") == re.sub("T+", "T", old.prompt["order"].replace("S", "T"))
    assert prompt_parts(old.model_dump())[0] == {"kind": "frame", "index": 0, "timestamp": old.frame_timestamps[0]}
    got = client.get(f"/media/{web.full}/s0/1.jpg")  # the video comes from the rebuilt benchmark
    assert got.status_code == 200
    assert read_index(np.asarray(Image.open(io.BytesIO(got.content)).convert("RGB"))) == \
           frame_shown_at(web, old.frame_timestamps[1])


# ---- nothing escapes --------------------------------------------------------------------------------


@pytest.fixture()
def planted(web, tmp_path):
    """A copy of the store plus a secret file, symlinks to it, and a run whose record names it."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-CONTENT\n")
    results_dir = copy_store(web, tmp_path)
    (results_dir / web.full / "s0").mkdir(parents=True)
    (results_dir / web.full / "s0" / "0.jpg").symlink_to(secret)
    (results_dir / "link.jpg").symlink_to(secret)
    (tmp_path / "video-link.mp4").symlink_to(secret)
    store = Store(results_dir)
    spec = RunSpec(benchmark="jsonl", model="planted", settings={"data": str(tmp_path / "none.jsonl")})
    store.begin_run(spec, {})
    store.put(spec.run_id, SampleResult(sample_id="evil", frame_timestamps=[0.0],
                                        prompt={"video": str(tmp_path / "video-link.mp4")}), 0)
    store.close()
    return results_dir, secret, spec.run_id


def raw_get(url: str, path: str) -> tuple[int, bytes, str]:
    """GET with the path sent byte for byte (no client-side normalisation of `..`)."""
    host, port = url.removeprefix("http://").rstrip("/").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read(), response.getheader("content-type") or ""
    finally:
        conn.close()


@pytest.fixture()
def live(planted):
    """The planted store served by uvicorn on a free loopback port, as `lvu view` serves it."""
    import uvicorn

    from lvu.web.serve import bind

    results_dir = planted[0]
    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(create_app(results_dir, allowed_hosts=["127.0.0.1"]), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started and thread.is_alive():
        threading.Event().wait(0.02)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/", planted
    server.should_exit = True
    thread.join(10)
    sock.close()


def test_no_path_escapes_the_stored_records(web, live):
    url, (results_dir, secret, planted_run) = live
    full, small = web.full, web.small
    n_frames = len(stored(web.results_dir, full)[1][0].frame_timestamps)
    attempts = [
        f"/media/{full}/s0/../../../../../../../../etc/passwd",
        f"/media/{full}/s0/..%2f..%2f..%2f..%2fetc%2fpasswd",
        f"/media/{full}/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        f"/media/{full}/%2e%2e%2f%2e%2e%2f{quote(secret.name)}/0.jpg",
        f"/media/{full}/..%2F..%2Flink.jpg/0.jpg",
        f"/media/%2e%2e/{full}/s0/0.jpg",
        f"/media/{full}//etc/passwd",
        f"/media/{full}/{quote(str(secret), safe='')}/0.jpg",
        f"/media/{full}/{secret}",
        f"/media/{full}{secret}/0.jpg",
        f"/media/{full}/s0/0.jpg/../../../{secret.name}",
        f"/media/{small}/set%2Fs3/0.jpg",  # another run's sample
        f"/media/{full}/s0/{n_frames}.jpg",  # index out of range
        f"/media/{full}/s0/-1.jpg",
        f"/media/{full}/s0/01.jpg",
        f"/media/{full}/s0/99999999999999999999.jpg",
        f"/media/{full}/s0/0.png",
        f"/media/{full}/s2/0.jpg",  # a failed sample has no frames
        "/media/000000000000/s0/0.jpg",
        f"/media/{full}/s0/0.jpg%00.txt",
        f"/{results_dir.name}/link.jpg",
        f"/media/{full}/s0/0.jpg?path={secret}",  # query strings are not paths either
        "/link.jpg",
        f"/media/{planted_run}/evil/0.jpg",  # a stored record naming a symlink to a non-video
    ]
    for path in attempts:
        status, body, kind = raw_get(url, path)
        if path.endswith("?path=" + str(secret)):  # the real frame, never the file named in the query
            assert status == 200 and body.startswith(b"\xff\xd8") and b"TOP-SECRET" not in body
            continue
        assert status == 404, f"{path} -> {status}"
        assert b"TOP-SECRET" not in body and kind != "image/jpeg", path
    status, body, kind = raw_get(url, f"/media/{full}/set%2Fs3/0.jpg")  # the same id in its own run is served
    assert status == 200 and kind == "image/jpeg"


def test_other_host_names_are_refused(web):
    app = create_app(web.results_dir, allowed_hosts=["127.0.0.1", "localhost"])
    assert TestClient(app, base_url="http://127.0.0.1:8765").get("/").status_code == 200
    assert TestClient(app, base_url="http://attacker.example").get("/").status_code == 400


# ---- degraded stores and the command --------------------------------------------------------------


def test_a_run_whose_benchmark_cannot_be_rebuilt_still_shows_label_tables(web, tmp_path):
    results_dir = copy_store(web, tmp_path)
    store = Store(results_dir)
    spec = RunSpec(benchmark="plugin-not-installed", model="m")
    store.begin_run(spec, {})
    for i, ok in enumerate([True, False, True]):
        store.put(spec.run_id, SampleResult(sample_id=f"x{i}", labels={"k": "a"}, score=float(ok), correct=ok), i)
    store.close()
    run = TestClient(create_app(results_dir)).get(f"/api/runs/{spec.run_id}").json()
    assert "plugin-not-installed" in run["tables_note"]
    assert run["tables"][0]["rows"][0]["score"] == pytest.approx(200 / 3)


def test_view_without_a_store_is_a_one_line_error(tmp_path):
    from lvu.errors import LvuError
    from lvu.web.serve import bind

    with pytest.raises(LvuError, match="no run store"):
        create_app(tmp_path)
    sock = bind("127.0.0.1", 0)
    try:
        with pytest.raises(LvuError, match="is in use"):
            bind("127.0.0.1", sock.getsockname()[1])
    finally:
        sock.close()


@pytest.mark.slow
def test_lvu_view_without_a_store_exits_2_with_one_line(tmp_path):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "lvu.cli", "view", "--results-dir", str(tmp_path / "none")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "no run store" in done.stderr and "--results-dir" in done.stderr


def test_stored_text_is_escaped_on_every_page(web, tmp_path):
    results_dir = copy_store(web, tmp_path)
    store = Store(results_dir)
    spec = RunSpec(benchmark="jsonl", model="<script>alert('model')</script>")
    store.begin_run(spec, {})
    hostile = "<img src=x onerror=alert(1)>"
    store.put(spec.run_id, SampleResult(
        sample_id="<b>id</b>", labels={"kind": hostile}, response="<script>alert('response')</script>",
        prompt={"text": hostile, "parts": [{"subtitle": hostile, "start": 0.0, "end": 1.0}, {"text": hostile}]},
    ), 0)
    store.close()
    client = TestClient(create_app(results_dir))
    for url in ("/", f"/runs/{spec.run_id}", f"/runs/{spec.run_id}/samples/{quote('<b>id</b>', safe='')}"):
        page = client.get(url)
        assert page.status_code == 200
        assert "<script>" not in page.text and "<img src=x" not in page.text and "<b>id" not in page.text
        assert "&lt;script&gt;" in page.text or "&lt;img src=x" in page.text
