"""A disk cache of model responses keyed by a hash of the request, so that an identical request
(same model, settings, text and pixels) is never paid for twice — across runs and processes.

The request a backend hashes must describe everything that changes the answer and nothing
secret (never an API key). Bytes (JPEGs, uploaded files) are hashed, not stored. Only successful
responses are cached. One JSON file per key, written atomically (temp file + rename), so
concurrent writers are safe and a broken entry is just a miss.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any

from lvu.args import as_cache
from lvu.paths import cache_dir
from lvu.types import Response

VERSION = 1


def _canonical(obj: Any) -> Any:
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return {"__bytes__": hashlib.sha256(bytes(obj)).hexdigest()}
    if isinstance(obj, dict):
        return {str(k): _canonical(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_canonical(v) for v in obj]
    if hasattr(obj, "model_dump"):  # pydantic models (SDK request types)
        return _canonical(obj.model_dump(mode="python", exclude_none=True))
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    return str(obj)


def request_key(request: Any) -> str:
    """Stable hex digest of a request description (dicts, lists, pydantic models, bytes)."""
    blob = json.dumps({"v": VERSION, "request": _canonical(request)}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def resolve_cache_dir(setting: Any, *parts: str, owner: str = "") -> Path | None:
    """A backend's `cache` argument (`lvu.args.as_cache`): true/None -> the default dir
    `<cache>/<parts>`, false/no/0/none/off in any case -> no cache, anything else -> that directory."""
    cache = as_cache(owner, "cache", setting)
    if cache is False:
        return None
    return cache_dir(*parts) if cache is True else cache


class ResponseCache:
    """Request hash -> Response. `ResponseCache(None)` caches nothing (every get misses)."""

    def __init__(self, root: Path | None) -> None:
        self.root = root
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()

    def key(self, request: Any) -> str:
        return request_key(request)

    def _path(self, key: str) -> Path:
        assert self.root is not None
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Response | None:
        if self.root is None:
            return None
        try:
            response = Response.model_validate_json(self._path(key).read_text())
        except (OSError, ValueError):
            with self._lock:
                self.misses += 1
            return None
        with self._lock:
            self.hits += 1
        return response

    def put(self, key: str, response: Response) -> None:
        """Store a successful response (errors are never cached: a retry should really retry)."""
        if self.root is None or response.error is not None:
            return
        path = self._path(key)
        tmp = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(response.model_dump_json())
            os.replace(tmp, path)
        except OSError:  # a read-only cache only costs money, not correctness
            tmp.unlink(missing_ok=True)
