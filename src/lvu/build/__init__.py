"""Construction: the half of lvu that makes benchmarks (nothing lives here yet).

What lands here (design: /work/shared/DESIGN.md, "The build half"; layers: docs/architecture.md):

- the pipeline mechanism: a stage is one small registered class (its inputs, its outputs, the model
  it calls through lvu's backends, its prompt constant); each stage output is committed as it
  completes to a build store (SQLite, like the run store) with its prompt, model identity, raw
  reply and parsed result, keyed by prompt and model, so a change recomputes that stage and its
  successors only and kill -9 loses nothing;
- stages: shot and ASR signals, frame captions, dense segment captions, question + answer
  generation, decoys (Neptune's pipeline);
- filters: the blind filter (drop questions a model answers without the video, run as an ordinary
  probe run through lvu.runs) and the other quality filters;
- needles: inserting needles into videos for needle-in-a-haystack benchmarks (the construction
  behind benchmarks/haystack.py, generalised).

A build's output is an ordinary benchmark (JSONL or an official schema), read back by
lvu.benchmarks like any other. This package sits above lvu.runs (a filter is a run) and below
lvu.analysis, lvu.web (the rater review UI) and the commands; nothing below it imports it.
"""
