"""MLVU's published numbers as data (Zhou et al., 2024, arXiv 2406.04264 v1), for `lvu compare`.

Rows are {"table", "model", "setting", "split", "frames", "fps", <breakdown>: value}; breakdown keys
are the row names `Mlvu.aggregate` writes: TR, AR, NQA, ER, PQA, AO, AC (accuracy %), M-Avg (macro
mean of the MCQ tasks, %), VS, SSC (GPT-4 judge, 2-10) and G-Avg (mean of VS and SSC). `frames` /
`fps` give the paper's input setting ("N frm" = uniform N frames, "N fps" = frame-rate sampling).

Errata and caveats, kept as `note` on the rows they concern:
- Table 1 TimeChat prints M-Avg 30.9, but its seven MCQ accuracies average 26.5 (the repo
  leaderboard repeats 30.9). Every other row's M-Avg is the macro mean within rounding (GPT-4 Turbo
  49.14 → printed 49.2); the question-weighted mean (paper task counts) matches 2 rows of 20.
- Table 1's "Full mark" row is garbled (SSC 100, AO 10); read SSC 10 and AO 100.
- Table 6 (per-task leaderboards) re-sorts Table 1; its G-Avg panel is misaligned (GPT-4 Turbo 4.22
  is LLaMA-VID's value) — Table 1 is the source of truth and Table 6 is not repeated here.
- Time-ladder (Tables 7-9) M-Avg is the mean of five MCQ tasks (NQA, ER, PQA, AO, AC); 180 s
  Movie-LLM prints 34.4 (computed 24.4) and Video-ChatGPT 34.5 (computed 36.3). Those tables are a
  derived dataset (videos cut to 180/360/600 s), not the dev set: `split` says so.
"""

from __future__ import annotations

from typing import Any

_T1 = ("TR", "AR", "VS", "NQA", "ER", "PQA", "SSC", "AO", "AC", "M-Avg", "G-Avg")
_TIMECHAT = "printed M-Avg 30.9; the mean of its seven MCQ accuracies is 26.5 (paper erratum)"

# Table 1: main results on MLVU (dev). model, group, input, frames, fps, TR … G-Avg
_TABLE1 = [
    ("Otter-I", "Image MLLM", "16 frm", 16, None, 25.0, 25.0, 2.18, 25.1, 25.0, 24.9, 4.12, 13.1, 25.2, 23.3, 3.15),
    ("LLaVA-1.6", "Image MLLM", "16 frm", 16, None, 60.6, 41.0, 2.11, 43.1, 38.4, 41.0, 4.35, 25.5, 25.7, 39.3, 3.23),
    ("InternVL-1.5", "Image MLLM", "16 frm", 16, None, 78.8, 67.0, 3.16, 52.7, 43.5, 54.4, 4.88, 32.8, 23.8, 50.4, 4.02),
    ("Claude-3-Opus", "Image MLLM", "16 frm", 16, None, 67.2, 43.5, 3.11, 21.6, 40.2, 47.8, 3.66, 18.2, 16.7, 36.5, 3.39),
    ("Qwen-VL-Max", "Image MLLM", "16 frm", 16, None, 67.4, 63.5, 2.71, 40.3, 40.9, 43.3, 5.21, 25.0, 14.8, 42.2, 3.96),
    ("GPT-4 Turbo", "Image MLLM", "16 frm", 16, None, 79.5, 68.0, 4.49, 45.9, 47.4, 60.6, 6.21, 26.5, 16.1, 49.2, 5.35),
    ("Otter-V", "Short Video MLLM", "16 frm", 16, None, 24.6, 26.0, 2.38, 28.2, 27.6, 22.3, 4.23, 15.1, 26.7, 24.4, 3.31),
    ("mPLUG-Owl-V", "Short Video MLLM", "16 frm", 16, None, 28.0, 25.0, 2.36, 24.5, 31.8, 27.3, 5.31, 21.2, 23.3, 25.9, 3.84),
    ("VideoChat", "Short Video MLLM", "16 frm", 16, None, 33.0, 32.0, 2.31, 27.0, 32.1, 27.6, 5.01, 24.3, 28.6, 29.2, 3.66),
    ("Video-ChatGPT", "Short Video MLLM", "100 frm", 100, None, 26.9, 24.0, 2.31, 40.3, 42.0, 29.9, 5.48, 25.1, 31.1, 31.3, 3.90),
    ("Video-LLaMA-2", "Short Video MLLM", "16 frm", 16, None, 54.5, 41.5, 2.34, 39.4, 33.5, 35.4, 5.22, 18.5, 25.7, 35.5, 3.78),
    ("VideoChat2", "Short Video MLLM", "16 frm", 16, None, 74.6, 51.5, 2.57, 42.0, 47.4, 43.8, 5.04, 22.8, 29.6, 44.5, 3.81),
    ("Video-LLaVA", "Short Video MLLM", "8 frm", 8, None, 71.6, 57.0, 2.43, 53.2, 45.2, 48.4, 5.25, 20.1, 35.9, 47.3, 3.84),
    ("MovieChat", "Long Video MLLM", "2048 frm", 2048, None, 29.5, 25.0, 2.33, 24.2, 24.7, 25.8, 3.23, 28.6, 22.8, 25.8, 2.78),
    ("Movie-LLM", "Long Video MLLM", "1 fps", None, 1.0, 30.0, 29.0, 2.88, 29.6, 24.7, 24.1, 5.00, 20.5, 24.8, 26.1, 3.94),
    ("TimeChat", "Long Video MLLM", "96 frm", 96, None, 23.1, 27.0, 2.54, 24.5, 28.4, 25.8, 4.29, 24.7, 32.0, 30.9, 3.42),
    ("LLaMA-VID", "Long Video MLLM", "1 fps", None, 1.0, 50.8, 34.5, 3.22, 30.1, 32.7, 32.5, 5.22, 23.9, 27.8, 33.2, 4.22),
    ("MA-LMM", "Long Video MLLM", "1000 frm", 1000, None, 51.9, 35.5, 2.12, 43.1, 38.9, 35.8, 4.80, 25.1, 24.3, 36.4, 3.46),
    ("MiniGPT4-Video", "Long Video MLLM", "90 frm", 90, None, 70.9, 52.5, 2.64, 49.0, 48.6, 44.5, 4.07, 23.2, 23.0, 44.5, 3.36),
    ("GPT-4o", "Long Video MLLM", "0.5 fps", None, 0.5, 87.4, 74.5, 4.90, 64.8, 57.1, 65.1, 6.69, 56.7, 46.3, 64.6, 5.80),
]

# Table 2: M-Avg under changed context length / image understanding / LLM backbone.
_TABLE2 = [
    ("MiniGPT4-Video", "context length: 16 frames", 16, 41.1),
    ("MiniGPT4-Video", "context length: 90 frames", 90, 44.5),
    ("GPT-4o", "context length: 16 frames", 16, 54.2),
    ("GPT-4o", "context length: 256 frames", 256, 64.6),
    ("Otter", "image understanding: MMMU val 32.2", None, 24.4),
    ("LLaVA", "image understanding: MMMU val 35.8", None, 39.3),
    ("GPT-4 Turbo", "image understanding: MMMU val 58.1", None, 49.2),
    ("GPT-4o", "image understanding: MMMU val 63.8", None, 54.2),
    ("Video-LLaMA-2", "LLM backbone: Vicuna-7B", None, 24.3),
    ("Video-LLaMA-2", "LLM backbone: Vicuna-13B", None, 35.5),
    ("MiniGPT4-Video", "LLM backbone: LLaMA-7B", None, 33.7),
    ("MiniGPT4-Video", "LLM backbone: Mistral-7B", None, 44.5),
]

# Tables 7-9: MLVU Time-ladder. model, NQA, ER, PQA, AO, AC, SSC, VS (None at 600 s), M-Avg
_LADDER_MODELS = ("Otter-I", "LLaVA-1.6", "InternVL-1.5", "Claude-3-Opus", "Qwen-VL-Max", "Otter-V", "mPLUG-Owl-V",
                  "Video-LLaMA-2", "Video-ChatGPT", "VideoChat", "VideoChat2", "Video-LLaVA", "MiniGPT4-Video",
                  "LLaMA-VID", "Movie-LLM", "MA-LMM", "MovieChat", "TimeChat")
_LadderRow = tuple[float, float, float, float, float, float, float | None, float]
"""NQA, ER, PQA, AO, AC, SSC, VS (None: not run at that length), M-Avg."""
_LADDER: dict[int, tuple[str, list[_LadderRow]]] = {
    180: ("Table 7", [
        (25.0, 25.0, 25.4, 25.0, 25.0, 4.04, 2.59, 25.1), (48.0, 43.0, 45.2, 29.5, 28.5, 4.48, 2.40, 38.8),
        (70.5, 47.5, 60.9, 19.5, 28.5, 5.42, 3.30, 45.3), (34.5, 42.5, 38.1, 15.5, 22.0, 4.12, 3.35, 30.5),
        (49.5, 42.2, 50.3, 27.7, 16.3, 5.58, 2.95, 37.2), (30.5, 32.0, 18.3, 21.0, 29.5, 4.32, 2.63, 26.3),
        (31.0, 29.5, 22.3, 29.0, 24.0, 5.35, 2.68, 27.2), (55.0, 35.0, 36.5, 22.5, 22.0, 5.76, 2.47, 34.3),
        (43.5, 41.0, 40.0, 29.0, 28.0, 5.51, 2.65, 34.5), (32.5, 31.5, 26.4, 24.5, 26.0, 5.39, 2.61, 28.2),
        (54.0, 53.5, 50.3, 30.0, 31.0, 5.11, 3.25, 43.8), (58.0, 47.5, 55.8, 29.5, 34.5, 5.38, 2.89, 45.0),
        (57.0, 44.5, 47.2, 27.5, 26.5, 4.38, 2.98, 40.5), (38.5, 36.5, 36.0, 22.5, 25.5, 5.31, 3.55, 31.8),
        (23.5, 22.5, 25.9, 25.0, 25.0, 5.13, 3.23, 34.4), (48.0, 43.0, 41.6, 27.5, 23.5, 4.55, 2.25, 36.7),
        (32.5, 29.5, 27.4, 21.0, 21.0, 3.60, 2.60, 26.3), (30.5, 30.5, 31.0, 27.5, 24.5, 4.29, 2.92, 28.8)]),
    360: ("Table 8", [
        (25.0, 25.0, 25.0, 11.5, 25.0, 4.17, 2.33, 22.4), (41.0, 38.5, 39.6, 22.0, 26.0, 4.14, 2.18, 33.4),
        (66.5, 48.5, 58.4, 34.0, 24.0, 5.23, 3.12, 46.2), (32.0, 44.7, 42.6, 30.2, 15.5, 3.75, 3.13, 33.0),
        (50.0, 43.4, 41.1, 24.4, 14.7, 5.49, 3.21, 34.7), (27.0, 30.5, 23.9, 13.0, 26.5, 4.34, 2.51, 24.2),
        (29.5, 34.5, 22.3, 23.5, 23.0, 5.58, 2.42, 26.6), (43.0, 36.0, 40.1, 23.0, 28.0, 5.62, 2.45, 34.0),
        (42.5, 35.0, 27.4, 23.5, 32.0, 5.22, 2.56, 32.1), (28.5, 27.5, 19.8, 25.5, 30.0, 5.32, 2.38, 26.3),
        (47.5, 44.5, 39.6, 27.0, 31.0, 4.97, 2.83, 37.9), (55.5, 47.5, 47.7, 22.0, 35.0, 5.25, 2.62, 41.5),
        (53.0, 43.5, 43.1, 31.0, 24.5, 4.11, 2.82, 39.0), (30.5, 39.0, 28.4, 19.5, 30.5, 5.39, 3.29, 29.6),
        (26.0, 22.5, 32.0, 22.5, 26.0, 5.16, 3.14, 25.8), (41.5, 37.0, 41.6, 27.0, 27.5, 4.52, 2.19, 34.9),
        (28.5, 25.5, 29.4, 25.0, 23.5, 3.25, 2.41, 26.4), (36.5, 30.0, 31.0, 26.5, 26.0, 4.37, 2.66, 30.0)]),
    600: ("Table 9", [
        (25.0, 25.0, 25.0, 12.5, 25.0, 4.02, None, 22.5), (37.5, 38.5, 43.9, 25.0, 28.5, 4.45, None, 34.6),
        (56.0, 46.0, 55.6, 33.0, 25.0, 5.17, None, 43.1), (27.0, 38.5, 39.8, 35.7, 15.0, 3.88, None, 31.2),
        (43.0, 44.8, 50.0, 17.3, 17.9, 5.45, None, 34.6), (27.5, 28.5, 22.4, 14.0, 26.0, 4.09, None, 23.7),
        (30.5, 36.0, 21.4, 20.0, 28.0, 5.29, None, 27.2), (39.0, 39.0, 29.6, 21.5, 25.5, 5.62, None, 30.9),
        (41.0, 40.5, 28.6, 24.5, 32.5, 5.37, None, 33.4), (25.5, 34.5, 26.0, 28.0, 30.0, 4.91, None, 28.8),
        (43.0, 49.0, 41.8, 24.5, 29.5, 5.05, None, 37.6), (54.0, 49.0, 52.0, 21.0, 29.5, 5.21, None, 41.1),
        (54.0, 39.0, 41.8, 25.0, 28.0, 4.13, None, 37.6), (32.0, 36.5, 34.2, 27.0, 27.0, 5.39, None, 31.3),
        (26.5, 32.5, 27.0, 21.5, 24.5, 5.25, None, 26.4), (44.5, 41.5, 35.7, 24.0, 28.0, 4.72, None, 34.7),
        (27.5, 32.5, 22.4, 24.0, 27.0, 3.48, None, 26.7), (28.0, 32.0, 23.5, 26.0, 24.5, 4.19, None, 26.8)]),
}
_LADDER_NOTES = {(180, "Movie-LLM"): "printed M-Avg 34.4; the mean of the five MCQ tasks is 24.4 (paper erratum)",
                 (180, "Video-ChatGPT"): "printed M-Avg 34.5; the mean of the five MCQ tasks is 36.3 (paper erratum)"}


def _rows() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for model, group, setting, frames, fps, *vals in _TABLE1:
        row = {"table": "Table 1", "model": model, "group": group, "setting": setting, "split": "dev",
               "frames": frames, "fps": fps, **dict(zip(_T1, vals))}
        if model == "TimeChat":
            row["note"] = _TIMECHAT
        rows.append(row)
    for model, setting, frames, m_avg in _TABLE2:
        rows.append({"table": "Table 2", "model": model, "setting": setting, "split": "dev", "frames": frames,
                     "fps": None, "M-Avg": m_avg})
    for seconds, (table, values) in _LADDER.items():
        for model, (nqa, er, pqa, ao, ac, ssc, vs, m_avg) in zip(_LADDER_MODELS, values):
            row = {"table": table, "model": model, "setting": f"time-ladder {seconds} s",
                   "split": f"time-ladder-{seconds}s", "frames": None, "fps": None, "NQA": nqa, "ER": er,
                   "PQA": pqa, "AO": ao, "AC": ac, "SSC": ssc, "M-Avg": m_avg}
            if vs is not None:
                row["VS"] = vs
            if (seconds, model) in _LADDER_NOTES:
                row["note"] = _LADDER_NOTES[(seconds, model)]
            rows.append(row)
    rows.append({"table": "repo README (test leaderboard)", "model": "GPT-4o", "setting": "0.5 fps", "split": "test",
                 "frames": None, "fps": 0.5, "M-Avg": 54.9, "SSC": 6.80, "VS": 4.94, "G-Avg": 5.87,
                 "note": "MLVU-Test numbers from the official repository, not from the paper"})
    return rows


REFERENCE: list[dict[str, Any]] = _rows()

DATA_STATS: dict[str, Any] = {
    "source": "MLVU (arXiv:2406.04264): Sec. 3, Table 1",
    "questions": 2593, "videos": 1334, "options": 4,
    "by_split": {"test": {"questions": 502, "videos": None, "label_counts": {}}},
    "mean_seconds": {"all": 720.0},  # "about 12 minutes"
    "length_buckets": [("< 3 min", 0, 180, None), ("3-10 min", 180, 600, None), ("10-30 min", 600, 1800, None),
                       ("30-60 min", 1800, 3600, None), ("1-2 h", 3600, 7200, None), ("> 2 h", 7200, None, None)],
    "label_counts": {"task": {"TR": 264, "AR": 200, "VS": 217, "NQA": 355, "ER": 352, "PQA": 539, "SSC": 201,
                              "AO": 259, "AC": 206}},
    "notes": ["NQA (355) and SSC (201) are not printed: 2,175 - the other MC counts and 418 - 217; the dev "
              "JSON files agree", "Fig. 1's duration histogram is lost from the text: lvu's buckets"],
}
"""The paper's data statistics (the dev set), for `lvu data stats mlvu` (lvu.analysis.data_stats)."""
