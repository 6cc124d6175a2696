"""Construction: the half of lvu that makes benchmarks.

What lives here (design: DESIGN.md, "The build half"; layers: docs/architecture.md; guide: docs/build.md):

- the pipeline mechanism (pipeline.py, runner.py): a stage is one small registered class (its
  inputs, its outputs, the model it calls through lvu's backends, its prompt constant); each unit
  of a stage is committed as it completes to the build store (the keyed ledger in the build
  folder) with its prompts, model, raw replies and parsed result, keyed by prompt, model and the
  content it reads, so a change recomputes that stage and its successors only and kill -9 loses
  nothing;
- Neptune's pipeline (neptune.py, neptune_signal_stages.py, neptune_export.py): selection,
  signals, frame captions, dense segment captions, questions + answers, decoys, the QAD filter,
  the release-schema and JSONL export (`lvu build neptune`), and the MMA / MMH subsets
  (neptune_subsets.py, `lvu build subsets`); prompts verbatim in neptune_prompt_text.py, their
  fillers and reply parsers in neptune_prompts.py / neptune_parse.py; selection.py and signals.py
  hold the per-video filters and signals the stages call;
- blind filters (blind.py, filtering.py, filter_files.py, `lvu build filter`): drop the questions a
  model answers without the video (Neptune's QAD filter, LVBench's, Video-MME's), a resumable
  ledger job;
- needles (needles.py, needle_media.py, needle_questions.py, splice*.py, ladder.py, `lvu build
  needle` / `ladder`): clips, images or text spliced into your videos at chosen depths and lengths,
  copying the background's packets between splice points; MLVU's time ladder;
- review_labels.py: the fields `lvu review` (lvu.web) reads from built questions and writes back.

A build's output is an ordinary benchmark (JSONL or an official schema), read back by
lvu.benchmarks like any other. This package sits above lvu.runs (a filter is a run) and below
lvu.analysis, lvu.web (the rater review UI) and the commands; nothing below it imports it.
"""
