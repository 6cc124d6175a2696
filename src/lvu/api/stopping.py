"""How the `lvu` command stops: a SIGTERM is recorded as the signal that stopped the process (the
runners then stop as after Ctrl-C), the exit code says which signal it was, and within
`bounded_exit` the first stop bounds the whole exit. Light on purpose: the command's entry point
imports it for every command, `lvu --help` included (lvu.runs.stage_runner holds the state)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["bounded_exit", "note_stop_signal", "stop_signal"]


def note_stop_signal(signum: int) -> None:
    """Record the signal (SIGTERM) that is stopping the process, so the runners stop as after Ctrl-C
    and the exit code says which (`stop_signal`)."""
    from lvu.runs import stage_runner

    stage_runner.last_stop_signal = signum


def stop_signal() -> int | None:
    """The signal that stopped a runner in this process (SIGINT, SIGTERM), None when none did."""
    from lvu.runs import stage_runner

    return stage_runner.last_stop_signal


@contextmanager
def bounded_exit() -> Iterator[None]:
    """Within it, the first stop signal bounds the whole exit (the runners' grace plus a margin),
    as the `lvu` command wants; a library caller's process is left alone outside it."""
    from lvu.runs import stage_runner

    bound, stage_runner.exit_bound = stage_runner.exit_bound, stage_runner.EXIT_MARGIN
    try:
        yield
    finally:
        stage_runner.exit_bound = bound
