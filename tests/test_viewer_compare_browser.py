"""The run list's comparison in headless Chromium: tick two runs, press compare, and the comparison
page shows both runs, the per-breakdown table with paired CIs and the samples where they differ.
The screenshot goes to docs/img/viewer-compare.png when LVU_DOCS_SCREENSHOTS=1 (test_review_browser.shoot)."""

from __future__ import annotations

import os
from urllib.parse import parse_qs, urlparse

import pytest

pytest.importorskip("fastapi", reason="the viewer needs lvu[web]")
pytest.importorskip("selenium.webdriver", reason="the browser test needs selenium (lvu[test])")

from browser_util import chrome, lvu_server, needs_chromium  # noqa: E402
from test_review_browser import css, shoot, wait  # noqa: E402
from test_viewer_compare import Runs  # noqa: E402

pytestmark = [needs_chromium, pytest.mark.slow]  # a real Chromium: docs/testing.md


def test_tick_two_runs_and_open_their_comparison(tmp_path):
    from selenium.webdriver.common.by import By

    runs = Runs(tmp_path / "store")
    env = {**os.environ, "LVU_CACHE_DIR": str(tmp_path / "cache")}
    with lvu_server(["view", "--results-dir", str(runs.dir), "--port", "0"], env) as (url, _), chrome("1280,1000") as driver:
        driver.get(url)
        for run_id in (runs.fake, runs.smart):
            css(driver, f"input[name=run][value='{run_id}']").click()
        css(driver, "#compare").click()
        wait(driver, lambda d: d.find_elements(By.ID, "cells"))
        assert set(parse_qs(urlparse(driver.current_url).query)["run"]) == {runs.fake, runs.smart}
        compared = [row.find_elements(By.TAG_NAME, "td")[2].text for row in driver.find_elements(By.CSS_SELECTOR, "tr.compared")]
        assert compared == ["openai(fake)", "openai(fake-smart)"]  # oldest first, whatever the list's order
        first = driver.find_elements(By.CSS_SELECTOR, "#cells tr.cell")[0].find_elements(By.TAG_NAME, "td")
        assert [td.text for td in first[:4]] == ["overall", "all", "40.0", "80.0"]
        assert first[4].text.startswith("40.0 [")  # Δ #2 − #1 with its interval
        differing = [row.find_element(By.TAG_NAME, "code").text for row in driver.find_elements(By.CSS_SELECTOR, "tr.differs")]
        assert differing == ["s4", "s5", "s6", "s7", "s9"]
        shoot(driver, tmp_path, "viewer-compare")
        driver.find_element(By.CSS_SELECTOR, f"tr.differs a[href='/runs/{runs.smart}/samples/s9']").click()
        wait(driver, lambda d: d.find_elements(By.ID, "traceback"))  # the failed sample's page, its traceback folded
        assert "IndexError" not in css(driver, "#traceback").text  # collapsed until opened
        css(driver, "#traceback summary").click()
        assert "IndexError: list index out of range" in css(driver, "#traceback").text
