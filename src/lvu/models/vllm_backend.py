"""vllm: a vision-language model run in-process by `vllm.LLM` on this machine's GPU(s)
(`pip install 'lvu[vllm]'`; needs CUDA — for a remote or shared vLLM use `vllm serve` and the
`openai` backend instead).

Each prompt becomes a chat in OpenAI content-part form, built from the prompt's parts in order:
frames as images (PIL images handed over directly, or JPEG data URLs with `images=jpeg` to
match what a `vllm serve` endpoint receives), text and subtitle cues as text parts; system
prompt first; the assistant prefix as a final assistant message that the model continues
(`prefix=continue`) or as trailing user text (`prefix=user`). Whether the model *sees* the
interleaving depends on its chat template: templates that walk the content list (Qwen2-VL,
Qwen2.5-VL, LLaVA-OneVision, Idefics3...) keep it; vLLM's "string" content format puts the image
placeholders first. `chat_template_content_format=openai` forces the list form.

Concurrent `generate` calls (the run's `--concurrency`) are gathered into one `LLM.chat` batch
(up to `max_batch`, waiting at most `batch_wait_ms` for more), so vLLM's continuous batching keeps
the GPU busy; a batch that fails is retried sample by sample so one over-long prompt fails alone.

GPU use: the weights and a KV cache take `gpu_memory_utilization` (default 0.9) of each GPU's
memory; `tensor_parallel_size` shards the model over that many GPUs; `max_model_len` bounds
the context (frames x tokens per frame + text) and so the KV cache; `max_images` (default 64)
sets vLLM's `limit_mm_per_prompt` and must be at least the benchmark's frame count.
"""

from __future__ import annotations

import asyncio
import base64
import io
import time
from dataclasses import dataclass, field
from typing import Any

from lvu.args import as_bool, as_choice, as_dict, as_float, as_int, check_known
from lvu.errors import LvuError
from lvu.models.base import Model, register_model
from lvu.types import Frame, Prompt, Response, as_rgb

INSTALL = "the vllm backend needs vllm on a machine with a CUDA GPU: pip install 'lvu[vllm]'"
DEFAULTS: dict[str, Any] = {
    "images": "pil", "quality": 90, "max_images": 64, "prefix": "continue",
    "chat_template": None, "chat_template_content_format": "auto",
    "temperature": None, "max_tokens": None, "seed": 0, "logprobs": None,
    "tensor_parallel_size": 1, "dtype": "auto", "max_model_len": None, "gpu_memory_utilization": 0.9,
    "trust_remote_code": False, "enforce_eager": False, "max_num_seqs": None, "mm_processor_kwargs": None,
    "engine_args": None, "max_batch": 64, "batch_wait_ms": 20,
}
"""Every argument but `model` (required: a local path or a hub id already in the HF cache)."""
IMAGE_MODES = ("pil", "jpeg")
PREFIX_MODES = ("continue", "user")


def image_part(image: Any, *, images: str = "pil", quality: int = 90) -> dict[str, Any]:
    from PIL import Image

    pil = Image.fromarray(as_rgb(image))
    if images == "pil":
        return {"type": "image_pil", "image_pil": pil}
    buf = io.BytesIO()
    pil.save(buf, format="JPEG", quality=int(quality))
    return {"type": "image_url",
            "image_url": {"url": "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")}}


def to_chat(prompt: Prompt, *, images: str = "pil", quality: int = 90, prefix: str = "continue") -> list[dict[str, Any]]:
    """The conversation `LLM.chat` receives: [system], one user message with one content part
    per prompt part in order, then the assistant prefix (see the module doc)."""
    messages: list[dict[str, Any]] = []
    if prompt.system:
        messages.append({"role": "system", "content": prompt.system})
    content = [image_part(p.image, images=images, quality=quality) if isinstance(p, Frame)
               else {"type": "text", "text": p.text} for p in prompt.parts]
    if prompt.assistant_prefix and prefix == "user":
        content.append({"type": "text", "text": prompt.assistant_prefix})
    messages.append({"role": "user", "content": content})
    if prompt.assistant_prefix and prefix == "continue":
        messages.append({"role": "assistant", "content": prompt.assistant_prefix})
    return messages


def _import_vllm() -> Any:
    try:
        import vllm
    except ImportError:
        raise LvuError(INSTALL) from None
    return vllm


def typed_args(a: dict[str, Any]) -> dict[str, Any]:
    """The arguments converted by lvu.args (so trust_remote_code=False is False): one-line errors."""
    out = dict(a)
    out["images"] = as_choice("vllm", "images", a["images"], IMAGE_MODES)
    out["prefix"] = as_choice("vllm", "prefix", a["prefix"], PREFIX_MODES)
    for name in ("trust_remote_code", "enforce_eager"):
        out[name] = as_bool("vllm", name, a[name])
    for name, low in (("quality", 1), ("max_images", 1), ("tensor_parallel_size", 1), ("max_batch", 1),
                      ("seed", None), ("max_tokens", 1), ("max_model_len", 1), ("max_num_seqs", 1)):
        out[name] = None if a[name] is None else as_int("vllm", name, a[name], low)
    out["logprobs"] = None if a["logprobs"] in (None, False) else as_int("vllm", "logprobs", a["logprobs"], 0)
    out["temperature"] = None if a["temperature"] is None else as_float("vllm", "temperature", a["temperature"], 0)
    out["gpu_memory_utilization"] = as_float("vllm", "gpu_memory_utilization", a["gpu_memory_utilization"],
                                             above=0, high=1)
    out["batch_wait_ms"] = as_float("vllm", "batch_wait_ms", a["batch_wait_ms"], 0)
    for name in ("mm_processor_kwargs", "engine_args"):
        if a[name] is not None:
            as_dict("vllm", name, a[name])
    return out


@dataclass
class _Job:
    messages: list[dict[str, Any]]
    params: dict[str, Any]
    continues: bool
    future: asyncio.Future = field(repr=False)


@register_model("vllm")
class Vllm(Model):
    """In-process vllm.LLM on local GPUs: multi-image chats, batched concurrent prompts.

    Args (`--model-arg k=v`): `model` (required) and DEFAULTS; see docs/models/vllm.md."""

    def __init__(self, **args: Any) -> None:
        super().__init__(**args)
        check_known("vllm", args, {"model", *DEFAULTS})
        if not args.get("model"):
            raise LvuError("vllm needs the model: --model-arg model=PATH_OR_HUB_ID")
        self.a = a = typed_args({**DEFAULTS, **args})
        self.model = str(a["model"])
        self.max_batch = a["max_batch"]
        self.batch_wait = a["batch_wait_ms"] / 1000
        self._vllm = _import_vllm()
        self.llm = self._load()
        self._queue: asyncio.Queue[_Job] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._worker: asyncio.Task | None = None
        self.batches: list[int] = []
        """Sizes of the batches run so far (for tests and tuning)."""

    def engine_kwargs(self) -> dict[str, Any]:
        """What `vllm.LLM(...)` is built with."""
        a = self.a
        kw: dict[str, Any] = {
            "model": self.model, "tensor_parallel_size": int(a["tensor_parallel_size"]), "dtype": a["dtype"],
            "gpu_memory_utilization": float(a["gpu_memory_utilization"]), "seed": int(a["seed"] or 0),
            "trust_remote_code": bool(a["trust_remote_code"]), "enforce_eager": bool(a["enforce_eager"]),
            "limit_mm_per_prompt": {"image": int(a["max_images"])},
        }
        for name in ("max_model_len", "max_num_seqs", "mm_processor_kwargs"):
            if a[name] is not None:
                kw[name] = a[name]
        kw.update(a["engine_args"] or {})
        return kw

    def _load(self) -> Any:
        return self._vllm.LLM(**self.engine_kwargs())

    @property
    def identity(self) -> dict[str, Any]:
        return {"backend": self.name, **self.args, "model": self.model,
                "vllm": getattr(self._vllm, "__version__", "unknown")}

    # ---- requests ------------------------------------------------------------------------------------

    def sampling(self, prompt: Prompt) -> dict[str, Any]:
        """SamplingParams arguments for a prompt (its settings, overridden by the model args)."""
        a = self.a
        params: dict[str, Any] = {
            "temperature": prompt.temperature if a["temperature"] is None else float(a["temperature"]),
            "max_tokens": prompt.max_tokens if a["max_tokens"] is None else int(a["max_tokens"]),
        }
        if a["seed"] is not None:
            params["seed"] = int(a["seed"])
        if a["logprobs"] not in (None, False):
            params["logprobs"] = int(a["logprobs"])
        return params

    def messages(self, prompt: Prompt) -> list[dict[str, Any]]:
        return to_chat(prompt, images=self.a["images"], quality=int(self.a["quality"]), prefix=self.a["prefix"])

    async def generate(self, prompt: Prompt, *, sample_id: str = "") -> Response:
        t0 = time.perf_counter()
        try:
            n_images = len(prompt.frames)
            if n_images > int(self.a["max_images"]):
                return Response(error=f"vllm: {n_images} frames but max_images={self.a['max_images']} — "
                                      f"raise it with --model-arg max_images={n_images}")
            loop = asyncio.get_running_loop()
            job = _Job(self.messages(prompt), self.sampling(prompt),
                       bool(prompt.assistant_prefix) and self.a["prefix"] == "continue", loop.create_future())
            self._ensure_worker().put_nowait(job)
            response: Response = await job.future
        except Exception as e:
            return Response(error=f"vllm: {type(e).__name__}: {e}", latency=time.perf_counter() - t0)
        response.latency = time.perf_counter() - t0
        return response

    # ---- batching ------------------------------------------------------------------------------------

    def _ensure_worker(self) -> asyncio.Queue[_Job]:
        loop = asyncio.get_running_loop()
        if self._queue is None or self._loop is not loop or self._worker is None or self._worker.done():
            self._queue, self._loop = asyncio.Queue(), loop
            self._worker = loop.create_task(self._batches(self._queue))
        return self._queue

    async def _batches(self, queue: asyncio.Queue[_Job]) -> None:
        """Collect queued jobs into batches and run them one batch at a time (LLM is not re-entrant)."""
        while True:
            jobs = [await queue.get()]
            deadline = time.monotonic() + self.batch_wait
            while len(jobs) < self.max_batch:
                timeout = deadline - time.monotonic()
                try:
                    jobs.append(queue.get_nowait() if timeout <= 0 else await asyncio.wait_for(queue.get(), timeout))
                except (asyncio.QueueEmpty, TimeoutError):
                    break
            for continues in (False, True):  # chat() takes the prefix mode per call
                group = [j for j in jobs if j.continues == continues]
                if group:
                    await self._run(group, continues)

    async def _run(self, jobs: list[_Job], continues: bool) -> None:
        try:
            outputs = await asyncio.to_thread(self._chat, jobs, continues)
        except Exception as e:
            if len(jobs) == 1:
                _settle(jobs[0], Response(error=f"vllm: {type(e).__name__}: {_one_line(e)}"))
                return
            for job in jobs:  # find the culprit: the others still get their answers
                await self._run([job], continues)
            return
        for job, out in zip(jobs, outputs):
            _settle(job, parse_output(out))

    def _chat(self, jobs: list[_Job], continues: bool) -> list[Any]:
        self.batches.append(len(jobs))
        kwargs: dict[str, Any] = {"use_tqdm": False, "add_generation_prompt": not continues,
                                  "continue_final_message": continues}
        if self.a["chat_template"]:
            kwargs["chat_template"] = self.a["chat_template"]
        if self.a["chat_template_content_format"] != "auto":
            kwargs["chat_template_content_format"] = self.a["chat_template_content_format"]
        params = [self._vllm.SamplingParams(**j.params) for j in jobs]
        return self.llm.chat([j.messages for j in jobs], sampling_params=params, **kwargs)

    async def close(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            self._worker = None


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split())[:400]


def _settle(job: _Job, response: Response) -> None:
    if not job.future.done():
        job.future.set_result(response)


def parse_output(out: Any) -> Response:
    """A vllm RequestOutput as a Response: text, usage, top log-probabilities per token."""
    completion = out.outputs[0]
    usage = {"prompt_tokens": len(out.prompt_token_ids or []), "completion_tokens": len(completion.token_ids or [])}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    if not completion.text:
        reason = completion.finish_reason
        return Response(usage=usage, error="empty response" + (f": finish_reason={reason}" if reason else ""))
    logprobs = None
    if completion.logprobs:
        logprobs = [{(lp.decoded_token if lp.decoded_token is not None else str(tok)): float(lp.logprob)
                     for tok, lp in step.items()} for step in completion.logprobs]
    return Response(text=completion.text, usage=usage, logprobs=logprobs)
