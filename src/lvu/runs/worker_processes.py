"""Decode worker processes that never outlive the run that started them.

`decode_pool` is the process pool of `lvu run --decode processes` and `lvu cache warm --workers N`:
spawned processes (no forked decoder state) that leave Ctrl-C to the run's own handling and exit
when their parent process dies, however it dies (kill -9 included): on Linux the kernel sends
them SIGKILL (PR_SET_PDEATHSIG); elsewhere a watcher thread sees the parent change. Once the workers
are gone, multiprocessing's resource tracker sees its pipe close and exits too.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
WATCH_INTERVAL = 1.0
"""Seconds between the watcher thread's looks at the parent (where there is no PR_SET_PDEATHSIG)."""


def decode_pool(workers: int) -> ProcessPoolExecutor:
    """`workers` spawned processes that ignore Ctrl-C and exit with this process."""
    from multiprocessing import get_context

    return ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn"), initializer=init_worker,
                               initargs=(os.getpid(),))


def init_worker(parent: int) -> None:
    """In each worker: Ctrl-C (sent to the whole process group) is the parent's to handle; the
    worker ends when `parent` does."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    exit_with_parent(parent)


def exit_with_parent(parent: int) -> None:
    if not _kernel_kills_on_parent_death():
        threading.Thread(target=_watch_parent, args=(parent,), name="lvu-parent-watch", daemon=True).start()
    if os.getppid() != parent:  # the parent died before the watch was set up
        os._exit(1)


def _kernel_kills_on_parent_death() -> bool:
    """Linux: ask for SIGKILL when the parent dies; False where that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(WATCH_INTERVAL)
    os._exit(1)
