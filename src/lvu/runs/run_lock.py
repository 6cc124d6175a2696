"""One process per run: an advisory lock file per run id, `<results-dir>/locks/<run_id>.lock`.

`lvu run` (either executor) and `lvu import` lock the run in `Store.begin_run` and unlock it in
`Store.finish_run` (or when the store closes, or the process dies: the kernel drops the lock, so a
kill -9 never leaves a stale lock behind). A second process on the same run is refused with
`RunInProgress` ("run X is in progress (pid N) ...") instead of paying for the same samples
again; since it never starts, it can never mark a run `done` that the first is still running.

Readers probe the lock (`is_held`) to tell a live `running` run from one whose process died (a
kill -9, a full disk that could not store the final status): `Store.runs` shows the latter as
`interrupted`. The lock is `flock`, so it holds across processes and across open files of one
process; where there is no `fcntl` (Windows) runs are not locked.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

from lvu.errors import LvuError

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; runs are not guarded
    fcntl = None  # type: ignore[assignment]

LOCK_DIR = "locks"
ACQUIRE_TRIES = 10
"""A reader's probe holds the lock shared for a moment: retry (50 ms apart) before refusing."""


class RunInProgress(LvuError):
    """Another process is running this run now."""


class RunLocks:
    """The run locks this store holds, by run id (re-entrant: one store may begin a run twice)."""

    def __init__(self, results_dir: Path) -> None:
        self.dir = results_dir / LOCK_DIR
        self.held: dict[str, int] = {}

    def _path(self, run_id: str) -> Path:
        return self.dir / f"{run_id}.lock"

    def acquire(self, run_id: str, busy: str | None = None) -> None:
        """Lock `run_id` for this process, or raise RunInProgress naming the process that has it
        (`busy`: the message, with `{owner}` for "pid N"; default: the run's)."""
        if fcntl is None or run_id in self.held:
            return
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(self._path(run_id), os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise LvuError(f"{self._path(run_id)}: cannot create the run's lock file ({e.strerror}) — "
                           "pass a writable --results-dir") from None
        for attempt in range(ACQUIRE_TRIES):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if attempt + 1 < ACQUIRE_TRIES:
                    time.sleep(0.05)
        else:
            owner = _owner(fd)
            os.close(fd)
            raise RunInProgress((busy or "run {run_id} is in progress ({owner}) — wait for it to finish, or use "
                                 "another --results-dir to run it separately").format(run_id=run_id, owner=owner))
        try:  # who holds it, for the message above (best effort: a full disk cannot take even this)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()} {socket.gethostname()}\n".encode(), 0)
        except OSError:
            pass
        self.held[run_id] = fd

    def release(self, run_id: str) -> None:
        """Unlock `run_id` if this store holds it. The file stays: deleting it would race with a
        process that opened it to lock it."""
        fd = self.held.pop(run_id, None)
        if fd is not None:
            os.close(fd)  # closing drops the flock

    def release_all(self) -> None:
        for run_id in list(self.held):
            self.release(run_id)

    def is_held(self, run_id: str) -> bool:
        """Whether some process (this one included) is running `run_id` now."""
        if fcntl is None:
            return True  # cannot tell: trust the stored status
        if run_id in self.held:
            return True
        try:
            fd = os.open(self._path(run_id), os.O_RDONLY)
        except OSError:
            return False  # never locked: no lvu that locks runs is running it
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return False
        except BlockingIOError:
            return True
        finally:
            os.close(fd)


def _owner(fd: int) -> str:
    """'pid N' (and the host when it is another machine) from a held lock file."""
    try:
        pid, _, host = os.pread(fd, 200, 0).decode(errors="replace").strip().partition(" ")
    except OSError:
        return "another process"
    if not pid.isdigit():
        return "another process"
    return f"pid {pid}" + (f" on {host}" if host and host != socket.gethostname() else "")
