"""The build store and a build folder's other fixed parts (lvu.construct.runner runs builds on them):

- `BuildStore`: the keyed ledger (lvu.runs.ledger.JobLedger) in OUT — or elsewhere, for `lvu build
  filter`, which keeps its decisions in the results folder — plus OUT/build.json;
- build.json (`build_config`, `read_config`): the pipeline's class and options, each role's model
  (its key and identity), the items, so `lvu build status / show` need no model and no inputs;
- the build lock (`build_lock`): one builder per output folder;
- models by role (`load_models`) and the part of a model that enters unit keys (`model_key`).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from lvu.construct.pipeline import Item, Pipeline, pipeline_reference
from lvu.errors import LvuError
from lvu.runs.ledger import Entry, JobLedger, job_id

JOB_KIND = "build"
CONFIG_FILE = "build.json"


def model_key(model: Any) -> dict[str, Any]:
    """What a unit's key holds of its model: the name and the arguments that can change answers,
    as a run's spec does (lvu.runs.engine.resolve_spec) — more retries or another SDK version
    recompute nothing; another model, endpoint or temperature recomputes what it answered."""
    neutral = set(getattr(type(model), "run_neutral_args", ()))
    return {"model": model.name, "args": {k: v for k, v in model.args.items() if k not in neutral}}


class BuildStore:
    """The ledger in OUT (or in `store_dir`: `lvu build filter` keeps its decisions beside the runs,
    in the results folder) plus OUT/build.json."""

    def __init__(self, out: str | Path, store_dir: str | Path | None = None) -> None:
        self.out = Path(out)
        self.ledger = JobLedger(self.out if store_dir is None else store_dir)

    def close(self) -> None:
        self.ledger.close()

    def job(self, pipeline: str, stage: str, *, create: bool) -> str:
        spec = {"pipeline": pipeline, "stage": stage}
        return self.ledger.open_job(JOB_KIND, spec, "") if create else job_id(JOB_KIND, spec, "")

    def entries(self, job: str, keys: Sequence[str] | None = None) -> dict[str, Entry]:
        """The job's committed items (only those under `keys` when given: a store shared by many
        builds, like a results folder, is not read whole)."""
        if keys is None:
            return {e.key: e for e in self.ledger.entries(job)}
        return {e.key: e for e in self.ledger.entries_for(job, keys)}

    def write_config(self, config: dict[str, Any]) -> None:
        self.write_config_to(self.out, config)

    @staticmethod
    def write_config_to(out: str | Path, config: dict[str, Any]) -> None:
        """OUT/build.json, atomically; never over another pipeline's build (refuse_other_build)."""
        out = Path(out)
        refuse_other_build(out, config["pipeline"])
        out.mkdir(parents=True, exist_ok=True)
        path = out / CONFIG_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(config, indent=1, default=str) + "\n")
        os.replace(tmp, path)

    def read_config(self) -> dict[str, Any]:
        return read_config(self.out)


def refuse_other_build(out: str | Path, pipeline: str) -> None:
    """A one-line LvuError when OUT already holds another pipeline's build: building into it would
    overwrite that build's build.json and files. The same pipeline resumes (or redoes) its own."""
    path = Path(out) / CONFIG_FILE
    if not path.is_file():
        return
    try:
        other = json.loads(path.read_text()).get("pipeline")
    except (OSError, json.JSONDecodeError, AttributeError):
        other = "an unreadable"
    if other != pipeline:
        raise LvuError(f"{out} holds {'a ' + str(other) if other != 'an unreadable' else other} build ({CONFIG_FILE}) "
                       f"— build {pipeline} into another -o folder; nothing was changed")


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _registered_name(name: str) -> str:
    """The name a model class stores (a `module:Class` plugin may name itself), else `name`."""
    from lvu.models import load_all
    from lvu.models.base import MODELS

    try:
        load_all()
        return str(getattr(MODELS.get(name), "name", name))
    except Exception:  # noqa: BLE001  (an unknown model is named by the build itself, later)
        return name


def changes_from_record(out: str | Path, pipeline: Pipeline, items: Sequence[Item],
                        models: dict[str, str]) -> list[str]:
    """How this build differs from the one OUT/build.json records, a line each: options, the model
    named for each role, items no longer built or built from other input. Items added are not a
    change (a folder of videos grows); nor are model arguments (a restarted server's new port), nor
    an option the record lacks that is at its default (an lvu update added it)."""
    path = Path(out) / CONFIG_FILE
    if not path.is_file():
        return []
    old = read_config(out)
    changes = []
    before, now = old.get("options") or {}, _plain(pipeline.options)
    fields = pipeline.Options.model_fields
    for name in sorted(set(before) | set(now)):
        if name not in before and name in fields and now.get(name) == _plain(fields[name].get_default(call_default_factory=True)):
            continue  # an option added in a later lvu, at its default: the stages' keys redo what it changes
        if before.get(name) != now.get(name):
            changes.append(f"option {name}: {before.get(name)!r} -> {now.get(name)!r}")
    recorded = {role: (m.get("key") or {}).get("model") for role, m in (old.get("models") or {}).items()}
    for role in sorted(set(recorded) & set(models)):
        if recorded[role] != models[role] and recorded[role] != _registered_name(models[role]):
            changes.append(f"{role} model: {recorded[role]} -> {models[role]}")
    new_items = {i.id: _plain({"path": i.path, "data": i.data or {}}) for i in items}
    gone = [v["id"] for v in old.get("videos") or [] if v["id"] not in new_items]
    other = [v["id"] for v in old.get("videos") or []
             if v["id"] in new_items and new_items[v["id"]] != {"path": v["path"], "data": v.get("data") or {}}]
    for label, ids in (("no longer built", gone), ("built from other input", other)):
        if ids:
            changes.append(f"{len(ids)} item(s) {label}: {', '.join(ids[:3])}{' ...' if len(ids) > 3 else ''}")
    return changes


def check_rebuild(out: str | Path, pipeline: Pipeline, items: Sequence[Item], models: dict[str, str], *,
                  replace: bool, note: Any = None) -> None:
    """Resume is the default for the same build; a build of other inputs or settings into OUT is
    refused (its outputs would replace the recorded build's), unless `replace`, which says what changes."""
    changes = changes_from_record(out, pipeline, items, models)
    if not changes:
        return
    if not replace:
        raise LvuError(f"{out} holds a {pipeline.name} build of other inputs or settings ({'; '.join(changes)}) — "
                       "rerun its own command to resume it, build into another -o, or pass --replace to rebuild "
                       "it with these (what is no longer built is removed from its outputs); nothing was changed")
    for line in [f"--replace: rebuilding {out} with other inputs or settings", *(f"  {c}" for c in changes)]:
        (note or print)(line)


def recorded_options(pipeline: type[Pipeline], out: str | Path | None, given: dict[str, Any]) -> dict[str, Any]:
    """`given`, where it leaves an option marked `json_schema_extra={"recorded": True}` unset (None),
    with the value OUT/build.json records for a build of the same pipeline: such an option's
    default depends on the day (an as-of date), and a resumed build must judge as it began."""
    path = Path(out) / CONFIG_FILE if out is not None else None
    if path is None or not path.is_file():
        return given
    try:
        config = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return given  # the rebuild check says what is wrong with it
    if not isinstance(config, dict) or config.get("pipeline") != pipeline.name:
        return given
    recorded = config.get("options") or {}
    sticky = [name for name, info in pipeline.Options.model_fields.items()
              if isinstance(info.json_schema_extra, dict) and info.json_schema_extra.get("recorded")]
    return {**given, **{n: recorded[n] for n in sticky if given.get(n) is None and recorded.get(n) is not None}}


def read_config(out: str | Path) -> dict[str, Any]:
    path = Path(out) / CONFIG_FILE
    if not path.is_file():
        raise LvuError(f"{out}: not a build folder (no {CONFIG_FILE}) — pass the -o folder of an `lvu build` command")
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise LvuError(f"{path}: unreadable ({e}) — re-run the build command to rewrite it") from None


def load_models(specs: dict[str, tuple[str, dict[str, Any]]], arg_flags: dict[str, str] | None = None) -> dict[str, Any]:
    """role -> (model name, args) as instances; roles naming the same model share one instance.
    `arg_flags`: the command's flag for a role's arguments (e.g. llm: "--llm-arg "), put in place
    of `lvu run`'s "--model-arg " in a model's error, so its hint names a flag this command has."""
    from lvu.models.probes import build_model

    made: dict[str, Any] = {}
    out = {}
    for role, (name, args) in specs.items():
        key = json.dumps([name, args], sort_keys=True, default=str)
        if key not in made:
            try:
                made[key] = build_model(name, dict(args))
            except LvuError as e:
                flag = (arg_flags or {}).get(role)
                if flag is None or "--model-arg " not in str(e):
                    raise
                raise LvuError(str(e).replace("--model-arg ", flag)) from None
        out[role] = made[key]
    return out


def build_config(pipeline: Pipeline, models: dict[str, Any], items: Sequence[Item],
                 store_dir: str | Path | None = None) -> dict[str, Any]:
    """What OUT/build.json holds: the pipeline (name, class, options), each role's model (its key
    and identity), the items (with their data) and, when the ledger lives elsewhere, where."""
    return {"pipeline": pipeline.name, "class": pipeline_reference(type(pipeline)), "options": pipeline.options,
            "models": {r: {"key": model_key(m), "identity": m.identity} for r, m in models.items()},
            "videos": [{"id": v.id, "path": v.path, **({"data": v.data} if v.data else {})} for v in items],
            **({"store": str(Path(store_dir).resolve())} if store_dir is not None else {})}


class BuildStopped(LvuError):
    """The build stopped early (failed units in a row, an unreachable endpoint); what it committed is kept."""


class BuildInProgress(LvuError):
    """Another process is building into this folder now."""


@contextmanager
def build_lock(out: str | Path, lock_dir: str | Path | None = None) -> Iterator[None]:
    """Hold OUT's build lock, or raise BuildInProgress naming the process that holds it. Every
    `lvu build` command takes it. The lock file is OUT/locks/build.lock, or, for a command whose
    store lives elsewhere (`lvu build filter`: the results folder, so a killed filter leaves OUT
    untouched), `lock_dir`/locks/build-<hash of OUT's path>.lock. flock: kill -9 never leaves it stale."""
    from lvu.runs.run_lock import RunInProgress, RunLocks

    folder = Path(out).expanduser()
    where = folder if lock_dir is None else Path(lock_dir).expanduser()
    name = "build" if lock_dir is None else "build-" + hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:16]
    try:
        where.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise LvuError(f"{where}: cannot create the folder ({e.strerror}) — pass a writable folder") from None
    locks = RunLocks(where)
    try:
        locks.acquire(name, busy=f"build {folder} is in progress ({{owner}}) — wait for it to finish, or build "
                                 "into another -o folder")
    except RunInProgress as e:
        raise BuildInProgress(str(e)) from None
    try:
        yield
    finally:
        locks.release_all()
