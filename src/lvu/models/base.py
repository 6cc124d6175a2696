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

    accepts_audio: ClassVar[bool] = False
    """Whether the backend sends Audio prompt parts to its model (OpenAI-compatible `input_audio`,
    Gemini inline audio, hf processors with a feature extractor). A run with `--audio` refuses a
    backend that does not, in one line before any call (`check_audio`); never drops the sound.
    For a wrapper or a backend that knows only once loaded, True means "maybe": `takes_audio()`
    on the instance answers."""

    refresh: bool = False
    """Set by `bypass_cache()`: every answer is recomputed, none is read from a response cache."""

    def __init__(self, **args: Any) -> None:
        self.args = args

    @property
    def identity(self) -> dict[str, Any]:
        """What produced the answers (stored with the run): backend name, model id, version."""
        return {"backend": self.name, **self.args}

    @abstractmethod
    async def generate(self, prompt: Prompt, *, sample_id: str = "") -> Response:
        """Answer one prompt. Errors are returned in Response.error, not raised."""

    def takes_audio(self) -> bool:
        """Whether this model, as built, gets the prompt's audio (wrappers ask the model they wrap)."""
        return self.accepts_audio

    def bypass_cache(self) -> None:
        """Recompute every answer from now on (`--fresh`): read nothing from a response cache — a
        different model may now serve the same name or URL — but still write the fresh answers.
        Passed on to the models a wrapper holds (probes' base, socratic's captioner/answerer)."""
        self.refresh = True
        for inner in self.wrapped():
            inner.bypass_cache()

    async def preflight(self) -> None:
        """Called once before a run: raise a one-line LvuError now when the model cannot be
        reached (e.g. nothing listens at an API's base_url) instead of failing every sample after
        its retries. Default: check the wrapped models (local models have nothing to check)."""
        for inner in self.wrapped():
            await inner.preflight()

    def wrapped(self) -> list[Model]:
        """The models this one wraps (attributes that are models)."""
        return [v for v in vars(self).values() if isinstance(v, Model)]

    async def close(self) -> None:
        """Release resources (clients, processes)."""


MODELS: Registry[Model] = Registry("model", base=Model, group="lvu.models")  # + plugins: docs/plugins.md
register_model = MODELS.register


def check_audio(model: Model | type[Model], audio_mode: str, benchmark: str) -> None:
    """A one-line LvuError when the run gives audio (`audio_mode` not "none") and the model (a
    class: its `accepts_audio`; an instance: `takes_audio()`) would not send it."""
    if audio_mode == "none":
        return
    ok = model.takes_audio() if isinstance(model, Model) else model.accepts_audio
    if not ok:
        from lvu.errors import LvuError

        raise LvuError(f"model {model.name!r} cannot take audio, and {benchmark} runs with --audio {audio_mode} — "
                       "use an audio-capable backend (openai to a server with input_audio, gemini, hf with an "
                       "audio processor, ocr-match with Whisper) or --audio none")
