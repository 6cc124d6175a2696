"""LongVideoBench's review in a real browser (headless Chromium + Selenium, skipped without them):
`lvu review --protocol longvideobench` as a user starts it; the writer selects the referring query
in the question text and marks a referred moment with the player's current time; the examiner sees
the query highlighted, edits the question text (the highlight follows its words) and the category,
and rejects it to the reviser; the reviser rewrites an option and accepts. `lvu review export`
then writes lvb_val.json, and `lvu run -b longvideobench` runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("fastapi", reason="the review app needs fastapi")
pytest.importorskip("selenium.webdriver", reason="the browser test needs selenium (lvu[test])")

from browser_util import chrome, lvu_server, needs_chromium  # noqa: E402
from review_toy import QUESTIONS, build  # noqa: E402
from test_review_browser import css, shoot, status_is, wait  # noqa: E402

pytestmark = [needs_chromium, pytest.mark.slow]  # a real Chromium: docs/testing.md
QUERY = "after it enters at 00:05"
EDITED = "Right after it enters at 00:05, what does the fox do on the stage?"
NEW_OPTION = "It crosses the stage and goes off on the other side."


def at_time(driver, seconds: float) -> None:
    """Put the player at `seconds` (as dragging its bar does) and wait until it is there."""
    video = css(driver, "#video")
    wait(driver, lambda d: d.execute_script("return arguments[0].readyState >= 1", video))
    driver.execute_script("arguments[0].pause(); arguments[0].currentTime = arguments[1]", video, seconds)
    wait(driver, lambda d: d.execute_script(
        "return !arguments[0].seeking && Math.abs(arguments[0].currentTime - arguments[1]) < 0.01", video, seconds))


def select_in_question(driver, words: str) -> None:
    """Select `words` in the question box, as a drag with the mouse does."""
    box = css(driver, "#edit-question")
    text = box.get_attribute("value")
    start = text.index(words)
    driver.execute_script("arguments[0].focus(); arguments[0].setSelectionRange(arguments[1], arguments[2])",
                          box, start, start + len(words))


def choose_category(driver, code: str) -> None:
    from selenium.webdriver.support.ui import Select

    Select(css(driver, "#category")).select_by_value(code)


def test_writer_examiner_reviser_in_chromium(tmp_path):
    toy = build(tmp_path)
    out = tmp_path / "shots"
    out.mkdir()
    db = tmp_path / "review.sqlite"
    env = {**os.environ, "LVU_CACHE_DIR": str(tmp_path / "cache"), "LVU_OFFLINE": "1"}
    args = ["review", str(toy.data), "--protocol", "longvideobench", "--role", "writer=ann", "--role", "examiner=eve",
            "--role", "reviser=rob", "--port", "0", "--db", str(db)]
    with lvu_server(args, env) as (url, proc), chrome("1400,1500") as driver:
        links = {}
        for _ in range(3):
            line = proc.stdout.readline().strip()
            links[line.split()[0]] = line.rsplit(" ", 1)[1]
        assert set(links) == {"ann", "eve", "rob"}

        # the writer: highlight the referring query, mark the referred moment, choose the category
        driver.get(links["ann"])
        css(driver, "#next-writer").click()
        wait(driver, lambda d: css(d, "#item-id").text == "clip/1")
        select_in_question(driver, QUERY)
        css(driver, "#mark-query").click()
        assert css(driver, "#query-shown").text == QUERY
        at_time(driver, 5.0)
        css(driver, "#mark-start").click()
        at_time(driver, 7.5)
        css(driver, "#mark-end").click()
        assert css(driver, "#moments li").text.startswith("▶ 5.0–7.5 s")
        choose_category(driver, "E3E")
        status_is(driver, "draft saved")
        css(driver, "#accept").click()
        status_is(driver, "accepted")
        shoot(driver, out, "review-lvb-writer")

        # the examiner: the query shown highlighted; edits the question and the category; rejects
        driver.get(links["eve"])
        css(driver, "#next-examiner").click()
        wait(driver, lambda d: css(d, "#item-id").text == "clip/1")
        assert css(driver, "mark#referring-query").text == QUERY
        assert not driver.find_elements("css selector", "#mark-start")  # the examiner does not move moments
        box = css(driver, "#edit-question")
        box.clear()
        box.send_keys(EDITED)
        assert css(driver, "#query-shown").text == QUERY  # the highlight followed its words
        choose_category(driver, "E2O")
        css(driver, "#reason").send_keys("the correct option is vague")
        css(driver, "#reject").click()
        status_is(driver, "rejected")

        # the reviser: the examiner's question, highlighted, with the reason; rewrites the answer option
        driver.get(links["rob"])
        css(driver, "#next-reviser").click()
        wait(driver, lambda d: css(d, "#item-id").text == "clip/1")
        assert css(driver, "#question-text").text == EDITED and css(driver, "mark#referring-query").text == QUERY
        assert "the correct option is vague" in css(driver, "#earlier").text
        correct = css(driver, "input[name=correct]:checked")
        option = correct.find_element("xpath", "following-sibling::input")
        assert option.get_attribute("value") == QUESTIONS[0][2]
        option.clear()
        option.send_keys(NEW_OPTION)
        css(driver, "#accept").click()
        status_is(driver, "accepted")

    final = tmp_path / "final"
    done = subprocess.run([sys.executable, "-m", "lvu.cli", "review", "export", str(toy.data), "-o", str(final),
                           "--db", str(db)], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert "longvideobench protocol: 1 accepted, 0 rejected, 3 pending" in done.stdout
    [record] = json.loads((final / "lvb_val.json").read_text())
    assert record["question"] == EDITED and record["question_category"] == "E2O" and record["level"] == "L1-Perception"
    assert record["question_wo_referring_query"] == "Right, what does the fox do on the stage?"
    assert record["candidates"][record["correct_choice"]] == NEW_OPTION
    assert record["referred_moments"] == [[5.0, 7.5]] and record["position"] == [62]
    run = subprocess.run([sys.executable, "-m", "lvu.cli", "run", "-b", "longvideobench", "--data", str(final),
                          "-m", "random", "--results-dir", str(tmp_path / "res"), "--no-report"],
                         capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0 and "1 samples, 0 failed" in run.stdout, run.stdout + run.stderr
