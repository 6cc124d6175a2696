"""hf: a vision-language model run in-process with Hugging Face transformers.

`lvu run -b videomme -m hf -a model=Qwen/Qwen2-VL-7B-Instruct -a dtype=bfloat16 -a batch_size=4`

The prompt becomes the model's own chat template: an optional system turn, then one user turn
whose content is the prompt's parts *in order* — `{"type": "image"}` per frame, `{"type": "audio"}`
per audio clip (processors with a feature extractor; lvu.models.hf_audio) and `{"type": "text"}`
per run of text (consecutive Text/Subtitle parts joined with newlines) — then
the generation prompt, then `assistant_prefix` when the protocol has one. Frames go to the
processor as PIL images in the same order. The response is the generated continuation only.

Processors, in the order tried:
- `AutoProcessor` (LLaVA, and every family when torchvision is installed);
- Qwen2-VL / Qwen2.5-VL without torchvision (transformers 5 gives every video processor, hence
  their `AutoProcessor`, a hard torchvision dependency): tokenizer + the PIL image processor, with
  each `<|image_pad|>` expanded to `grid_t*grid_h*grid_w / merge_size**2` tokens and
  `mm_token_type_ids` built, which is what `Qwen2VLProcessor` does for images.
Other families whose processor needs torchvision fail at load with a one-line error.

Batching: concurrent `generate` calls (the engine's `--concurrency`) are encoded in a small
thread pool, queued, and collected into batches of up to `batch_size` prompts with the same
generation settings (left padding); a batch waits for prompts still being encoded rather than go
out part-full. Batches are generated one at a time by a `Generator` (lvu.models.hf_generate): in a
dedicated thread, or on a GPU alone in its own process (lvu.models.hf_worker, `worker`), so no
other thread of the run slows its decode loop. A batch that cannot be collated runs prompt by
prompt. `compile=true` decodes with a static KV cache and a compiled step.

Nothing is downloaded here that the user did not ask for: with `HF_HUB_OFFLINE=1` a hub id must
already be in the Hugging Face cache. torch and transformers are imported only when the backend is
constructed (`pip install torch` first — `torch==2.13.0` for CPU — then `pip install 'lvu[hf]'`).
"""

from __future__ import annotations

import asyncio
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from lvu.args import as_bool, as_dict, as_float, as_int, check_known
from lvu.errors import LvuError
from lvu.models.base import Model, register_model
from lvu.models.hf_audio import OMNI_TYPES
from lvu.models.hf_generate import DTYPES, Generated, Generator, default_device, first_line
from lvu.models.hf_processors import REBUILT_TYPES, chat_template_file, rebuild_processor
from lvu.models.hf_worker import GeneratorProcess, WorkerDied
from lvu.types import Audio, Frame, Prompt, Response, Subtitle, Text, as_rgb

ARGS = {
    "model": "local directory or hub id (required)",
    "dtype": "auto | float32 | bfloat16 | float16 (default auto: the checkpoint's dtype)",
    "device": "cpu | cuda | cuda:N (default: cuda when available, else cpu)",
    "device_map": "passed to from_pretrained, e.g. auto (needs accelerate); replaces device",
    "attn_implementation": "passed to from_pretrained: sdpa | eager | flash_attention_2 ...",
    "batch_size": "prompts generated together (default 1)",
    "batch_wait": "seconds to wait for a batch to fill (default 0.05)",
    "max_new_tokens": "overrides the prompt's max_tokens",
    "logprobs": "true: return top log-probabilities per generated token",
    "top_logprobs": "alternatives per token with logprobs (default 5)",
    "processor_kwargs": "JSON dict passed to the processor's from_pretrained",
    "trust_remote_code": "passed to from_pretrained (default false)",
    "seed": "torch seed set before each sampled batch (temperature > 0)",
    "compile": "true: static KV cache and a compiled decode step (torch.compile; CUDA graphs on a GPU)",
    "worker": "where the model generates: process (alone in its own process) | thread | auto "
              "(default: process on a GPU, thread on the CPU)",
}
WORKERS = ("auto", "process", "thread")
QWEN_TYPES = ("qwen2_vl", "qwen2_5_vl")
"""Families whose image path lvu rebuilds when their AutoProcessor needs torchvision."""
INSTALL = "pip install torch==2.13.0 (CPU) or a CUDA torch, then pip install 'lvu[hf]'"


@dataclass
class _Request:
    inputs: dict[str, Any]
    """Processor output for this prompt alone (tensors with batch dimension 1)."""
    gen_key: tuple
    """(max_new_tokens, temperature): only requests with equal keys share a batch."""
    future: asyncio.Future
    loop: asyncio.AbstractEventLoop
    extra: dict[str, Any] = field(default_factory=dict)


def messages_for(prompt: Prompt) -> tuple[list[dict[str, Any]], list[Any]]:
    """The chat messages and the PIL images (in prompt order) for one prompt."""
    from PIL import Image

    content: list[dict[str, Any]] = []
    images = []
    texts: list[str] = []

    def flush() -> None:
        if texts:
            content.append({"type": "text", "text": "\n".join(texts)})
            texts.clear()

    for part in prompt.parts:
        if isinstance(part, Frame):
            if part.image is None:
                raise LvuError(f"frame at {part.timestamp:.2f}s has no pixels")
            flush()
            content.append({"type": "image"})
            images.append(Image.fromarray(as_rgb(part.image)))
        elif isinstance(part, Audio):  # the clip goes to the processor in order (lvu.models.hf_audio)
            flush()
            content.append({"type": "audio"})
        elif isinstance(part, (Text, Subtitle)):
            texts.append(part.text)
    flush()
    messages = []
    if prompt.system:
        messages.append({"role": "system", "content": [{"type": "text", "text": prompt.system}]})
    messages.append({"role": "user", "content": content})
    return messages, images


@register_model("hf")
class HFModel(Model):
    """Local transformers image-text-to-text model (`model=HF_ID`): frames as images in prompt order."""

    run_neutral_args = ("batch_wait", "worker")  # the same code on the same device: equal replies (tests)
    accepts_audio = True  # when its processor takes audio: takes_audio() once loaded

    def __init__(self, **args: Any) -> None:
        super().__init__(**args)
        check_known("hf", args, ARGS)
        if not args.get("model"):
            raise LvuError("hf needs the model: -a model=<local directory or hub id>, e.g. "
                           "-a model=Qwen/Qwen2-VL-7B-Instruct")
        self.model_id = str(args["model"])
        # Every typed argument is converted here, before torch loads (lvu.args: one-line errors).
        self.batch_size = as_int("hf", "batch_size", args.get("batch_size", 1), 1)
        self.batch_wait = as_float("hf", "batch_wait", args.get("batch_wait", 0.05), 0)
        # checked here for one-line errors; the Generator (maybe in its own process) uses them
        as_bool("hf", "logprobs", args.get("logprobs", False))
        as_int("hf", "top_logprobs", args.get("top_logprobs", 5), 0)
        self.max_new_tokens = (as_int("hf", "max_new_tokens", args["max_new_tokens"], 1)
                               if args.get("max_new_tokens") else None)
        if args.get("seed") is not None:
            as_int("hf", "seed", args["seed"])
        self.trust_remote_code = as_bool("hf", "trust_remote_code", args.get("trust_remote_code", False))
        if str(args.get("dtype", "auto")) not in ("auto", *DTYPES):
            raise LvuError(f"hf: unknown dtype {args['dtype']!r}; use auto, {', '.join(sorted(set(DTYPES.values())))}")
        if args.get("processor_kwargs") is not None:
            as_dict("hf", "processor_kwargs", args["processor_kwargs"])
        as_bool("hf", "compile", args.get("compile", False))
        worker = str(args.get("worker", "auto"))
        if worker not in WORKERS:
            raise LvuError(f"hf: unknown worker {worker!r}; use {', '.join(WORKERS)}")
        try:
            import torch  # noqa: F401
            import transformers  # noqa: F401
        except ImportError as e:
            raise LvuError(f"hf needs torch and transformers ({e.name} is missing): {INSTALL}") from None
        self.worker = worker if worker != "auto" else (
            "process" if default_device(args).startswith("cuda") else "thread")
        self._load()
        self._gen_pool = ThreadPoolExecutor(1, thread_name_prefix="lvu-hf-generate")
        self._prep_pool = ThreadPoolExecutor(min(4, os.cpu_count() or 1), thread_name_prefix="lvu-hf-encode")
        self._queue: asyncio.Queue[_Request | None] | None = None
        self._encoding = 0
        """Prompts handed to the encode pool and not yet queued (or failed)."""
        self._batcher: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.batch_sizes: list[int] = []
        """Size of every batch generated so far (for tests and logs)."""

    # ---- loading -------------------------------------------------------------------------------

    def _load(self) -> None:
        """The model (in a `Generator`, here or in its own process), then the processor."""
        from transformers import AutoConfig

        trust = self.trust_remote_code
        try:
            self.config = AutoConfig.from_pretrained(self.model_id, trust_remote_code=trust)
        except (OSError, ValueError) as e:
            offline = " (HF_HUB_OFFLINE is set, so only cached models load)" if os.environ.get("HF_HUB_OFFLINE") else ""
            raise LvuError(f"hf: cannot load {self.model_id!r}{offline}: {first_line(e)}") from None
        self.model_type = getattr(self.config, "model_type", "?")
        if self.args.get("device_map") and self.args.get("device"):
            raise LvuError("hf: give device or device_map, not both")
        self.generator: Generator | GeneratorProcess = (
            GeneratorProcess if self.worker == "process" else Generator)(self.model_id, dict(self.args))
        self.transformers_version = str(self.generator.info["transformers"])
        self._load_processor(trust)
        eos = list(self.generator.info["eos_ids"])
        if self.tokenizer.eos_token_id is not None:
            eos.append(self.tokenizer.eos_token_id)
        self.eos_ids = set(eos)
        pad = self.tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else (eos[0] if eos else 0)

    @property
    def model(self) -> Any:
        """The transformers model, when it generates in this process (`worker=thread`)."""
        if not isinstance(self.generator, Generator):
            raise LvuError("hf: the model lives in the generation process (worker=process); "
                           "use -a worker=thread to reach it from here")
        return self.generator.model

    def _load_processor(self, trust: bool) -> None:
        from transformers import AutoImageProcessor, AutoProcessor, AutoTokenizer

        extra = dict(self.args.get("processor_kwargs") or {})
        try:
            processor = AutoProcessor.from_pretrained(self.model_id, trust_remote_code=trust, **extra)
            if not hasattr(processor, "image_processor") and self.model_type in OMNI_TYPES:
                return self._load_omni(trust, extra)  # the checkpoint's parts, without a processor config
            if not hasattr(processor, "image_processor"):
                raise LvuError(f"hf: {self.model_id!r} has no image processor (is it a text-only model?)")
            self.processor, self.kind = processor, "auto"
            self.tokenizer = processor.tokenizer
        except LvuError:
            raise
        except Exception as e:  # ImportError (torchvision) or transformers' lazy-mapping AttributeError
            if self.model_type in OMNI_TYPES:
                return self._load_omni(trust, extra)
            if self.model_type in REBUILT_TYPES:  # LLaVA-OneVision: its processor without the video part
                self.processor, self.kind = rebuild_processor(self.model_id, self.model_type, trust, extra), "rebuilt"
                self.tokenizer = self.processor.tokenizer
                self.tokenizer.padding_side = "left"
                return None
            if self.model_type not in QWEN_TYPES:
                raise LvuError(
                    f"hf: the processor of {self.model_id!r} ({self.model_type}) cannot load: {first_line(e)}. "
                    f"Without torchvision lvu runs LLaVA-style processors and rebuilds Qwen2-VL/Qwen2.5-VL's "
                    f"and LLaVA-OneVision's"
                ) from None
            self.processor, self.kind = None, "qwen-image-processor"
            self.tokenizer = AutoTokenizer.from_pretrained(self.model_id, trust_remote_code=trust)
            self.image_processor = AutoImageProcessor.from_pretrained(self.model_id, trust_remote_code=trust, **extra)
            self.image_token = getattr(self.tokenizer, "image_token", None) or "<|image_pad|>"
            self.image_token_id = self.tokenizer.convert_tokens_to_ids(self.image_token)
            if self.tokenizer.chat_template is None:
                self.tokenizer.chat_template = chat_template_file(self.model_id)
        self.tokenizer.padding_side = "left"

    def _load_omni(self, trust: bool, extra: dict[str, Any]) -> None:
        """Qwen2.5-Omni's thinker without its AutoProcessor: images and audio rebuilt (hf_audio)."""
        from lvu.models.hf_audio import load_omni_parts

        self.processor, self.kind = None, "qwen-omni"
        self.omni = load_omni_parts(self.model_id, self.config, trust, extra)
        self.tokenizer = self.omni["tokenizer"]
        if self.tokenizer.chat_template is None:
            self.tokenizer.chat_template = chat_template_file(self.model_id)
        self.tokenizer.padding_side = "left"

    def takes_audio(self) -> bool:
        """Qwen2.5-Omni (rebuilt), or a processor with a feature extractor."""
        from lvu.models.hf_audio import processor_hears

        return self.kind == "qwen-omni" or processor_hears(self.processor)

    @property
    def identity(self) -> dict[str, Any]:
        return {**super().identity, "model_type": self.model_type, "processor": self.kind,
                "transformers": self.transformers_version, "device": self.generator.info["device"],
                "dtype": self.generator.info["dtype"]}

    # ---- encoding (one prompt, in the encode pool) ----------------------------------------------

    def encode(self, prompt: Prompt) -> dict[str, Any]:
        """The tensors the model gets for one prompt (batch dimension 1), on the CPU."""
        messages, images = messages_for(prompt)
        template = self.processor if self.processor is not None else self.tokenizer
        try:
            text = template.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        except Exception as e:
            raise LvuError(f"hf: the chat template of {self.model_id!r} failed: {first_line(e)}") from None
        text += prompt.assistant_prefix or ""
        bos = self.tokenizer.bos_token
        special = not (bos and text.startswith(bos))  # what ProcessorMixin.apply_chat_template does
        audios = [a.float_samples() for a in prompt.audio]
        if audios and not self.takes_audio():
            raise LvuError(f"hf: {self.model_id!r} ({self.model_type}) takes no audio — run with --audio none")
        if self.processor is not None:
            out = self.processor(text=[text], images=[images] if images else None, return_tensors="pt",
                                 add_special_tokens=special, **({"audio": audios} if audios else {}))
            return dict(out)
        if self.kind == "qwen-omni":
            from lvu.models.hf_audio import encode_omni

            return encode_omni(self.omni, text, images, audios, special, self.model_id)
        return self._encode_qwen(text, images, special)

    def _encode_qwen(self, text: str, images: list[Any], special: bool) -> dict[str, Any]:
        pieces = text.split(self.image_token)
        if len(pieces) - 1 != len(images):
            raise LvuError(f"hf: the chat template placed {len(pieces) - 1} image tokens for {len(images)} frames")
        out: dict[str, Any] = {}
        if images:
            feats = self.image_processor(images=images, return_tensors="pt")
            merge = int(self.image_processor.merge_size) ** 2
            counts = [int(g.prod()) // merge for g in feats["image_grid_thw"]]
            text = pieces[0] + "".join(self.image_token * n + rest for n, rest in zip(counts, pieces[1:]))
            out.update(feats)
        tok = self.tokenizer([text], return_tensors="pt", add_special_tokens=special)
        out["input_ids"], out["attention_mask"] = tok["input_ids"], tok["attention_mask"]
        out["mm_token_type_ids"] = (tok["input_ids"] == self.image_token_id).int()
        return out

    # ---- batching ------------------------------------------------------------------------------

    async def generate(self, prompt: Prompt, *, sample_id: str = "") -> Response:
        t0 = time.perf_counter()
        loop = asyncio.get_running_loop()
        self._ensure_batcher(loop)
        assert self._queue is not None
        self._encoding += 1  # the batcher waits for these before it sends a part-full batch
        try:
            inputs = await loop.run_in_executor(self._prep_pool, self.encode, prompt)
        except Exception as e:
            error = str(e) if isinstance(e, LvuError) else f"hf: encoding failed: {type(e).__name__}: {first_line(e)}"
            return Response(error=error, latency=time.perf_counter() - t0)
        finally:
            self._encoding -= 1
            self._queue.put_nowait(None)  # wakes a batcher waiting on this encode
        max_new = self.max_new_tokens or prompt.max_tokens
        request = _Request(inputs, (max_new, float(prompt.temperature)), loop.create_future(), loop)
        self._queue.put_nowait(request)
        response: Response = await request.future
        response.latency = time.perf_counter() - t0
        return response

    def _ensure_batcher(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._loop is not loop or self._batcher is None or self._batcher.done():
            self._loop, self._queue, self._encoding = loop, asyncio.Queue(), 0
            self._batcher = loop.create_task(self._batch_loop())

    async def _next(self, deadline: float) -> _Request | None:
        """The next encoded request; while none is being encoded, only until `deadline` (then None).

        A batch fills from prompts already encoded and waits for the ones being encoded: a
        batch of 8 costs a 7B model about what a batch of 1 costs, so sending it part-full while
        its prompts are a fraction of a second from ready wastes the GPU."""
        assert self._queue is not None
        loop = asyncio.get_running_loop()
        while True:
            if not self._queue.empty() or self._encoding:
                r = await self._queue.get()
            else:
                left = deadline - loop.time()
                if left <= 0:
                    return None
                try:
                    r = await asyncio.wait_for(self._queue.get(), left)
                except (asyncio.TimeoutError, TimeoutError):
                    return None
            if r is not None:
                return r

    async def _batch_loop(self) -> None:
        assert self._queue is not None
        loop = asyncio.get_running_loop()
        held: list[_Request] = []  # requests with other generation settings, first in line next time
        while True:
            first = held.pop(0) if held else await self._next(float("inf"))
            assert first is not None
            batch, deadline = [first], loop.time() + self.batch_wait
            for r in list(held):
                if len(batch) < self.batch_size and r.gen_key == first.gen_key:
                    held.remove(r)
                    batch.append(r)
            while len(batch) < self.batch_size:
                more = await self._next(deadline)
                if more is None:
                    break
                (batch if more.gen_key == first.gen_key else held).append(more)
            live = [r for r in batch if not r.future.done()]
            if not live:
                continue
            try:
                responses = await loop.run_in_executor(self._gen_pool, self._run_batch, live)
            except Exception as e:  # never leave a caller waiting
                responses = [Response(error=f"hf: {type(e).__name__}: {first_line(e)}")] * len(live)
            for r, resp in zip(live, responses):
                if not r.future.done():
                    r.future.set_result(resp)

    def _run_batch(self, batch: list[_Request]) -> list[Response]:
        """Generate for a batch (in the generation thread); falls back to one by one."""
        if len(batch) > 1:
            try:
                return self._generate([r.inputs for r in batch], batch[0].gen_key)
            except WorkerDied as e:
                return [Response(error=str(e))] * len(batch)
            except Exception:  # Unbatchable, or e.g. out of memory: each prompt gets its own try
                pass
        out = []
        for r in batch:
            try:
                out.extend(self._generate([r.inputs], r.gen_key))
            except WorkerDied as e:
                out.append(Response(error=str(e)))
            except Exception as e:
                out.append(Response(error=f"hf: generation failed: {type(e).__name__}: {first_line(e)}"))
        return out

    # ---- generation (generation thread) --------------------------------------------------------

    def _generate(self, items: list[dict[str, Any]], gen_key: tuple) -> list[Response]:
        """Generate for encoded prompts and read the replies (cut at the first end of sequence)."""
        generated = self.generator.generate(items, gen_key, self.pad_id)
        self.batch_sizes.append(len(items))
        return [self._response(g) for g in generated]

    def _response(self, g: Generated) -> Response:
        n = next((j for j, t in enumerate(g.ids) if t in self.eos_ids), len(g.ids))
        text = self.tokenizer.decode(g.ids[:n], skip_special_tokens=True)
        resp = Response(text=text, usage={"prompt_tokens": g.prompt_tokens, "completion_tokens": n})
        if g.steps is not None:
            resp.logprobs = [self._token_logprobs(g.ids[j], *g.steps[j]) for j in range(n)]
        return resp

    def _token_logprobs(self, chosen: int, chosen_lp: float, values: list[float], indices: list[int]) -> dict[str, float]:
        """The generated token first, then the top alternatives (token text -> log-probability)."""
        out = {self.tokenizer.decode([chosen]): chosen_lp}
        for lp, idx in zip(values, indices):
            out.setdefault(self.tokenizer.decode([idx]), float(lp))
        return out

    async def close(self) -> None:
        if self._batcher is not None and not self._batcher.done():
            self._batcher.cancel()
        self._batcher = None
        close = getattr(self.generator, "close", None)
        if close is not None:  # the generation process ends with the run
            await asyncio.to_thread(close)
