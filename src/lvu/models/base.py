"""The Model interface: an async `generate(Prompt) -> Response`, registered by name.

A backend never knows which benchmark it serves; it honours the order of the prompt's parts.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from lvu.registry import Registry
from lvu.types import Prompt, Response


class Model(ABC):
    name: ClassVar[str] = ""
    run_neutral_args: ClassVar[tuple[str, ...]] = ()
    """Arguments that cannot change answers (retries, timeouts, caching, concurrency): left out
    of the run id, so re-running with e.g. more retries resumes the same run."""

    def __init__(self, **args: Any) -> None:
        self.args = args

    @property
    def identity(self) -> dict[str, Any]:
        """What produced the answers (stored with the run): backend name, model id, version."""
        return {"backend": self.name, **self.args}

    @abstractmethod
    async def generate(self, prompt: Prompt, *, sample_id: str = "") -> Response:
        """Answer one prompt. Errors are returned in Response.error, not raised."""

    async def close(self) -> None:
        """Release resources (clients, processes)."""


MODELS: Registry[Model] = Registry("model")
register_model = MODELS.register
