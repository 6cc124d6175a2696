"""Which of the videos that pass the rules are selected (each duration group up to its target,
round-robin over categories) and which split each goes to — seeded, so a build is reproducible.

    chosen = sample(records, rules, seed=0)        # id -> None (selected) or why not
    splits = split(records_selected, val=0.2, seed=0)   # id -> "val" | "test"

Pure functions over `evaluate`'s records (lvu.construct.select_rules); the `lvu build select`
export calls them. Decisions (docs/build.md, "Selecting videos"): within a group the categories
take turns in a seeded order, each giving its next video in a seeded order, until the group's
target is reached or every category is empty — the papers' "uniform over categories" for as long
as each category has videos; the split is stratified by (group, category): the selected videos,
ordered by stratum and then seeded within it, go to val at evenly spaced positions (systematic
sampling), so every stratum gets its share to within one video and the total is n * val rounded
(up or down by the seed's offset).
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from lvu.construct.select_rules import SelectionRules


def _rng(seed: int, *scope: object) -> random.Random:
    return random.Random(":".join(str(s) for s in (seed, *scope)))


def sample(records: Mapping[str, dict[str, Any]], rules: SelectionRules, seed: int) -> dict[str, str | None]:
    """For every kept record (keep=True): None when it is selected, else why not."""
    targets = {g.name: g.target for g in rules.groups}
    by_group: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for vid, r in records.items():
        if r.get("keep"):
            by_group[r["group"]][r["category"]].append(vid)
    out: dict[str, str | None] = {}
    for group, cats in by_group.items():
        queues = {}
        for cat in sorted(cats):
            ids = sorted(cats[cat])
            _rng(seed, group, cat).shuffle(ids)
            queues[cat] = ids
        order = sorted(queues)
        _rng(seed, group).shuffle(order)
        target = targets.get(group)
        taken = 0
        while any(queues.values()) and (target is None or taken < target):
            for cat in order:
                if queues[cat] and (target is None or taken < target):
                    out[queues[cat].pop(0)] = None
                    taken += 1
        for cat, rest in queues.items():
            for vid in rest:
                out[vid] = (f"not sampled: group {group} reached its target of {target} "
                            f"(categories take turns; {len(cats)} categories)")
    return out


def split(records: Mapping[str, dict[str, Any]], val: float, seed: int) -> dict[str, str]:
    """id -> "val" / "test" for the given (selected) records, stratified by (group, category)."""
    strata: dict[tuple[str, str], list[str]] = defaultdict(list)
    for vid, r in records.items():
        strata[(str(r.get("group")), str(r.get("category")))].append(vid)
    ordered: list[str] = []
    for key in sorted(strata):
        ids = sorted(strata[key])
        _rng(seed, "split", *key).shuffle(ids)
        ordered += ids
    offset = _rng(seed, "split-offset").random()
    out = {}
    for i, vid in enumerate(ordered):
        out[vid] = "val" if math.floor((i + 1) * val + offset) > math.floor(i * val + offset) else "test"
    return out
