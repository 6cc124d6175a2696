"""What the browser tests share: Debian's Chromium + chromedriver through Selenium (the tests skip,
saying so, without them), a server command started the way a user starts it, and screenshot checks."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
CHROMEDRIVER = shutil.which("chromedriver")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="no Chromium + chromedriver on PATH (Debian: apt-get install chromium chromium-driver)",
)


@contextmanager
def chrome(window: str = "1280,1400") -> Iterator:
    """A headless Chromium driven by Selenium; media may play without a user gesture."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={window}", "--force-device-scale-factor=1", "--hide-scrollbars",
                "--autoplay-policy=no-user-gesture-required", "--mute-audio"):
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


@contextmanager
def lvu_server(args: list[str], env: dict[str, str]) -> Iterator[tuple[str, subprocess.Popen]]:
    """`lvu ARGS` in a subprocess; yields the URL its first line prints (once the socket listens)
    and the process (read more of its stdout there); stops it at the end."""
    proc = subprocess.Popen([sys.executable, "-m", "lvu.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        if "http://127.0.0.1:" not in line:
            proc.terminate()
            pytest.fail(f"lvu {args[0]} printed {line!r}; stderr: {proc.communicate(timeout=10)[1]}")
        yield line.split(" at ", 1)[1].split()[0], proc
    finally:
        proc.terminate()
        proc.wait(10)
        proc.stdout.close()
        proc.stderr.close()


def screenshot(driver, out: Path, name: str) -> np.ndarray:
    from PIL import Image

    png = driver.get_screenshot_as_png()
    (out / f"{name}.png").write_bytes(png)
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


def element_pixels(driver, shot: np.ndarray, element) -> np.ndarray:
    """The part of a screenshot an element covers."""
    rect = driver.execute_script(
        "const r = arguments[0].getBoundingClientRect(); return [r.left, r.top, r.width, r.height, devicePixelRatio]",
        element)
    left, top, width, height, ratio = (float(v) for v in rect)
    return shot[round(top * ratio):round((top + height) * ratio), round(left * ratio):round((left + width) * ratio)]


def assert_not_blank(shot: np.ndarray) -> None:
    gray = shot.mean(axis=2)
    assert gray.std() > 12, f"screenshot looks blank (grey-level std {gray.std():.1f})"
    assert len(np.unique(shot.reshape(-1, 3), axis=0)) > 50, "screenshot has almost no distinct colours"
