"""The hf backend's generation process: a `Generator` alone in an interpreter of its own.

In-process, a 7B model's decode loop at batch 1 is bound by Python kernel launches, and every
other thread of a run (frame decoding, prompt encoding, the event loop, progress) takes the
interpreter lock from it: the same `generate` measured 16–23 % slower inside a run than alone on
an H200. `GeneratorProcess` starts `python -m lvu.models.hf_worker`, which loads the model and
does nothing but generate; the run's process keeps decoding and encoding beside it.

A plain subprocess rather than multiprocessing's spawn: spawn imports the caller's main module
again, which breaks every script without an `if __name__ == "__main__":` guard.

Requests travel over a socket pair as pickles. Tensors of 1 MiB or more (a prompt's pixels) are
copied once into POSIX shared memory and only their names travel; the child maps them, the
parent frees them when the reply comes (or its resource tracker does, if the parent dies). One
request is in flight at a time: the backend's batcher generates one batch at a time. The child
exits when the socket closes, which also happens when the run's process dies.
"""

from __future__ import annotations

import os
import pickle
import socket
import subprocess
import sys
import threading
import traceback
from dataclasses import dataclass
from multiprocessing import resource_tracker
from multiprocessing.connection import Connection
from multiprocessing.shared_memory import SharedMemory
from pathlib import Path
from typing import Any

from lvu.errors import LvuError
from lvu.models.hf_generate import Generated, Unbatchable, first_line

SHARED_MIN_BYTES = 1 << 20
"""Tensors at least this large go through shared memory instead of the socket."""


class WorkerDied(Exception):
    """The generation process ended without answering."""


@dataclass(frozen=True)
class _Shared:
    """A tensor left in a shared-memory segment: what the child needs to map it."""

    name: str
    shape: tuple[int, ...]
    dtype: str


class GeneratorProcess:
    """A `Generator` in a process of its own, with the same `info` and `generate(...)`."""

    def __init__(self, model_id: str, args: dict[str, Any]) -> None:
        mine, theirs = socket.socketpair()
        env = dict(os.environ)
        src = str(Path(__file__).resolve().parents[2])  # the folder lvu is imported from
        env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
        self._process = subprocess.Popen(
            [sys.executable, "-m", "lvu.models.hf_worker", str(theirs.fileno())],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, env=env)
        theirs.close()
        self._conn = Connection(mine.detach())
        self._lock = threading.Lock()
        self._send(("load", model_id, args))
        kind, value = self._receive()
        if kind != "ready":
            self.close()
            raise LvuError(value)
        self.info: dict[str, Any] = value

    def generate(self, items: list[dict[str, Any]], gen_key: tuple, pad_id: int) -> list[Generated]:
        with self._lock:
            packed, segments = _pack(items)
            try:
                self._send(("generate", packed, gen_key, pad_id))
                kind, value = self._receive()
            finally:
                for shm in segments:
                    shm.close()
                    shm.unlink()
        if kind == "unbatchable":
            raise Unbatchable(value)
        if kind == "error":
            raise RuntimeError(value)
        return value

    def _send(self, message: tuple) -> None:
        try:
            self._conn.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))
        except (OSError, ValueError) as e:
            raise WorkerDied(self._death(e)) from None

    def _receive(self) -> tuple[str, Any]:
        try:
            return pickle.loads(self._conn.recv_bytes())
        except (EOFError, OSError) as e:
            raise WorkerDied(self._death(e)) from None

    def _death(self, e: BaseException) -> str:
        try:
            code = self._process.wait(5)
        except subprocess.TimeoutExpired:
            code = None
        why = "killed, e.g. out of host memory" if code == -9 else f"exit code {code}"
        return (f"hf: the generation process ended ({why}; {type(e).__name__}) — "
                f"the run keeps what it finished: run the same command again to resume")

    def close(self) -> None:
        self._conn.close()
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(5)


def _pack(items: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[SharedMemory]]:
    """The items with every large tensor moved into a new shared-memory segment."""
    import torch

    segments: list[SharedMemory] = []
    packed = []
    for item in items:
        out: dict[str, Any] = {}
        for key, value in item.items():
            size = value.numel() * value.element_size() if isinstance(value, torch.Tensor) else 0
            if size >= SHARED_MIN_BYTES:
                shm = SharedMemory(create=True, size=size)
                segments.append(shm)
                torch.frombuffer(shm.buf, dtype=value.dtype, count=value.numel()).copy_(value.reshape(-1))
                out[key] = _Shared(shm.name, tuple(value.shape), str(value.dtype).removeprefix("torch."))
            else:
                out[key] = value
        packed.append(out)
    return packed, segments


def _unpack(items: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[SharedMemory]]:
    """The child's view of packed items: shared tensors mapped in place (no copy)."""
    import torch

    segments: list[SharedMemory] = []
    out = []
    for item in items:
        mapped: dict[str, Any] = {}
        for key, value in item.items():
            if isinstance(value, _Shared):
                shm = SharedMemory(name=value.name)
                # the parent owns the segment: this process's tracker must not unlink it at exit
                resource_tracker.unregister(shm._name, "shared_memory")  # type: ignore[attr-defined]
                segments.append(shm)
                dtype = getattr(torch, value.dtype)
                count = 1
                for n in value.shape:
                    count *= n
                value = torch.frombuffer(shm.buf, dtype=dtype, count=count).view(value.shape)
            mapped[key] = value
        out.append(mapped)
    return out, segments


def serve(conn: Connection) -> None:
    """The child: load, say ready (or why not), then answer generate requests until the socket closes."""
    from lvu.models.hf_generate import Generator

    def send(message: tuple) -> bool:
        try:
            conn.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))
            return True
        except (OSError, ValueError):
            return False

    try:
        _, model_id, args = pickle.loads(conn.recv_bytes())
    except (EOFError, OSError):
        return
    try:
        generator = Generator(model_id, args)
    except LvuError as e:
        send(("error", str(e)))
        return
    except Exception as e:
        send(("error", f"hf: loading {model_id!r} failed: {type(e).__name__}: {first_line(e)}"))
        return
    if not send(("ready", generator.info)):
        return
    while True:
        try:
            _, packed, gen_key, pad_id = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError):
            return  # the run's process closed the socket or died
        items, segments = _unpack(packed)
        try:
            reply: tuple[str, Any] = ("done", generator.generate(items, gen_key, pad_id))
        except Unbatchable as e:
            reply = ("unbatchable", str(e))
        except Exception as e:
            reply = ("error", f"{type(e).__name__}: {first_line(e)}")
            traceback.print_exc()
        del items, packed  # the mapped tensors, before their segments close
        for shm in segments:
            try:
                shm.close()
            except BufferError:  # a view is still alive somewhere: the mapping goes with the process
                pass
        if not send(reply):
            return


if __name__ == "__main__":
    # the module's own copy of serve: pickles name lvu.models.hf_worker._Shared, not __main__._Shared
    from lvu.models import hf_worker

    hf_worker.serve(Connection(int(sys.argv[1])))
