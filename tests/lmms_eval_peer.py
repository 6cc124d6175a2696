"""lmms-eval's own task code, loaded for the peer-parity tests (tests/test_peer_lmms_eval.py).

lmms-eval is installed by the README's test command as `pip install --no-deps lmms-eval==0.7.3`:
with its dependencies it would replace this environment's torch (2.14), pull torchvision,
transformers 5, datasets and more. So nothing of lmms-eval's package import runs here:
`lmms_eval`, `lmms_eval.tasks` and `lmms_eval.tasks._task_utils` are stand-in packages whose
`__path__` is the installed folders, and a task's `utils.py` plus the real `_task_utils/*.py` and
`api/reasoning.py` load from the wheel's files, unchanged. The only code here that is not
lmms-eval's (each a stub or a one-line port, named where it is made):
- `loguru.logger`: records info() calls (the aggregations print their breakdowns through it);
- `datasets`: a module with a `Dataset` name (videomme/utils.py only uses it in an annotation);
- `lmms_eval.utils.resolve_cache_dir`: copied from lmms_eval/utils.py (which imports transformers);
- `mean`: lmms_eval/api/metrics.py's `sum(arr) / len(arr)` (that module imports sacrebleu);
- `evaluate`: the smallest port of lmms_eval/evaluator.py's scoring loop: strip reasoning tags with
  the CLI's default --reasoning_tags, `process_results(doc, [reply])` per doc, then each YAML
  metric's aggregation over its values, and the --log_samples line evaluation_tracker writes.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

VERSION = "0.7.3"
REASONING_TAGS = '[["<think>", "</think>"], ["<analysis>", "</analysis>"]]'
"""lmms_eval/__main__.py's default --reasoning_tags (0.7.3)."""


def package_dir() -> Path:
    """The installed lmms_eval folder (found without importing it); skip, or fail under CI."""
    spec = importlib.util.find_spec("lmms_eval")
    version = importlib.metadata.version("lmms-eval") if spec else None
    if spec is None or version != VERSION:
        why = (f"lmms-eval {VERSION} is not installed (found {version}) — "
               f"pip install --no-deps lmms-eval=={VERSION}, as the README's test command does")
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    return Path(next(iter(spec.submodule_search_locations)))


class Logger:
    """Stand-in for loguru's logger: keeps what the task code logs, in order."""

    def __init__(self) -> None:
        self.lines: list[Any] = []

    def info(self, message: Any, *args: Any, **kwargs: Any) -> None:
        self.lines.append(message)

    debug = warning = error = info


def _load(name: str, path: Path) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class Function(str):
    """A YAML `!function utils.name` value."""


def _yaml(path: Path) -> dict:
    """A task YAML as lmms-eval reads it (`!function` values kept as Function, `include` merged)."""
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: Function(loader.construct_scalar(node)))
    config = yaml.load(path.read_text(encoding="utf-8"), Loader=Loader)
    if "include" in config:
        config = {**_yaml(path.parent / config.pop("include")), **config}
    return config


@dataclass
class Task:
    """One lmms-eval task: its YAML config and its utils.py module."""

    config: dict
    utils: types.ModuleType

    def fn(self, key: str):
        """The utils.py function a YAML key names (`!function utils.f`)."""
        return getattr(self.utils, str(self.config[key]).split(".", 1)[1])

    @property
    def kwargs(self) -> dict:
        """lmms_eval_specific_kwargs' `default` block (a fresh copy: doc_to_text may write into it)."""
        return dict(self.config.get("lmms_eval_specific_kwargs", {}).get("default", {}))

    def doc_to_text(self, doc: dict) -> str:
        return self.fn("doc_to_text")(doc, self.kwargs)

    def doc_to_target(self, doc: dict) -> Any:
        target = self.config["doc_to_target"]
        return self.fn("doc_to_target")(doc) if isinstance(target, Function) else doc[target]


@dataclass
class Evaluated:
    values: dict[str, Any]
    """Metric name -> the value its aggregation returned."""
    logged: list[Any]
    """What the aggregations logged (their printed breakdowns), in order."""
    log_lines: list[dict] = field(default_factory=list)
    """The --log_samples lines (`<date>_samples_<task>.jsonl`) as evaluation_tracker writes them."""


class Peer:
    """Loads lmms-eval tasks with the stand-ins above, installed through pytest's monkeypatch
    (sys.modules and HF_HOME are restored after the test)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, hf_home: Path) -> None:
        self.root = package_dir()
        self.monkeypatch = monkeypatch
        monkeypatch.setenv("HF_HOME", str(hf_home))  # task modules resolve their cache dirs at import
        self.logger = Logger()
        stubs = {"loguru": types.ModuleType("loguru"), "datasets": types.ModuleType("datasets"),
                 "lmms_eval.utils": types.ModuleType("lmms_eval.utils")}
        stubs["loguru"].logger = self.logger
        stubs["datasets"].Dataset = type("Dataset", (), {})
        stubs["lmms_eval.utils"].resolve_cache_dir = resolve_cache_dir
        for name, folder in (("lmms_eval", self.root), ("lmms_eval.tasks", self.root / "tasks"),
                             ("lmms_eval.tasks._task_utils", self.root / "tasks" / "_task_utils"),
                             ("lmms_eval.api", self.root / "api")):
            package = types.ModuleType(name)
            package.__path__ = [str(folder)]
            stubs[name] = package
        stubs["lmms_eval"].utils = stubs["lmms_eval.utils"]
        for name, module in stubs.items():
            monkeypatch.setitem(sys.modules, name, module)
        self.mcq_extract = self.module("tasks/_task_utils/mcq_extract.py")
        self.module("tasks/_task_utils/file_utils.py")
        self.reasoning = self.module("api/reasoning.py")

    def module(self, relative: str) -> types.ModuleType:
        """A file of the wheel, loaded under its own dotted name (removed again after the test)."""
        name = "lmms_eval." + relative.removesuffix(".py").replace("/", ".")
        self.monkeypatch.setitem(sys.modules, name, None)
        return _load(name, self.root / relative)

    def task(self, folder: str, yaml_name: str) -> Task:
        return Task(config=_yaml(self.root / "tasks" / folder / yaml_name),
                    utils=self.module(f"tasks/{folder}/utils.py"))

    def strip_reasoning(self, reply: str) -> str:
        tags = self.reasoning.parse_reasoning_tags_config(cli_value=REASONING_TAGS)
        return self.reasoning.strip_reasoning_tags(reply, tags)

    def evaluate(self, task: Task, docs: list[dict], replies: list[str], before_each=None) -> Evaluated:
        """lmms-eval's scoring of `replies` (one per doc): process_results on the reasoning-stripped
        reply, then every metric's aggregation; `before_each(doc)` runs before each doc's scoring."""
        start = len(self.logger.lines)
        values: dict[str, list[Any]] = {}
        lines = []
        for doc_id, (doc, reply) in enumerate(zip(docs, replies, strict=True)):
            if before_each:
                before_each(doc)
            filtered = self.strip_reasoning(reply)
            metrics = task.fn("process_results")(doc, [filtered])
            for name, value in metrics.items():
                values.setdefault(name, []).append(value)
            line = {"doc_id": doc_id, "target": str(task.doc_to_target(doc)), "filtered_resps": filtered,
                    "input": task.doc_to_text(doc)}
            if filtered != reply:
                line["resps"] = reply
            lines.append({**line, **metrics})
        out = {}
        for metric in task.config["metric_list"]:
            name, how = metric["metric"], metric.get("aggregation", "mean")
            aggregate = mean if how == "mean" else getattr(task.utils, str(how).split(".", 1)[1])
            out[name] = aggregate(values[name])
        return Evaluated(values=out, logged=self.logger.lines[start:], log_lines=lines)


def resolve_cache_dir(cache_dir: str, base_dir: str | None = None) -> str:
    """lmms_eval/utils.py::resolve_cache_dir, copied (that module imports transformers, torch, ...)."""
    resolved = os.path.expanduser(os.path.expandvars(cache_dir))
    if base_dir is not None and not os.path.isabs(resolved):
        return os.path.join(base_dir, resolved)
    return resolved


def mean(arr):
    """lmms_eval/api/metrics.py::mean, copied (that module imports sacrebleu)."""
    return sum(arr) / len(arr)


def write_log(path: Path, lines: list[dict]) -> Path:
    """A `--log_samples` file: one JSON object per line, as evaluation_tracker dumps them."""
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    return path
