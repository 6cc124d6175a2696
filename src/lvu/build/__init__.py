"""Construction: the half of lvu that makes benchmarks.

What lands here (design: /work/shared/DESIGN.md, "The build half"; layers: docs/architecture.md):

- the pipeline mechanism (pipeline.py, runner.py): a stage is one small registered class (its
  inputs, its outputs, the model it calls through lvu's backends, its prompt constant); each unit
  of a stage is committed as it completes to the build store (the keyed ledger in the build
  folder) with its prompts, model, raw replies and parsed result, keyed by prompt, model and the
  content it reads, so a change recomputes that stage and its successors only and kill -9 loses
  nothing;
- Neptune's pipeline (neptune.py, neptune_signal_stages.py, neptune_export.py): selection,
  signals, frame captions, dense segment captions, questions + answers, decoys, the QAD filter,
  the release-schema and JSONL export (`lvu build neptune`);
- filters: the blind filter (drop questions a model answers without the video, run as an ordinary
  probe run through lvu.runs) and the other quality filters;
- needles: inserting needles into videos for needle-in-a-haystack benchmarks (the construction
  behind benchmarks/haystack.py, generalised).

A build's output is an ordinary benchmark (JSONL or an official schema), read back by
lvu.benchmarks like any other. This package sits above lvu.runs (a filter is a run) and below
lvu.analysis, lvu.web (the rater review UI) and the commands; nothing below it imports it.
"""
