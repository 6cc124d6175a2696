"""`lvu data stats` (issue 19): the papers' data tables from the fixture releases every benchmark's
tests build (tests/test_bench_*.py), from lvu JSONL and from the CLI, with the paper's values
beside when asked or when the release is the paper's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lvu.analysis.data_stats import data_stats
from lvu.cli import app
from lvu.errors import LvuError
from lvu.media.testing import make_video
from lvu.runs.grading import make_benchmark


def table(stats, title: str):
    found = [t for t in stats.tables if t.title.startswith(title)]
    assert found, [t.title for t in stats.tables]
    return found[0]


def rows(t) -> dict:
    return {r[0]: r[1:] for r in t.rows}


# ---- fixture releases (the data of the benchmarks' own tests) ---------------------------------------


def videomme_release(root: Path) -> Path:
    from test_bench_videomme import LONG, SHORT, release

    videos = root / "videos"
    videos.mkdir(parents=True)
    make_video(videos / f"{SHORT}.mp4", seconds=3, fps=10, gop=10, size=(64, 48))
    make_video(videos / f"{LONG}.mp4", seconds=5, fps=10, gop=10, size=(64, 48))
    return release(root / "vmme", videos)


def lvbench_release(root: Path) -> Path:
    from test_bench_lvbench import Q55, qa, video_line

    lines = [video_line("Cm73ma6Ibcs", "cartoon", [qa("55", Q55, "D", ["key information retrieval"]),
                                                    qa("56", "Who?\n(A) a\n(B) b\n(C) c\n(D) d", "A",
                                                       ["entity recognition", "reasoning"])]),
             video_line("sportKEY01", "sport", [qa("57", "Score?\n(A) 1\n(B) 2\n(C) 3\n(D) 4", "B",
                                                   ["temporal grounding", "key information retrieval"])],
                        minutes=95.0),
             video_line("goneVIDEO1", "tv", [qa("58", "Where?\n(A) a\n(B) b\n(C) c\n(D) d", "C", ["summarization"])])]
    (root / "data").mkdir(parents=True)
    (root / "data" / "video_info.meta.jsonl").write_text("\n".join(lines) + "\n")
    return root


def neptune_release(root: Path) -> Path:
    from test_bench_neptune import VID_A, VID_B, release

    videos = root / "videos_src"
    videos.mkdir(parents=True)
    make_video(videos / f"{VID_A}.mp4", seconds=4, fps=10, gop=10, size=(64, 48))
    make_video(videos / f"{VID_B}.mp4", seconds=3, fps=10, gop=10, size=(64, 48))
    return release(root / "nep", videos)


# ---- the tables ---------------------------------------------------------------------------------------


def test_videomme_tables_follow_table_2_and_hide_the_paper_for_a_partial_release(tmp_path):
    bench = make_benchmark("videomme", {"data": str(videomme_release(tmp_path))})
    stats = data_stats(bench)
    assert any("paper values left out: this release has 9 questions, the paper's 2,700" in n for n in stats.notes)
    assert rows(table(stats, "Overview"))["videos"] == [3] and rows(table(stats, "Overview"))["questions"] == [9]
    assert rows(table(stats, "Questions per duration")) == {"short": [3, 100 / 3, 1], "medium": [3, 100 / 3, 1],
                                                           "long": [3, 100 / 3, 1]}
    words = rows(table(stats, "Words per question"))
    # "What happens in clip 001-1?" 5 words; options "A cat." "Two dogs." "Three birds." "Nothing." = 7;
    # the short video's subtitles "hello there" + "second line" = 4 words
    assert words["short"][:6] == [3, "5.0", "7.0", words["short"][3], words["short"][4], "4.0"]
    assert words["all"][5] == "4.0"  # only one video has a subtitle file
    letters = rows(table(stats, "Answer letters"))
    assert {k: v[0] for k, v in letters.items()} == {"A": 3, "B": 2, "C": 2, "D": 2}
    lengths = rows(table(stats, "Video length by duration"))
    assert lengths["short"][:2] == [1, "3.0"] and lengths["long"][:2] == [1, "5.0"]  # probed: no release lengths
    avail = rows(table(stats, "Subtitles and audio"))
    assert avail["videos with a subtitle file"] == ["1 of 3"]
    assert avail["videos with an audio track"][0] == "0 of 2 read"  # generated videos are silent; one is missing

    shown = data_stats(bench, paper=True)
    words = rows(table(shown, "Words per question"))
    assert words["short"][1] == "5.0 (paper 11.5)" and words["all"][5] == "4.0 (paper 3086.5)"
    assert rows(table(shown, "Answer letters"))["B"][-1] == 27.2
    assert rows(table(shown, "Subtitles and audio"))["videos with an audio track"][-1] == 869
    assert rows(table(shown, "Questions per duration"))["long"][-1] == 900


@pytest.mark.slow
def test_lvbench_capability_proportions_and_combinations(tmp_path):
    stats = data_stats(make_benchmark("lvbench", {"data": str(lvbench_release(tmp_path))}), paper=True)
    caps = table(stats, "Questions per question_type")
    assert "multi-label" in caps.title and "sum to more than 100" in caps.notes[0]
    assert rows(caps)["KIR"][:2] == [2, 50.0]  # 2 of the 4 questions involve key information retrieval
    combos = table(stats, "question_type combinations")
    assert rows(combos) == {"KIR": [1, 25.0], "ER + Rea": [1, 25.0], "KIR + TG": [1, 25.0], "Sum": [1, 25.0]}
    assert combos.notes == ["4 distinct combinations (paper: 26)"]
    buckets = rows(table(stats, "Video length"))
    assert buckets["60-90 min"][0] == 2 and buckets["90-120 min"][0] == 1  # video_info's minutes, no file read


def test_neptune_question_types_and_qad_lengths_beside_the_paper(tmp_path):
    root = neptune_release(tmp_path)
    stats = data_stats(make_benchmark("neptune", {"data": str(root)}), paper=True)
    types = rows(table(stats, "Questions per question_type"))
    assert types["Counting"][:2] == [3, 50.0] and types["Counting"][-1] == 121  # the paper's Fig. 3 count
    assert types["Goal Reasoning"][0] == 0  # types the paper has and this release does not are listed
    words = rows(table(stats, "Words per question"))["all"]
    # "How many cats are visible in vidAAAAAAA1/1?" = 7 words; answers and decoys are one word
    assert words[1:3] == ["7.0 (paper 16.3)", "5.0"] and words[3:5] == ["1.0 (paper 29.5)", "1.0 (paper 29.0)"]
    assert rows(table(stats, "Video length"))["< 30 s"] == [2, 100.0, 2.9]
    mmh = data_stats(make_benchmark("neptune", {"data": str(root), "subset": "mmh"}), paper=True)
    assert rows(table(mmh, "Overview"))["questions"] == [2, 1171]  # the subset's own paper numbers


def test_jsonl_and_build_outputs_get_their_tables_without_a_paper(tmp_path, tmp_video):
    video = tmp_video(seconds=2.0).path
    lines = [{"id": f"q{i}", "video": str(video), "question": "Which colour is shown?", "options": ["red", "green"],
              "answer": i % 2, "labels": {"needle": ["colour", "shape"][i % 2]}} for i in range(4)]
    lines.append({"id": "open", "video": str(video), "question": "What is shown?", "answer": "a barcode"})
    data = tmp_path / "mine.jsonl"
    data.write_text("".join(json.dumps(x) + "\n" for x in lines))
    stats = data_stats(make_benchmark("jsonl", {"data": str(data)}))
    assert not any("paper" in n for n in stats.notes)
    assert rows(table(stats, "Overview"))["multiple-choice / open-ended"] == ["4 / 1"]
    assert rows(table(stats, "Answer letters")) == {"A": [2, 50.0], "B": [2, 50.0]}
    assert rows(table(stats, "Words per question"))["all"][3] == "1.2"  # answers: 4 x "red"/"green" + "a barcode"


@pytest.mark.slow
def test_cli_reads_a_jsonl_path_and_writes_plots(tmp_path, tmp_video):
    pytest.importorskip("matplotlib", reason="matplotlib not installed")
    video = tmp_video(seconds=2.0).path
    data = tmp_path / "benchmark.jsonl"  # what `lvu build` writes
    data.write_text(json.dumps({"id": "a", "video": str(video), "question": "Q?", "options": ["x", "y"],
                                "answer": 1, "labels": {"task": "t"}}) + "\n")
    result = CliRunner().invoke(app, ["data", "stats", str(data), "--plot", str(tmp_path / "plots")])
    assert result.exit_code == 0, result.output
    assert "jsonl: data statistics" in result.output and "Answer letters" in result.output
    assert (tmp_path / "plots" / "jsonl-letters.png").stat().st_size > 1000
    bad = CliRunner().invoke(app, ["data", "stats", "nosuchbench"])  # `lvu` (cli.main) prints it in one line, exit 2
    assert isinstance(bad.exception, LvuError) and "unknown benchmark 'nosuchbench'" in str(bad.exception)


@pytest.mark.slow
def test_mlvu_tasks_and_longvideobench_groups_in_the_papers_order(tmp_path, tmp_video):
    import test_bench_longvideobench as lvb
    import test_bench_mlvu as mlvu

    video = tmp_video(seconds=3, fps=10, gop=10, size=(64, 48)).path
    stats = data_stats(make_benchmark("mlvu", {"data": str(mlvu.write_release(tmp_path / "mlvu", video, mlvu.DEV))}),
                       paper=True)
    tasks = rows(table(stats, "Questions per task"))
    assert list(tasks)[:3] == ["TR", "AR", "VS"] and tasks["PQA"] == [2, 20.0, 2, 539]
    assert rows(table(stats, "Overview"))["multiple-choice / open-ended"] == ["8 / 2", None]
    root = tmp_path / "lvb"
    (root / "videos").mkdir(parents=True)
    make_video(root / "videos" / "vidA.mp4", seconds=20, fps=10, gop=20, size=(64, 48))
    (root / "lvb_val.json").write_text(json.dumps(lvb.VAL))
    stats = data_stats(make_benchmark("longvideobench", {"data": str(root)}), paper=True)
    assert list(rows(table(stats, "Questions per duration_group"))) == ["(8,15]", "(15,60]"]  # the paper's order
    assert rows(table(stats, "Questions per question_category"))["SSS"] == [1, 100 / 3, 1, 398]
    assert rows(table(stats, "Overview"))["questions"] == [3, 1337]  # the val split's paper count
