"""The decode benchmark's quick mode end to end: a tiny generated video, every method in its own
process, a table with a row per method and numbers in every column. No wall-clock assertions."""

from __future__ import annotations

import re

import numpy as np
import pytest

from lvu.media import bench
from lvu.media.benchvideo import BenchVideo, encode, read_code


def _rows(text: str, header: str) -> dict[str, list[str]]:
    """Markdown table rows after the line starting with `header`, keyed by first cell."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(header))
    rows = {}
    for ln in lines[start + 2:]:
        if not ln.startswith("|"):
            break
        cells = [c.strip() for c in ln.strip("|").split("|")]
        rows[cells[0]] = cells[1:]
    return rows


@pytest.mark.slow
def test_quick_mode_prints_every_method_with_numbers(tmp_path, capsys):
    assert bench.main(["--quick", "--n", "8", "24", "--video-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    methods, _ = bench.available_methods()
    core = {"lvu exact", "lvu approximate", "lvu cache miss", "lvu cache hit", "lmms-eval pyav", "exact floor",
            "keyframes only"}
    assert core <= set(methods)

    rows = _rows(out, "| method | N=8 s | N=24 s | RSS MB @24 | cpu @24 |")
    assert set(rows) == set(methods)
    for name, cells in rows.items():
        secs, rss, cpu, check, counts = cells[:2], cells[2], cells[3], cells[4], cells[5]
        assert all(float(s) >= 0 for s in secs), (name, cells)
        assert 10 < float(rss) < 4096 and float(cpu) >= 0, (name, cells)
        if name in bench.APPROXIMATE:
            assert re.fullmatch(r"≈ off by <= \d+ frames", check), (name, check)
        else:  # every exact method returned the asked frames (barcodes read back)
            assert check == "0 wrong of 32", (name, check)
        if name in ("lvu exact", "exact floor"):  # frames decoded / the request's minimum, per N
            pairs = [tuple(map(int, c.split(" / "))) for c in counts.split(", ")]
            assert len(pairs) == 2 and all(m > 0 for _, m in pairs), counts
            if name == "exact floor":
                assert all(d == m for d, m in pairs), counts
            else:  # at most the last segment's reorder lookahead on top (a single decoder's)
                assert all(m <= d <= m * bench.FLOOR_TARGET for d, m in pairs), counts
        else:
            assert counts == "—", (name, counts)

    ratios = _rows(out, "| ratio | value | verdict |")
    labels = " ".join(ratios)
    for what in ("lmms-eval sequential / lvu exact @N=24", "lvu exact / exact floor time @N=24",
                 "lvu exact decoded frames / minimum @N=24",
                 "lvu exact (cold) / cache hit @N=8", "lvu exact peak RSS @N=24"):
        assert what in labels
    for value, verdict in ratios.values():
        if "not measured" not in verdict:
            assert re.fullmatch(r"[\d.]+(x| MB| cores)", value) and re.match(r"(met|MISSED|for reference) \(target", verdict)
    assert (tmp_path / BenchVideo(bench.QUICK_SECONDS, 250, bench.QUICK_SIZE).name).is_file()  # cached


def test_barcode_survives_encoding_and_counts_past_16_bits(tmp_path):
    import av

    path = encode(BenchVideo(2, 25, (192, 96)), tmp_path / "v.mp4")
    with av.open(str(path)) as c:
        codes = [read_code(f.to_ndarray(format="rgb24")) for f in c.decode(video=0)]
    assert codes == list(range(60))
    from lvu.media.benchvideo import draw_code

    luma = np.zeros((96, 192), np.uint8)
    draw_code(luma, 107_999)  # a 60-min video's last frame needs 17 bits
    assert read_code(np.repeat(luma[..., None], 3, axis=2)) == 107_999


def test_uniform_indices_follow_lmms_eval():
    assert bench.uniform_indices(108_000, 8) == np.linspace(0, 107_999, 8, dtype=int).tolist()
    assert bench.uniform_indices(5, 8) == [0, 1, 2, 3, 4]
