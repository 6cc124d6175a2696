"""How a run is named to people: which model answered, on which data, and what its headline says
when there is no score to give.

One definition for every place that shows a run — `lvu results list/show/export`, the viewer, the
report, `lvu compare` — so two runs of different served models never look identical anywhere, and
a filter such as `lvu results list --model fake-smart` matches the same text the list shows.

Imports stay light (types only): the CLI and the viewer import this module.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from lvu.types import RunSpec, SampleResult

PROBES = ("blind", "blind-asr", "single-frame")
"""Wrappers that run another model (`base`, `base.model`, `base_args`): named after what they wrap."""


def _nested_model(args: dict[str, Any]) -> str:
    """The wrapped model's own id inside a probe's args: `base.model`, or `model` in `base_args`."""
    if args.get("base.model"):
        return str(args["base.model"])
    nested = args.get("base_args")
    if isinstance(nested, str):
        try:
            nested = json.loads(nested)
        except json.JSONDecodeError:
            nested = None
    return str(nested.get("model") or "") if isinstance(nested, dict) else ""


def model_identity(spec: RunSpec) -> str:
    """The model as people tell runs apart: the backend and the model it served, e.g.
    'openai(fake-smart)', 'hf(Qwen/Qwen2-VL-7B-Instruct)', 'gemini(gemini-1.5-pro)', a plugin's
    'mypkg.models:MyModel', 'random'; a probe names what it wraps: 'blind(openai(gpt-4o))'."""
    args = spec.model_args
    if spec.model in PROBES and args.get("base"):
        inner = _nested_model(args)
        base = f"{args['base']}({inner})" if inner else str(args["base"])
        return f"{spec.model}({base})"
    served = args.get("model")
    return f"{spec.model}({served})" if served not in (None, "") else spec.model


def data_name(spec: RunSpec) -> str:
    """The benchmark and, for a run on a data file or folder (`--data`, `--root`), that file's
    name: 'jsonl(q.jsonl)', 'videomme(videomme-release)'; else just the benchmark, 'videomme'."""
    where = spec.settings.get("data") or spec.settings.get("root")
    if where in (None, ""):
        return spec.benchmark
    return f"{spec.benchmark}({Path(str(where)).name or where})"


def matches_model(spec: RunSpec, wanted: str) -> bool:
    """`--model X` filters: X is the backend ('openai'), the served model ('fake-smart') or the
    whole identity ('openai(fake-smart)'), compared exactly."""
    ident = model_identity(spec)
    served = spec.model_args.get("model")
    return wanted in (spec.model, ident) or (served is not None and wanted == str(served))


def matches_benchmark(spec: RunSpec, wanted: str) -> bool:
    """`--benchmark X` filters: X is the benchmark ('jsonl'), the data file's name ('q.jsonl'),
    the shown name ('jsonl(q.jsonl)') or the data path as given or resolved."""
    where = spec.settings.get("data") or spec.settings.get("root")
    names = {spec.benchmark, data_name(spec)}
    if where not in (None, ""):
        names |= {Path(str(where)).name, str(where)}
    return wanted in names or (where not in (None, "") and _same_path(wanted, str(where)))


def _same_path(a: str, b: str) -> bool:
    try:
        return Path(a).expanduser().resolve() == Path(b).expanduser().resolve()
    except (OSError, RuntimeError):
        return False


# ---- headlines with nothing to score ----------------------------------------------------------------


def no_answers(n_ok: int, n_failed: int) -> str | None:
    """'no answers (8 of 8 failed)' for a run where every stored sample failed, else None: such a
    run has no score (its 0.0 % would read as a model that answered everything wrong)."""
    if n_ok == 0 and n_failed > 0:
        return f"no answers ({n_failed} of {n_failed} failed)"
    return None


RANDOM_PICK = "(no letter in the reply, seed"
"""How LongVideoBench's explanation marks its official fallback: a reply without a letter gets a
seeded random letter (lvu.benchmarks.longvideobench), so its prediction is a valid option."""

UNREADABLE_FIELDS = ("error", "response", "prediction", "n_options", "options", "explanation")
"""The record fields `is_unreadable` reads (for readers that take only some fields out of the store)."""


def is_unreadable(r: SampleResult) -> bool:
    """A reply that came back (no error) but from which no option could be read: a multiple-choice
    sample whose prediction is not an option index — None (haystack, jsonl, Video-MME, Neptune),
    the text the official rule kept (MLVU's and LVBench's "1" from "(1)") or a letter beyond the
    options — or LongVideoBench's random pick for a reply without a letter (`RANDOM_PICK`). The
    same replies `--llm-extract` hands to the judge (lvu.benchmarks.base.needs_choice_fallback).
    Open-ended samples (no options) are never unreadable here: their text is the answer."""
    n_options = r.n_options or len(r.options)
    if not n_options or r.error is not None or r.response is None:
        return False
    value = r.prediction
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < n_options:
        return True
    return RANDOM_PICK in (r.explanation or "")


def unreadable(results: Iterable[SampleResult]) -> list[SampleResult]:
    """The results whose reply held no readable answer (`is_unreadable`), in order."""
    return [r for r in results if is_unreadable(r)]


UNREADABLE_CAUSES = ("a chat template that does not fit the model (its reply continues the prompt)",
                     "a text-only model that ignores the frames",
                     "a max_tokens too small for the answer (raise it with -a max_tokens=...)")
"""The likely causes printed with an unreadable-replies warning."""


def unreadable_note(results: list[SampleResult], *, examples: int = 2, scored: int | None = None) -> str | None:
    """A few lines saying how many replies held no readable answer, `examples` of them and the
    likely causes; None when there are none. `scored`: how many replies came back without an
    error, when `results` holds only some of the run's records (e.g. only the unreadable ones)."""
    bad = unreadable(results)
    if not bad:
        return None
    if scored is None:
        scored = sum(r.error is None for r in results)
    lines = [f"{len(bad)} of {scored} replies held no readable answer ({_how_scored(bad)}):"]
    for r in bad[:examples]:
        text = (r.response or "").strip()  # repr: a newline shows as \n, the example stays one line
        lines.append(f"  {r.sample_id}: {text[:120]!r}" + ("…" if len(text) > 120 else ""))
    lines.append("  likely causes: " + "; ".join(UNREADABLE_CAUSES))
    return "\n".join(lines)


def _how_scored(bad: list[SampleResult]) -> str:
    """'scored wrong', or what the benchmark's protocol made of them: Video-MME leaves them out
    of its answered-only accuracy, LongVideoBench's random pick is sometimes right."""
    lucky = sum(1 for r in bad if r.counted and r.correct)
    left_out = sum(1 for r in bad if not r.counted)
    wrong = len(bad) - lucky - left_out
    if wrong == len(bad):
        return "scored wrong"
    parts = [f"{wrong} scored wrong" if wrong else "",
             f"{lucky} scored right by a random pick" if lucky else "",
             f"{left_out} left out of the score" if left_out else ""]
    return ", ".join(p for p in parts if p)
