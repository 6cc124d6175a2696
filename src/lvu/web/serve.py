"""Serving lvu's web apps with uvicorn (fastapi and uvicorn are lvu dependencies): the results
viewer (`view`, which `lvu view` runs through lvu.api.review) and the sockets, Host checks and
warnings the review app shares."""

from __future__ import annotations

import errno
import ipaddress
import socket
import sys
from pathlib import Path
from typing import Any

from lvu.errors import LvuError


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


def view(results_dir: str | Path | None = None, port: int = 8765, host: str = "127.0.0.1",
         open_browser: bool = False) -> None:
    """Browse stored runs in a local web viewer: runs, breakdown tables, and every sample's frames,
    subtitle cues, exact prompt, raw response, prediction and score."""
    try:
        import uvicorn  # noqa: F401  (checked here: a missing one is a one-line error)

        from lvu.web.app import create_app
    except ImportError as e:
        raise LvuError(f"the viewer needs {e.name}, a dependency of lvu that is missing here — pip install fastapi uvicorn") from e
    from lvu.runs.store import existing_results, location_line

    directory, why = existing_results(results_dir)  # no store there: one line saying where lvu looked
    print(location_line(directory, why), file=sys.stderr)
    app = create_app(directory, allowed_hosts=allowed_hosts(host))
    sock, url = listen(host, port)
    print(f"lvu viewer for {directory} at {url} — Ctrl-C to stop", flush=True)
    warn_if_exposed(host, "can read these runs")
    serve_forever(app, sock, open_url=url if open_browser else None)


def is_loopback(host: str) -> bool:
    """localhost, 127.0.0.0/8 or ::1: only this machine can connect."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_hosts(host: str) -> list[str] | None:
    """Bound to loopback (IPv6 ::1 and all of 127/8 too), also refuse other Host names: a web page
    elsewhere cannot reach the server by DNS rebinding. None (no check) for other binds."""
    if not is_loopback(host):
        return None
    bound = f"[{host.strip('[]')}]" if ":" in host else host  # how a Host header names an IPv6 address
    return list(dict.fromkeys([bound.lower(), "127.0.0.1", "localhost", "[::1]"]))


def listen(host: str, port: int) -> tuple[socket.socket, str]:
    """A listening socket (`bind`) and the URL it serves."""
    sock = bind(host, port)
    return sock, f"http://{'[' + host + ']' if ':' in host else host}:{sock.getsockname()[1]}/"


def warn_if_exposed(host: str, what: str) -> None:
    """One warning line on stderr when `host` is not loopback: anyone who reaches it `what`."""
    if not is_loopback(host):
        print(f"warning: bound to {host}: anyone who can reach this machine {what}", file=sys.stderr)


def serve_forever(app: Any, sock: socket.socket, *, open_url: str | None = None) -> None:
    """Serve `app` on `sock` with uvicorn until Ctrl-C (opening `open_url` in a browser first)."""
    import uvicorn

    if open_url:
        import webbrowser

        webbrowser.open(open_url)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
