"""`lvu view`: serve the results viewer with uvicorn (fastapi and uvicorn are lvu dependencies)."""

from __future__ import annotations

import errno
import socket
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from lvu.errors import LvuError

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (port 0: a free one), or a one-line error saying what to do."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise LvuError(f"port {port} on {host} is in use — pass another --port (or --port 0 for a free one)") from e
        raise LvuError(f"cannot listen on {host}:{port} ({e.strerror}) — check --host and --port") from e
    sock.listen(128)
    return sock


def view(
    results_dir: Annotated[Optional[Path], typer.Option(
        "--results-dir", help="Where runs are stored (default: $LVU_RESULTS_DIR or ./lvu-results).")] = None,
    port: Annotated[int, typer.Option(help="Port to listen on (0: any free port).")] = 8765,
    host: Annotated[str, typer.Option(help="Address to bind; the default serves this machine only.")] = "127.0.0.1",
    open_browser: Annotated[bool, typer.Option("--open", help="Open the viewer in a web browser.")] = False,
) -> None:
    """Browse stored runs in a local web viewer: runs, breakdown tables, and every sample's frames,
    subtitle cues, exact prompt, raw response, prediction and score."""
    try:
        import uvicorn

        from lvu.web.app import create_app
    except ImportError as e:
        raise LvuError(f"the viewer needs {e.name}, a dependency of lvu that is missing here — pip install fastapi uvicorn") from e
    from lvu.runs.store import default_results_dir

    directory = results_dir if results_dir is not None else default_results_dir()
    # Bound to loopback, also refuse other Host names: a web page elsewhere cannot reach it by DNS rebinding.
    hosts = ["127.0.0.1", "localhost"] if host in ("127.0.0.1", "localhost") else None
    app = create_app(directory, allowed_hosts=hosts)
    sock = bind(host, port)
    actual = sock.getsockname()[1]
    url = f"http://{'[' + host + ']' if ':' in host else host}:{actual}/"
    print(f"lvu viewer for {directory} at {url} — Ctrl-C to stop", flush=True)
    if host not in LOOPBACK:
        print(f"warning: bound to {host}: anyone who can reach this machine can read these runs", file=sys.stderr)
    if open_browser:
        import webbrowser

        webbrowser.open(url)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    server.run(sockets=[sock])
