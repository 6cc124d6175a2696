"""Baselines that need no model: what a score must beat."""

from __future__ import annotations

import hashlib
from typing import Any

from lvu.args import as_int, check_known
from lvu.models.base import Model, register_model
from lvu.types import LETTERS, Prompt, Response


@register_model("random")
class RandomChoice(Model):
    """Chance baseline: a seeded uniform letter per sample (multiple choice only).

    Picks a letter uniformly among the prompt's options, from a hash of (seed, sample id):
    the same sample always gets the same letter, and a different `seed` (default 0) draws anew.
    Its accuracy is chance level (1/number of options on average)."""

    def __init__(self, **args: Any) -> None:
        super().__init__(**args)
        check_known("random", args, {"seed"})
        self.seed = as_int("random", "seed", args.get("seed", 0))

    async def generate(self, prompt: Prompt, *, sample_id: str = "") -> Response:
        n = len(prompt.choices)
        if not n:
            return Response(error="the random baseline answers multiple-choice prompts only (no options given)")
        key = sample_id or prompt.text
        digest = hashlib.blake2b(f"{self.seed}\x00{key}".encode(), digest_size=8).digest()
        return Response(text=LETTERS[int.from_bytes(digest, "big") % n])
