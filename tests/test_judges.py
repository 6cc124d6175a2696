"""Judges: the GEM prompt pinned to the paper, P(TRUE) from controlled log-probabilities through the
real openai backend and a local server, the text fallback, MLVU's prompts and score parsing (against
a port of the official calculate.py), choice extraction, calibration, stored thresholds, the HF
logits path on a tiny random model."""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import random
import re

import pytest

from lvu.errors import DataError, LvuError
from lvu.models.testing_server import FakeOpenAIServer
from lvu.scoring import judge_prompts as jp
from lvu.scoring.judges import (
    Judge,
    JudgeTask,
    binary_metrics,
    calibrate,
    calibration_path,
    equivalence_probability,
    make_judge,
    mlvu_scores,
    read_dev_set,
    save_calibration,
)


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    """Stored calibrations and the openai response cache live in this test's directory."""
    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path / "cache"))


def ask(judge: Judge, task: JudgeTask):
    async def go():
        try:
            return await judge.judge(task)
        finally:
            await judge.close()

    return asyncio.run(go())


def sent_text(server: FakeOpenAIServer) -> str:
    """The user text of the last request."""
    messages = server.chat_requests()[-1].body["messages"]
    user = next(m for m in messages if m["role"] == "user")
    return "".join(part["text"] for part in user["content"])


EQ = JudgeTask(kind="equivalence", question="What colour is the car?", reference="Red", candidate="It is red.")


# ---- the GEM prompt -----------------------------------------------------------------------------------

PAPER_GEM = (  # Neptune App. D.3 as extracted (research/seed_neptune.md §6.2), whitespace collapsed
    '<start_of_turn>user Answer Equivalence Instructions: Carefully consider the following question and answers. '
    'You will be shown a "gold-standard" answer from a human annotator, referred to as the "Reference Answer" and a '
    '"Candidate Answer". Your task is to determine whether the two answers are semantically equivalent. In general, '
    'a candidate answer is a good answer in place of the "gold" reference if both the following are satisfied: 1. '
    'The candidate contains at least the same (or more) relevant information as the reference, taking into account '
    'the question; in particular it does not omit any relevant information present in the reference. 2. The '
    'candidate contains neither misleading or excessive superfluous information not present in the reference, '
    'taking into account the question. Your response should be one word, "TRUE" or "FALSE", in the following '
    'format: ANSWERS_ARE_EQUIVALENT: [TRUE or FALSE] Question: "{}" Candidate Answer: "{}" Reference Answer: "{}" '
    'Please provide your response below. <end_of_turn> <start_of_turn>model ANSWERS_ARE_EQUIVALENT:'
)


def test_gem_prompt_has_the_papers_words_in_order_and_a_pinned_layout():
    filled = jp.GEM_PROMPT.format(question="{}", candidate="{}", reference="{}")
    spaced = filled.replace("<end_of_turn>", " <end_of_turn>")  # the PDF prints a space before the marker
    assert " ".join(spaced.split()) == PAPER_GEM
    assert jp.GEM_PROMPT == f"<start_of_turn>user\n{jp.GEM_INSTRUCTION}<end_of_turn>\n<start_of_turn>model\n" \
                            "ANSWERS_ARE_EQUIVALENT:"
    assert jp.GEM_INSTRUCTION.endswith('\n\nQuestion: "{question}"\nCandidate Answer: "{candidate}"\n'
                                       'Reference Answer: "{reference}"\n\nPlease provide your response below.')
    assert hashlib.sha256(jp.GEM_PROMPT.encode()).hexdigest()[:16] == "a0cca25490b715ac"  # layout pinned


def test_chat_backends_get_the_instruction_as_user_turn_and_the_prefix_as_assistant_turn():
    with FakeOpenAIServer(answer=" TRUE") as server:
        ask(make_judge("openai", {"model": "gemma", "base_url": server.base_url}), EQ)
        body = server.chat_requests()[-1].body
    assert body["messages"][0] == {"role": "user", "content": [
        {"type": "text", "text": jp.GEM_INSTRUCTION.format(question=EQ.question, candidate=EQ.candidate,
                                                           reference=EQ.reference)}]}
    assert body["messages"][1] == {"role": "assistant", "content": "ANSWERS_ARE_EQUIVALENT:"}
    assert body["temperature"] == 0 and body["logprobs"] is True and body["top_logprobs"] == 5


def test_candidate_is_truncated_to_100_words():
    long = " ".join(f"w{i}" for i in range(150))
    with FakeOpenAIServer(answer="FALSE") as server:
        ask(make_judge("openai", {"model": "m", "base_url": server.base_url}), EQ.model_copy(update={"candidate": long}))
        text = sent_text(server)
    candidate = re.search(r'Candidate Answer: "(.*)"\n', text).group(1)
    assert candidate.split() == [f"w{i}" for i in range(100)]


# ---- P(TRUE) from log-probabilities, and the text fallback ------------------------------------------------


def p_true(true_lps, false_lps):
    t = sum(math.exp(x) for x in true_lps)
    f = sum(math.exp(x) for x in false_lps)
    return t / (t + f)


@pytest.mark.parametrize("steps,top_k,expected", [
    ([{" TRUE": -0.1, " FALSE": -2.4, " maybe": -5.0}], 5, p_true([-0.1], [-2.4])),
    ([{"FALSE": -0.3, "TRUE": -1.5, "True": -3.0, " true": -4.0}], 5, p_true([-1.5, -3.0, -4.0], [-0.3])),
    ([{"ANSW": -0.01, "ERS": -5}, {" TRUE": -0.7, " FALSE": -0.7}], 5, 0.5),  # echoed prefix: next position
    ([{" FALSE": -0.05, " no": -3.0}], 5, 0.0),  # only FALSE among the alternatives
    ([{" TRUE": -0.4, " FALSE": -1.1}], 1, 1.0),  # top_logprobs=1: only the generated (top) token is visible
])
def test_probability_from_controlled_logprobs_through_the_openai_backend(steps, top_k, expected):
    text = "".join(next(iter(s)) for s in steps)
    with FakeOpenAIServer(answer=text, token_logprobs=steps) as server:
        judge = make_judge("openai", {"model": "m", "base_url": server.base_url, "top_logprobs": top_k})
        j = ask(judge, EQ)
    assert j.method == "logprobs" and j.error is None
    assert j.value == pytest.approx(expected)
    assert j.verdict == (expected >= 0.5) and "threshold=0.5 (uncalibrated default)" in j.judge


def test_threshold_decides_the_verdict():
    steps = [{" TRUE": math.log(0.7), " FALSE": math.log(0.3)}]
    with FakeOpenAIServer(answer=" TRUE", token_logprobs=steps) as server:
        strict = ask(make_judge("openai", {"model": "m", "base_url": server.base_url}, threshold=0.8), EQ)
        lenient = ask(make_judge("openai", {"model": "m", "base_url": server.base_url}, threshold=0.6), EQ)
    assert strict.value == pytest.approx(0.7) == lenient.value
    assert (strict.verdict, lenient.verdict) == (False, True)
    assert "threshold=0.8 (given)" in strict.judge


@pytest.mark.parametrize("reply,value,verdict,method", [
    ("TRUE", 1.0, True, "text"),
    (" false.", 0.0, False, "text"),
    ("ANSWERS_ARE_EQUIVALENT: True", 1.0, True, "text"),
    ("I cannot tell.", 0.0, False, "parse-failed"),
])
def test_text_fallback_without_logprobs(reply, value, verdict, method):
    with FakeOpenAIServer(answer=reply) as server:
        j = ask(make_judge("openai", {"model": "m", "base_url": server.base_url, "logprobs": False}), EQ)
        assert "logprobs" not in server.chat_requests()[-1].body
    assert (j.value, j.verdict, j.method) == (value, verdict, method)
    assert ("from the reply text" in j.summary()) == (method == "text")


def test_text_fallback_when_neither_token_is_among_the_alternatives():
    assert equivalence_probability([{"Yes": -0.1, "No": -2.0}]) is None
    with FakeOpenAIServer(answer="Yes, TRUE", token_logprobs=[{"Yes": -0.1, "No": -2.0}]) as server:
        j = ask(make_judge("openai", {"model": "m", "base_url": server.base_url}), EQ)
    assert (j.method, j.value, j.verdict) == ("text", 1.0, True)


def test_a_failed_judge_call_is_an_error_not_a_verdict():
    with FakeOpenAIServer(answer="TRUE") as server:
        server.script("401")
        j = ask(make_judge("openai", {"model": "m", "base_url": server.base_url}), EQ)
    assert j.error and "authentication" in j.error and j.value is None and j.verdict is None


# ---- MLVU ------------------------------------------------------------------------------------------------


def official_calculate(text: str, keys) -> tuple[float, float]:
    """JUNJIE99/MLVU generation_evaluation/calculate.py (extract_scores + its try/except), ported."""
    scores = []
    for key in keys:
        start_index = text.find(key)
        if start_index == -1:
            continue
        start_number_index = text.find(":", start_index) + 2
        end_number_index = text.find(",", start_number_index)
        scores.append(float(text[start_number_index:end_number_index]))
    accu = rele = 0.0
    try:
        accu += scores[0]
        rele += scores[1]
    except IndexError:
        accu += 0
        rele += 0
    return accu, rele


SSC = jp.MLVU_KEYS["mlvu-ssc"]
VS = jp.MLVU_KEYS["mlvu-vs"]


@pytest.mark.parametrize("text,keys", [
    ("Rationale ...\n{'score_accuracy': 3.67, 'score_relevance': 5, 'total_score': 8.67}", SSC),
    ('```json\n{"score_accuracy": 2, "score_relevance": 4, "total_score": 6}\n```', SSC),
    ("{'score_completeness': 4, 'score_reliability': 3, 'total_score': 7}", VS),
    ("{'score_accuracy': 4, 'total_score': 4}", SSC),  # relevance missing: accuracy kept, relevance 0
    ("{'score_relevance': 4, 'total_score': 4}", SSC),  # accuracy missing: 4 lands in the first slot
    ("I refuse to score this.", VS),
])
def test_mlvu_scores_match_the_official_calculate_py(text, keys):
    first, second, complete = mlvu_scores(text, keys)
    assert (first, second) == official_calculate(text, keys)
    assert complete == all(k in text for k in keys)


def test_mlvu_scores_are_read_where_the_official_script_would_crash():
    # quoted numbers and a last key without a trailing comma: calculate.py raises ValueError on these
    assert mlvu_scores('{"score_completeness": "4", "score_reliability": 5}', VS) == (4.0, 5.0, True)
    # the key quoted in the rationale before the JSON: the first occurrence followed by a number counts
    text = "I will fill score_accuracy after checking.\n{'score_accuracy': 2.5, 'score_relevance': 3, 'total_score': 5.5}"
    assert mlvu_scores(text, SSC) == (2.5, 3.0, True)


def test_mlvu_system_prompts_keep_the_repo_text_and_indentation():
    for prompt, heads in ((jp.MLVU_SSC_SYSTEM, ("##ACCURACY Scoring Criteria: ", "##RELEVANCE Scoring Criteria:")),
                          (jp.MLVU_VS_SYSTEM, ("##COMPLETENESS Scoring Criteria:", "##RELIABILITY Scoring Criteria:"))):
        lines = prompt.split("\n")
        assert lines[0] == "" and lines[-1] == " " * 24
        assert all(line.startswith(" " * 28) and not line[28].isspace() for line in lines[1:-1])
        body = [line[28:] for line in lines[1:-1]]
        assert body[0] == "##TASK DESCRIPTION: " and "----" in body and "##INSTRUCTION:" in body
        assert all(h in body for h in heads)
    assert "respondent\u2019s answer to the question" in jp.MLVU_SSC_SYSTEM  # the repo's curly apostrophe
    assert "CORRECTNESS" not in jp.MLVU_VS_SYSTEM and jp.MLVU_VS_SYSTEM.count("RELIABILITY") == 3
    assert jp.MLVU_VS_SYSTEM.endswith("{'score_completeness': score_comp, 'score_reliability': score_reli, "
                                      "'total_score': score_comp + score_reli}\n" + " " * 24)
    digest = hashlib.sha256((jp.MLVU_SSC_SYSTEM + jp.MLVU_VS_SYSTEM).encode()).hexdigest()[:16]
    assert digest == "bbb7e4152a8586bc"


def test_mlvu_ssc_judge_request_and_judgement():
    pad = " " * 28
    expected_user = (f"\n{pad}Please score the respondent's answer according to the steps in the Instructions. You must "
                     f"end with a JSON dict to store the scores.\n{pad}Question: Describe the scene.\n"
                     f"{pad}Scoring Points: ['A man runs', \"He's late\"]\n{pad}Respondent's Answer: A man runs.\n"
                     + " " * 24)
    task = JudgeTask(kind="mlvu-ssc", question="Describe the scene.", candidate="A man runs.",
                     scoring_points=["A man runs", "He's late"])
    reply = "Point 1: 5, point 2: 1.\n{'score_accuracy': 3, 'score_relevance': 4, 'total_score': 7}"
    with FakeOpenAIServer(answer=reply) as server:
        j = ask(make_judge("openai", {"model": "gpt-4-turbo", "base_url": server.base_url}), task)
        body = server.chat_requests()[-1].body
    assert body["messages"][0] == {"role": "system", "content": jp.MLVU_SSC_SYSTEM}
    assert body["messages"][1]["content"][0]["text"] == expected_user
    assert body["temperature"] == 0 and len(body["messages"]) == 2
    assert (j.value, j.parts, j.method) == (7.0, {"accuracy": 3.0, "relevance": 4.0}, "mlvu-calculate")
    assert j.judge.startswith("openai:gpt-4-turbo") and "threshold" not in j.judge
    assert "accuracy 3 + relevance 4 = 7" in j.summary()


def test_mlvu_question_newlines_are_dropped_like_the_script():
    assert "Question: ab\n" in jp.mlvu_ssc_user("a\nb", [], "x")


# ---- choice extraction ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("reply,value", [("B", 1), ("(C)", 2), ("Z", None), ("none", None)])
def test_choice_extraction_shows_the_options(reply, value):
    task = JudgeTask(kind="choice", question="Which animal?", candidate="It was clearly the dog.",
                     options=["a cat", "a dog", "a bird"])
    with FakeOpenAIServer(answer=reply) as server:
        j = ask(make_judge("openai", {"model": "m", "base_url": server.base_url}), task)
        text = sent_text(server)
    assert "Options:\n(A) a cat\n(B) a dog\n(C) a bird\n" in text and "Response: It was clearly the dog." in text
    assert text == jp.CHOICE_PROMPT.format(question="Which animal?", options="(A) a cat\n(B) a dog\n(C) a bird",
                                           response="It was clearly the dog.")
    assert j.value == value and j.method == "llm-judge"


# ---- calibration ------------------------------------------------------------------------------------------------


def test_calibration_recovers_a_known_threshold():
    scores = [i / 100 for i in range(100)]
    labels = [int(s >= 0.62) for s in scores]
    cal = calibrate(scores, labels)
    assert 0.61 < cal.threshold <= 0.62 and (cal.f1, cal.precision, cal.recall, cal.accuracy) == (1, 1, 1, 1)


def test_calibration_maximises_f1_on_noisy_data():
    rng = random.Random(7)
    labels = [rng.random() < 0.3 for _ in range(300)]
    scores = [min(1.0, max(0.0, rng.gauss(0.65 if y else 0.4, 0.15))) for y in labels]
    cal = calibrate(scores, [int(y) for y in labels])

    def f1_at(t):  # computed here, independently of binary_metrics
        tp = sum(s >= t and y for s, y in zip(scores, labels))
        fp = sum(s >= t and not y for s, y in zip(scores, labels))
        fn = sum(s < t and y for s, y in zip(scores, labels))
        return 2 * tp / (2 * tp + fp + fn)

    best = max(f1_at(t) for t in scores)  # every distinct cut is some score value
    assert cal.f1 == pytest.approx(best) and f1_at(cal.threshold) == pytest.approx(best)
    assert 0.4 < cal.threshold < 0.65


def test_calibration_ties_go_to_the_higher_accuracy():
    # cut at 0.85: tp1 fp0 fn1 (F1 2/3, accuracy 0.8); cut at 0.55: tp2 fp2 fn0 (F1 2/3, accuracy 0.6)
    cal = calibrate([0.9, 0.8, 0.7, 0.6, 0.5], [1, 0, 0, 1, 0])
    assert cal.threshold == pytest.approx(0.85) and cal.f1 == pytest.approx(2 / 3) and cal.accuracy == 0.8
    assert binary_metrics([0.9, 0.8, 0.7, 0.6, 0.5], [1, 0, 0, 1, 0], 0.55).f1 == pytest.approx(2 / 3)


def test_calibration_needs_positives():
    with pytest.raises(LvuError, match="no equivalent"):
        calibrate([0.1, 0.2], [0, 0])


def test_stored_calibration_is_loaded_for_the_same_judge_only(tmp_path):
    dev = tmp_path / "dev.jsonl"
    dev.write_text('{"question": "q", "reference": "r", "candidate": "c", "label": 1}\n')
    args = {"model": "judge-7b", "base_url": "http://127.0.0.1:9/v1"}
    judge = make_judge("openai", args)
    assert judge.threshold == 0.5 and "uncalibrated" in judge.identity
    path = save_calibration(judge, calibrate([0.9, 0.3, 0.8], [1, 0, 1]), dev=dev, n=3, positives=2)
    assert path == calibration_path(judge) and json.loads(path.read_text())["judge"] == judge.model_identity
    again = make_judge("openai", {**args, "max_retries": 2})  # a run-neutral argument: the same judge
    assert again.threshold == pytest.approx(0.55) and "calibrated: F1 100.0 on dev.jsonl" in again.identity
    other = make_judge("openai", {**args, "model": "judge-70b"})
    assert other.threshold == 0.5 and other.key != judge.key
    with pytest.raises(LvuError, match="calibrated for"):
        make_judge("openai", {**args, "model": "judge-70b"}, path)
    assert make_judge("openai", args, threshold=0.9).identity.endswith("threshold=0.9 (given)")


def test_dev_set_rows_and_errors(tmp_path):
    dev = tmp_path / "dev.jsonl"
    dev.write_text('{"question": "q", "reference": "r", "candidate": "c", "label": 1}\n\n'
                   '{"question": "q", "reference": "r", "candidate": "c2", "score": 0.5}\n'
                   '{"question": "q", "reference": "r", "candidate": "c3", "score": 0.75, "id": "x"}\n')
    assert [(r.label, r.id) for r in read_dev_set(dev)] == [(1, "1"), (0, "3"), (1, "x")]
    dev.write_text('{"question": "q", "reference": "r", "candidate": "c", "label": 1}\n{"question": "q", "label": 0}\n')
    with pytest.raises(DataError, match=r"dev.jsonl:2: missing 'reference'"):
        read_dev_set(dev)
    dev.write_text('{"question": "q", "reference": "r", "candidate": "c", "label": 3}\n')
    with pytest.raises(DataError, match=r"dev.jsonl:1: label 3 is not 0 or 1"):
        read_dev_set(dev)


# ---- the HF logits path -------------------------------------------------------------------------------------------


def build_judge_llava(path):
    """tiny_vlms.build_llava with ' TRUE' and ' FALSE' as whole tokens, as real judges' vocabularies have."""
    import tiny_vlms
    import torch
    from transformers import (CLIPImageProcessorPil, CLIPVisionConfig, LlamaConfig, LlavaConfig,
                              LlavaForConditionalGeneration, LlavaProcessor)

    tok = tiny_vlms.train_tokenizer(["<pad>", "<s>", "</s>", "<image>"], bos="<s>", pad_token="<pad>",
                                    bos_token="<s>", eos_token="</s>", extra_special_tokens={"image_token": "<image>"})
    tok.add_tokens([" TRUE", " FALSE"])
    tok.chat_template = tiny_vlms.LLAVA_TEMPLATE
    vision = CLIPVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                              image_size=56, patch_size=14, projection_dim=32)
    text = LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    config = LlavaConfig(vision_config=vision, text_config=text, vision_feature_layer=-1,
                         image_token_index=tok.convert_tokens_to_ids("<image>"))
    torch.manual_seed(0)
    LlavaForConditionalGeneration(config).save_pretrained(path)
    images = CLIPImageProcessorPil(size={"shortest_edge": 56}, crop_size={"height": 56, "width": 56})
    LlavaProcessor(image_processor=images, tokenizer=tok, chat_template=tiny_vlms.LLAVA_TEMPLATE, patch_size=14,
                   vision_feature_select_strategy="default", num_additional_image_tokens=1).save_pretrained(path)
    return path, len(tok)


@pytest.mark.slow
def test_hf_logits_path_matches_a_direct_softmax(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    torch = pytest.importorskip("torch", reason="the hf backend needs torch")
    pytest.importorskip("transformers", reason="the hf backend needs transformers")
    from lvu.scoring.judges import build_prompt

    path, vocab = build_judge_llava(tmp_path / "judge")
    judge = make_judge("hf", {"model": str(path), "top_logprobs": vocab, "device": "cpu"})
    j = ask(judge, EQ)
    assert j.method == "logprobs" and 0.0 <= j.value <= 1.0

    backend = judge.model  # the same weights and encoding, read directly
    with torch.inference_mode():
        logits = backend.model(**backend.encode(build_prompt(EQ))).logits[0, -1].float()
    probs = logits.softmax(-1)
    words = [backend.tokenizer.decode([i]).strip().upper() for i in range(logits.shape[-1])]
    p_t = sum(float(probs[i]) for i, w in enumerate(words) if w == "TRUE")
    p_f = sum(float(probs[i]) for i, w in enumerate(words) if w == "FALSE")
    assert p_t > 0 and p_f > 0
    assert j.value == pytest.approx(p_t / (p_t + p_f), rel=1e-4)
