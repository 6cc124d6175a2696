"""No test leaves a process behind (issue 22): the `no_leftover_processes` fixture in conftest.py.

The test process becomes a child subreaper (Linux PR_SET_CHILD_SUBREAPER), so a process orphaned by
a killed subprocess (a decode worker of a `lvu run` the test SIGKILLed) is re-parented to it rather
than to PID 1, and shows up as its child. After each test, children that were not there before it
get a few seconds to exit; any still alive then are killed and fail the test.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>
GRACE = 15.0
"""Seconds a test's children get to exit after it (pools shut down without waiting, servers closing)."""
LASTING = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")
"""Helpers multiprocessing starts once and keeps for the life of the test process."""

AVAILABLE = sys.platform.startswith("linux") and Path("/proc/self/stat").exists()


def become_subreaper() -> bool:
    if not AVAILABLE:
        return False
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, state letter) of a process, None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # after "pid (comm) ": state, ppid, ...
    return int(fields[1]), fields[0]


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def children() -> dict[int, str]:
    """This process's live children (zombies reaped on the way): pid -> state letter."""
    me, found = os.getpid(), {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        info = _stat(pid)
        if info is None or info[0] != me:
            continue
        if info[1] == "Z":
            _reap(pid)
            continue
        found[pid] = info[1]
    return found


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def leftovers(before: set[int]) -> dict[int, str]:
    """Children that were not there before the test and are still alive after GRACE seconds:
    pid -> command line (multiprocessing's lasting helpers excepted)."""
    deadline = time.monotonic() + GRACE
    while True:
        new = {pid: command_line(pid) for pid in children() if pid not in before}
        new = {pid: cmd for pid, cmd in new.items() if not any(name in cmd for name in LASTING)}
        if not new or time.monotonic() > deadline:
            return new
        time.sleep(0.1)


def kill(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    time.sleep(0.2)
    children()  # reaps them
