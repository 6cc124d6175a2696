"""`lvu view` in a real browser: headless Chromium (Debian's chromium + chromedriver, via Selenium)
walks runs → run → sample on a server started by the command itself, and the screenshots are
checked for real content — text, loaded frame images, and frame pixels that match the served JPEG."""

from __future__ import annotations

import io
import os
import urllib.request

import numpy as np
import pytest

pytest.importorskip("fastapi", reason="the viewer needs lvu[web]")
webdriver = pytest.importorskip("selenium.webdriver", reason="the browser test needs selenium (lvu[test])")
from PIL import Image  # noqa: E402

from browser_util import assert_not_blank, chrome, element_pixels, lvu_server, needs_chromium, screenshot  # noqa: E402
from lvu.media.testing import read_index  # noqa: E402
from web_store import WebStore, build, stored  # noqa: E402

pytestmark = [needs_chromium, pytest.mark.slow]  # a real Chromium: docs/testing.md


@pytest.fixture(scope="module")
def web(tmp_path_factory) -> WebStore:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LVU_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        yield build(tmp_path_factory.mktemp("web"))


@pytest.fixture(scope="module")
def server(web: WebStore, tmp_path_factory):
    """`lvu view --port 0` in a subprocess; yields the URL it prints."""
    env = {**os.environ, "LVU_CACHE_DIR": str(tmp_path_factory.mktemp("view-cache"))}
    with lvu_server(["view", "--results-dir", str(web.results_dir), "--port", "0"], env) as (url, _):
        yield url


@pytest.fixture(scope="module")
def browser():
    with chrome() as driver:
        yield driver


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
    assert "jsonl(web.jsonl) × fake-follow" in body and all(r.sample_id in body for r in results)
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
    shot = screenshot(browser, tmp_path, "sample")
    assert_not_blank(shot)
    crop = element_pixels(browser, shot, first)
    src = first.get_attribute("src")
    with urllib.request.urlopen(src, timeout=30) as response:
        served = Image.open(io.BytesIO(response.read())).convert("RGB")
    expected = np.asarray(served.resize((crop.shape[1], crop.shape[0]), Image.BILINEAR))
    diff = np.abs(crop.astype(int) - expected.astype(int)).mean()
    assert diff < 20, f"the frame on screen differs from the served JPEG by {diff:.1f} grey levels on average"
    t = record.frame_timestamps[0]
    assert read_index(crop) == max(i for i, x in enumerate(web.video.times) if x <= t + 1e-6)
