"""The generating half of the hf backend: the model's weights and `generate`, nothing else.

`Generator` loads an image-text-to-text model and turns batches of already-encoded prompts into
token ids. It knows no tokenizer, no prompt and no asyncio, so the same object runs in the
backend's generation thread or alone in a process of its own (lvu.models.hf_worker) where no
other Python thread takes the interpreter lock from its decode loop.

`compile=true` generates with a static KV cache and lets transformers compile the decode step
(`torch.compile`; CUDA graphs on a GPU). Cache lengths are rounded up to a multiple of
`CACHE_BUCKET` tokens and one cache is kept per batch size, so prompts of similar length reuse
one compiled graph instead of compiling again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lvu.args import as_bool
from lvu.errors import LvuError

DTYPES = {"float32": "float32", "fp32": "float32", "float16": "float16", "fp16": "float16",
          "half": "float16", "bfloat16": "bfloat16", "bf16": "bfloat16"}
SEQUENCE_KEYS = ("input_ids", "attention_mask", "mm_token_type_ids", "token_type_ids")
"""Per-token processor outputs: left-padded when prompts are batched; all others are concatenated."""
CACHE_BUCKET = 512
"""Static caches are sized in steps of this many tokens: one compiled decode graph per step."""


class Unbatchable(Exception):
    """These encoded prompts cannot share one batch (processor outputs of different shapes)."""


@dataclass
class Generated:
    """One prompt's continuation: every generated id (end-of-sequence included), before any cut."""

    ids: list[int]
    prompt_tokens: int
    steps: list[tuple[float, list[float], list[int]]] | None = None
    """With logprobs: per generated token, (its log-probability, the top values, their ids)."""


class Generator:
    """A loaded model that generates for encoded prompts (`Generator(model_id, args)`)."""

    def __init__(self, model_id: str, args: dict[str, Any]) -> None:
        import torch
        import transformers
        from transformers import AutoModelForImageTextToText

        self.model_id = model_id
        self.compile = as_bool("hf", "compile", args.get("compile", False))
        self.top_logprobs = int(args.get("top_logprobs", 5))
        self.want_logprobs = as_bool("hf", "logprobs", args.get("logprobs", False))
        self.seed = None if args.get("seed") is None else int(args["seed"])
        kwargs: dict[str, Any] = {"trust_remote_code": as_bool("hf", "trust_remote_code",
                                                               args.get("trust_remote_code", False))}
        dtype = str(args.get("dtype", "auto"))
        kwargs["dtype"] = getattr(torch, DTYPES[dtype]) if dtype != "auto" else "auto"
        if args.get("attn_implementation"):
            kwargs["attn_implementation"] = str(args["attn_implementation"])
        device_map = args.get("device_map")
        if device_map:
            kwargs["device_map"] = device_map
        try:
            model = AutoModelForImageTextToText.from_pretrained(model_id, **kwargs)
        except (OSError, ValueError, ImportError) as e:
            raise LvuError(f"hf: cannot load {model_id!r} as an image-text-to-text model: {first_line(e)}") from None
        if not device_map:
            device = default_device(args)
            try:
                model.to(device)  # type: ignore[arg-type]  # transformers' @wraps(Module.to) stub wants the model again
            except (RuntimeError, AssertionError) as e:
                raise LvuError(f"hf: cannot move the model to {device!r}: {first_line(e)}") from None
        self.model = model.eval()
        gen = getattr(model, "generation_config", None)
        eos = getattr(gen, "eos_token_id", None) if gen is not None else None
        self.info: dict[str, Any] = {"model_type": getattr(model.config, "model_type", "?"), "device": str(model.device),
                     "dtype": str(model.dtype).removeprefix("torch."),
                     "transformers": transformers.__version__,
                     "eos_ids": eos if isinstance(eos, list) else [eos] if eos is not None else [],
                     "compile": self.compile}
        self._caches: dict[int, tuple[int, Any]] = {}
        """batch size -> (length, the static KV cache) reused by every compiled call of that size."""
        self._compile_config: Any = None
        major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
        self._cache_kwarg = "cache" if (major, minor) >= (5, 24) else "past_key_values"  # renamed in 5.24

    # ---- batching -------------------------------------------------------------------------------

    def collate(self, items: list[dict[str, Any]], pad_id: int) -> dict[str, Any]:
        """One batch of model inputs: per-token keys left-padded, the rest concatenated."""
        import torch

        if len(items) == 1:
            return dict(items[0])
        keys = set().union(*items)
        out: dict[str, Any] = {}
        width = max(int(it["input_ids"].shape[1]) for it in items)
        for key in keys:
            values = [it[key] for it in items if key in it]
            if key in SEQUENCE_KEYS:
                if len(values) != len(items):
                    raise Unbatchable(key)
                fill = pad_id if key == "input_ids" else 0
                rows = [torch.nn.functional.pad(v, (width - v.shape[1], 0), value=fill) for v in values]
                out[key] = torch.cat(rows, dim=0)
            elif all(isinstance(v, torch.Tensor) for v in values):
                if len({tuple(v.shape[1:]) for v in values}) > 1:
                    raise Unbatchable(key)
                out[key] = torch.cat(values, dim=0)
            else:
                raise Unbatchable(key)
        return out

    # ---- generation -----------------------------------------------------------------------------

    def generate(self, items: list[dict[str, Any]], gen_key: tuple, pad_id: int) -> list[Generated]:
        """Generate for encoded prompts sharing `gen_key` = (max_new_tokens, temperature)."""
        import torch

        inputs = self.collate(items, pad_id)
        device, float_dtype = self.model.device, self.model.dtype
        for k, v in inputs.items():
            if isinstance(v, torch.Tensor):
                inputs[k] = v.to(device, dtype=float_dtype) if v.is_floating_point() else v.to(device)
        max_new, temperature = int(gen_key[0]), float(gen_key[1])
        kwargs: dict[str, Any] = {"max_new_tokens": max_new, "pad_token_id": pad_id,
                                  "return_dict_in_generate": True, "output_logits": self.want_logprobs}
        if temperature > 0:
            kwargs.update(do_sample=True, temperature=temperature)
            if self.seed is not None:
                torch.manual_seed(self.seed)
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        start = int(inputs["input_ids"].shape[1])
        with torch.inference_mode():  # the reused cache's tensors are inference tensors
            if self.compile:
                kwargs.update(self._compiled(len(items), start + max_new))
            out = self.model.generate(**inputs, **kwargs)
        new = out.sequences[:, start:]
        prompt_lens = inputs["attention_mask"].sum(dim=1).tolist()
        steps: list[tuple[list[float], list[list[float]], list[list[int]]]] | None = None
        if self.want_logprobs and out.logits:
            # one step at a time: a (batch, steps, vocab) stack would hold GBs for long answers
            steps = []
            for j, logits in enumerate(out.logits):
                lp = logits.float().log_softmax(dim=-1)
                top = lp.topk(min(self.top_logprobs, lp.shape[-1]), dim=-1)
                chosen = lp.gather(1, new[:, j:j + 1]).squeeze(1)
                steps.append((chosen.tolist(), top.values.tolist(), top.indices.tolist()))
        return [Generated(ids=ids, prompt_tokens=int(prompt_lens[i]),
                          steps=None if steps is None else [(s[0][i], s[1][i], s[2][i]) for s in steps])
                for i, ids in enumerate(new.tolist())]

    def _compiled(self, batch: int, needed: int) -> dict[str, Any]:
        """generate() arguments for the compiled path: a reused static cache and the compile settings."""
        from transformers import StaticCache
        from transformers.generation.configuration_utils import CompileConfig

        length = -(-needed // CACHE_BUCKET) * CACHE_BUCKET
        kept, cache = self._caches.get(batch, (0, None))
        if cache is None or kept < length:
            cache = StaticCache(config=self.model.config, max_cache_len=length)
            self._caches[batch] = (length, cache)
        else:
            cache.reset()
        if self._compile_config is None:  # one object: transformers compiles again when it changes
            if self.model.device.type == "cuda":
                self._compile_config = CompileConfig()  # transformers' default: CUDA graphs of the decode step
            else:  # tests on CPU: plain inductor; transformers compiles on other devices only when told to
                self._compile_config = CompileConfig(mode="default")
                self._compile_config._compile_all_devices = True  # private: None by default
        return {self._cache_kwarg: cache, "compile_config": self._compile_config}


def first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0] if "\n" in text else text


def default_device(args: dict[str, Any]) -> str:
    """Where a model with these arguments generates: its `device`, else cuda when there is one
    (also under `device_map`, which spreads it over the GPUs), else cpu."""
    if args.get("device") and not args.get("device_map"):
        return str(args["device"])
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"
