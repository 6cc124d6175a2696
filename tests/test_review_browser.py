"""`lvu review` in a real browser, a team of three on one machine: headless Chromium (Debian's
chromium + chromedriver, via Selenium) against the server the command starts. alice opens her
queue, watches the video from the evidence (currentTime advances, the frame on screen is the one
at that time), corrects an answer, picks 4 decoys with keys and clicks, accepts, and rejects the
next question; bob disagrees on both; carol, the examiner, sees the disagreements and resolves
them; `lvu review export` then holds exactly carol's decisions. Screenshots are saved in the
test's folder (and copied to docs/img/ when LVU_DOCS_SCREENSHOTS=1) and checked for content."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the review app needs fastapi")
pytest.importorskip("selenium.webdriver", reason="the browser test needs selenium (lvu[test])")

from browser_util import assert_not_blank, chrome, element_pixels, lvu_server, needs_chromium, screenshot  # noqa: E402
from lvu.media.testing import read_index  # noqa: E402
from review_toy import QUESTIONS, build  # noqa: E402

pytestmark = [needs_chromium, pytest.mark.slow]  # a real Chromium: docs/testing.md
DOCS_IMG = Path(__file__).resolve().parents[1] / "docs" / "img"
FIXED = "It walks across the stage from left to right, then leaves."


def wait(driver, condition, seconds: float = 30):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, seconds, poll_frequency=0.1).until(condition)


def css(driver, selector: str):
    from selenium.webdriver.common.by import By

    return driver.find_element(By.CSS_SELECTOR, selector)


def keys(driver, text: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).send_keys(text).perform()


def status_is(driver, prefix: str):
    wait(driver, lambda d: css(d, "#save-status").text.startswith(prefix))
    return css(driver, "#save-status").text


def correct(driver, answer: str) -> None:
    """Correct the answer: focusing the box switches to "corrected" and fills in the given answer."""
    box = css(driver, "#answer-edit")
    box.click()
    wait(driver, lambda d: box.get_attribute("value") == d.execute_script(
        "return JSON.parse(document.getElementById('state').textContent).answer"))
    assert css(driver, "#answer-edit-on").is_selected()
    box.clear()
    box.send_keys(answer)


def decide(driver, *, modality: str | None = None, decoy_keys: str = "", answer: str | None = None,
           reason: str | None = None) -> str:
    """On an open question page: tick the criteria (key c), choose the modality (a click), choose
    decoys by number keys, correct the answer, then accept; or reject with `reason`."""
    if reason is not None:
        css(driver, "#reason").send_keys(reason)
        css(driver, "#reject").click()
        return status_is(driver, "rejected")
    keys(driver, "c" + decoy_keys)
    if modality:
        css(driver, f"input[name=modality][value='{modality}']").click()
    if answer is not None:
        correct(driver, answer)
    css(driver, "#accept").click()
    return status_is(driver, "accepted")


def shoot(driver, out: Path, name: str):
    """A screenshot of the page's top, cut below its content."""
    from PIL import Image

    driver.execute_script("window.scrollTo(0, 0)")
    shot = screenshot(driver, out, name)
    assert_not_blank(shot)
    height = round(driver.execute_script("return document.body.getBoundingClientRect().bottom")) + 24
    if height < shot.shape[0]:
        shot = shot[:height]
        Image.fromarray(shot).save(out / f"{name}.png", optimize=True)
    if os.environ.get("LVU_DOCS_SCREENSHOTS") == "1":
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        shutil.copy(out / f"{name}.png", DOCS_IMG / f"{name}.png")
    return shot


def video_at_evidence(driver) -> None:
    """Wait until the page has put the video at the first evidence time (5 s) and shows it."""
    video = css(driver, "#video")
    wait(driver, lambda d: d.execute_script(
        "const v = arguments[0]; return v.readyState === 4 && !v.seeking && Math.abs(v.currentTime - 5) < 0.05", video))


def check_video_plays_from_the_evidence(driver, toy, out: Path) -> None:
    video = css(driver, "#video")
    video_at_evidence(driver)
    seeks = driver.find_elements("css selector", "#seeks button.seek")
    assert [b.text for b in seeks] == ["▶ 00:05–00:12"]
    driver.execute_script("arguments[0].currentTime = 1", video)
    seeks[0].click()
    wait(driver, lambda d: d.execute_script("return arguments[0].currentTime", video) > 5.8)  # it plays
    driver.execute_script("arguments[0].pause()", video)
    now = driver.execute_script("return arguments[0].currentTime", video)
    wait(driver, lambda d: "now" in css(d, "#captions li:nth-child(2)").get_attribute("class"))  # 5-12 s caption
    # the picture on screen is the frame at currentTime (the barcode holds the frame number)
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", video)
    box = driver.execute_script("""
        const v = arguments[0], r = v.getBoundingClientRect(), s = Math.min(r.width / v.videoWidth, r.height / v.videoHeight);
        const w = v.videoWidth * s, h = v.videoHeight * s;
        return [r.left + (r.width - w) / 2, r.top + (r.height - h) / 2, w, h];""", video)
    shot = screenshot(driver, out, "video-frame")
    left, top, width, height = (round(x) for x in box)
    frame = shot[top:top + height, left:left + width]
    shown = read_index(frame)
    times = toy.video.times
    expected = max(i for i, t in enumerate(times) if t <= now + 1e-6)
    assert abs(shown - expected) <= 1, f"frame {shown} on screen at {now:.2f} s, expected {expected}"
    assert element_pixels(driver, shot, video).size > 0


def test_a_team_of_three_reviews_in_chromium(tmp_path):
    toy = build(tmp_path)
    out = tmp_path / "shots"
    out.mkdir()
    db = tmp_path / "review.sqlite"
    env = {**os.environ, "LVU_CACHE_DIR": str(tmp_path / "cache")}
    args = ["review", str(toy.data), "--raters", "alice,bob", "--examiners", "carol", "--per-question", "2",
            "--port", "0", "--db", str(db)]
    with lvu_server(args, env) as (url, proc), chrome("1400,1500") as driver:
        links = {}
        for _ in range(3):
            line = proc.stdout.readline().strip()
            links[line.split()[0]] = line.rsplit(" ", 1)[1]
        assert set(links) == {"alice", "bob", "carol"} and all(link.startswith(url) for link in links.values())

        # alice: her queue, then the first question
        driver.get(links["alice"])
        assert css(driver, "#progress").text == "0 of 4 submitted"
        css(driver, "#next-open").click()
        wait(driver, lambda d: css(d, "#item-id").text == "clip/1")
        check_video_plays_from_the_evidence(driver, toy, out)
        keys(driver, "c12")  # criteria, decoys 1 and 2 by key
        css(driver, "input[name=decoy][value='4']").click()
        css(driver, "input[name=decoy][value='5']").click()
        css(driver, "input[name=modality][value='audio+video']").click()
        correct(driver, FIXED)
        assert css(driver, "#decoy-count").text == "(4 of 4 chosen)"
        status_is(driver, "draft saved")  # autosave
        css(driver, "#accept").click()
        assert "version" in status_is(driver, "accepted")
        shoot(driver, out, "review-question")
        keys(driver, "n")  # the next question in her queue, by key
        wait(driver, lambda d: css(d, "#item-id").text == "clip/2")
        decide(driver, reason="The stage is not empty at the start.")
        driver.get(links["alice"])
        assert css(driver, "#progress").text == "2 of 4 submitted"
        shoot(driver, out, "review-queue")

        # bob disagrees on both
        driver.get(links["bob"].replace("/queue?", "/item/0?"))
        decide(driver, modality="video-only", decoy_keys="3456")
        driver.get(links["bob"].replace("/queue?", "/item/1?"))
        decide(driver, modality="video-only", decoy_keys="1234")

        # carol examines: the disagreements, then her decisions
        driver.get(links["carol"])
        rows = {r.find_element("css selector", "a").text: r.get_attribute("class")
                for r in driver.find_elements("css selector", "table tr.disagree, table tr.agree")}
        assert rows["clip/1"] == "disagree" and rows["clip/2"] == "disagree" and rows["clip/3"] == "agree"
        shoot(driver, out, "review-examine-list")
        driver.find_element("link text", "clip/1").click()
        wait(driver, lambda d: css(d, "#item-id").text == "clip/1")
        assert "modality" in css(driver, "#to-resolve").text and "answer" in css(driver, "#to-resolve").text
        assert css(driver, "#majority").text.startswith("unresolved")
        video_at_evidence(driver)
        shoot(driver, out, "review-examine")
        decide(driver, modality="audio+video", decoy_keys="1256", answer=FIXED)
        driver.get(links["carol"].replace("/examine?", "/examine/1?"))
        assert css(driver, "#majority").text.startswith("unresolved (raters split on accept / reject)")
        decide(driver, reason="Ambiguous start: two answers fit.")
        driver.get(links["carol"].replace("/examine?", "/stats?"))
        verdict = [r.text for r in driver.find_elements("css selector", "#agreement tr.field") if r.text.startswith("verdict")]
        # verdicts {A, A} and {R, A}: P = (1 + 0) / 2, p(A) = 3/4, Pe = 9/16 + 1/16 = 5/8, kappa = (1/2 - 5/8) / (3/8)
        assert verdict == ["verdict 2 50.0 50.0 62.5 -0.333"]
        shoot(driver, out, "review-agreement")

    done = subprocess.run([sys.executable, "-m", "lvu.cli", "review", "export", str(toy.data), "-o",
                           str(tmp_path / "final"), "--db", str(db)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "1 accepted, 1 rejected, 0 unresolved (examiner needed), 2 incomplete" in done.stdout
    [sample] = [json.loads(x) for x in (tmp_path / "final" / "benchmark.jsonl").read_text().splitlines()]
    decoys = QUESTIONS[0][3]
    assert sample["id"] == "clip/1" and sample["options"][sample["answer"]] == FIXED
    assert set(sample["options"]) == {FIXED, decoys[0], decoys[1], decoys[4], decoys[5]}
    assert sample["labels"]["modality"] == "audio+video" and sample["extra"]["review"]["source"] == "examiner"
    lines = [json.loads(x) for x in (tmp_path / "final" / "decisions.jsonl").read_text().splitlines()]
    assert [(x["id"], x["status"], x["source"]) for x in lines] == [
        ("clip/1", "accepted", "examiner"), ("clip/2", "rejected", "examiner"),
        ("clip/3", "incomplete", ""), ("plain", "incomplete", "")]
    assert lines[1]["reasons"] == ["Ambiguous start: two answers fit."]
