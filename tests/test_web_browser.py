"""`lvu view` in a real browser: headless Chromium (Debian's chromium + chromedriver, via Selenium)
walks runs → run → sample on a server started by the command itself, and the screenshots are
checked for real content — text, loaded frame images, and frame pixels that match the served JPEG."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("fastapi", reason="the viewer needs lvu[web]")
webdriver = pytest.importorskip("selenium.webdriver", reason="the browser test needs selenium (lvu[test])")
from PIL import Image  # noqa: E402

from lvu.media.testing import read_index  # noqa: E402
from web_store import WebStore, build, stored  # noqa: E402

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
CHROMEDRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="no Chromium + chromedriver on PATH (Debian: apt-get install chromium chromium-driver)",
)


@pytest.fixture(scope="module")
def web(tmp_path_factory) -> WebStore:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LVU_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        yield build(tmp_path_factory.mktemp("web"))


@pytest.fixture(scope="module")
def server(web: WebStore, tmp_path_factory):
    """`lvu view --port 0` in a subprocess; yields the URL it prints."""
    env = {**os.environ, "LVU_CACHE_DIR": str(tmp_path_factory.mktemp("view-cache"))}
    proc = subprocess.Popen([sys.executable, "-m", "lvu.cli", "view", "--results-dir", str(web.results_dir),
                             "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()  # printed once the socket listens
        if "http://127.0.0.1:" not in line:
            proc.terminate()
            pytest.fail(f"lvu view printed {line!r}; stderr: {proc.communicate(timeout=10)[1]}")
        yield line.split(" at ", 1)[1].split()[0]
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="module")
def browser():
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,1400", "--force-device-scale-factor=1", "--hide-scrollbars"):
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def screenshot(driver, out: Path, name: str) -> np.ndarray:
    png = driver.get_screenshot_as_png()
    (out / f"{name}.png").write_bytes(png)
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


def assert_not_blank(shot: np.ndarray) -> None:
    gray = shot.mean(axis=2)
    assert gray.std() > 12, f"screenshot looks blank (grey-level std {gray.std():.1f})"
    assert len(np.unique(shot.reshape(-1, 3), axis=0)) > 50, "screenshot has almost no distinct colours"


def test_runs_run_and_sample_pages_in_chromium(web, server, browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(server)
    body = browser.find_element(By.TAG_NAME, "body").text
    assert web.full in body and web.small in body and "fake-follow" in body
    assert_not_blank(screenshot(browser, tmp_path, "runs"))

    browser.find_element(By.LINK_TEXT, web.full).click()
    WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.ID, "run-id"))
    info, results = stored(web.results_dir, web.full)
    body = browser.find_element(By.TAG_NAME, "body").text
    assert browser.find_element(By.ID, "run-id").text == web.full
    assert "jsonl × fake-follow" in body and all(r.sample_id in body for r in results)
    assert_not_blank(screenshot(browser, tmp_path, "run"))

    record = next(r for r in results if r.sample_id == "set/s3")
    browser.find_element(By.LINK_TEXT, "set/s3").click()
    WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.ID, "sample-id"))
    body = browser.find_element(By.TAG_NAME, "body").text
    assert "How many pauses? pick D" in body and "a quiet pause" in body and record.response in body
    images = browser.find_elements(By.CSS_SELECTOR, ".timeline img")
    assert len(images) == len(record.frame_timestamps) > 0
    WebDriverWait(browser, 60).until(
        lambda d: d.execute_script("return [...document.images].every(i => i.complete)"))
    widths = browser.execute_script("return [...document.querySelectorAll('.timeline img')].map(i => i.naturalWidth)")
    assert all(w > 0 for w in widths), f"frames that did not load: {widths}"

    # The first frame on screen is the served JPEG: same pixels (roughly) and the same barcode.
    first = images[0]
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", first)
    rect = browser.execute_script(
        "const r = arguments[0].getBoundingClientRect(); return [r.left, r.top, r.width, r.height, devicePixelRatio]",
        first)
    shot = screenshot(browser, tmp_path, "sample")
    assert_not_blank(shot)
    left, top, width, height, ratio = (float(v) for v in rect)
    crop = shot[round(top * ratio):round((top + height) * ratio), round(left * ratio):round((left + width) * ratio)]
    src = first.get_attribute("src")
    with urllib.request.urlopen(src, timeout=30) as response:
        served = Image.open(io.BytesIO(response.read())).convert("RGB")
    expected = np.asarray(served.resize((crop.shape[1], crop.shape[0]), Image.BILINEAR))
    diff = np.abs(crop.astype(int) - expected.astype(int)).mean()
    assert diff < 20, f"the frame on screen differs from the served JPEG by {diff:.1f} grey levels on average"
    t = record.frame_timestamps[0]
    assert read_index(crop) == max(i for i, x in enumerate(web.video.times) if x <= t + 1e-6)
