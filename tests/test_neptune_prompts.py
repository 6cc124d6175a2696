"""Neptune's construction prompts (lvu.construct.neptune_prompts), their parsers (lvu.construct.neptune_parse)
and the scripted LLM (tests/neptune_replies.py) through the real `openai` backend."""

from __future__ import annotations

import asyncio
import hashlib
import os
import pickle
import re
from pathlib import Path

import pytest

from lvu.construct import neptune_parse as P
from lvu.construct import neptune_prompts as N
from lvu.construct.neptune_prompt_text import EXTRACTION_FIXES, PAPER_PROMPTS, SEGMENT_CONTEXT_LINE, TOPICS_OUTPUT_FORMAT
from lvu.errors import LvuError
from lvu.media.testing import draw_frame
from lvu.models.openai_compat import OpenAICompat
from lvu.models.testing_server import FakeOpenAIServer
from lvu.types import Frame, Prompt, Subtitle, Text
from neptune_replies import MALFORMED, PROMPT_OPENINGS, ScriptedReplies, prompt_kind, scripted_reply

# sha256 (first 16 hex digits) and length of every prompt: a change to a default prompt changes
# every build's keys (docs/build.md), so it must be deliberate.
PINS = {
    "frame_caption": ("1184f0fae9219eb2", 1491),
    "shot_summary": ("8e3abfdd90be28b5", 88),
    "topics": ("966273972960016d", 202),
    "clustering": ("da2d49087803b932", 1318),
    "segment": ("e1aa609a497d6801", 762),
    "visual_support": ("c24578490e2853f4", 487),
    "qa": ("afdb11450d0eecc2", 6267),
    "decoys": ("68e072c80f1eba50", 3460),
    "topics_output_format": ("019a5e64ff60c7d3", 173),
    "segment_context_line": ("d41395c396661e00", 43),
}

# Sentences each prompt must hold word for word (checked in the paper too, when it is here).
KEY_SENTENCES = {
    "frame_caption": ["Make sure you do not hallucinate information.",
                      "Question(Text): Is there any text? What does it say?",
                      "With the above format as template, generate the response for the new image next."],
    "shot_summary": ["Summarize these sentences in dense short sentences: [list of frame captions in the shot]"],
    "topics": ["Give up to 5 Topic and Description pairs using output format."],
    "clustering": ["<topic_scenes>Comma separated scene number(s) related to this topic<topic_scenes>",
                   "If the support or relation is not strong create a new topic and assign the scene to it.",
                   "Video Script: {video_script}"],
    "segment": ["Only add information that is in the \"Partial Script\".",
                "The updated video description is plain text."],
    "visual_support": ["Plain text with at most 200 words summarizing the supporting visual elements."],
    "qa": ["Your Task: Craft {target_number} Challenging Short-Answer Questions",
           "Introduce each question as \"QUESTION 1, 2, 3: (capability) full question\".",
           "- Question (visual reasoning): What was shown to support the effects of a high cholesterol diet in "
           "the video? Correct Answer: Video demonstrates how cholesterol gradually clogs blood vessels",
           "Dense Caption with Timestamps: {video_inputs_str}"],
    "decoys": ["2. Decoy Design: For each target question, generate {decoy_number} incorrect answers "
               "(distractors).",
               "Wrong Answer 4: The woman is wearing a red shirt.",
               "Question and Correct Answer: {question_and_answer_str}"],
}


def _paper() -> str | None:
    seeds = Path(os.environ.get("LVU_PAPERS_DIR", Path(__file__).resolve().parents[2] / "shared" / "seeds"))
    found = sorted(seeds.glob("001_*.txt")) if seeds.is_dir() else []
    return found[0].read_text() if found else None


PAPER = _paper()
needs_paper = pytest.mark.skipif(PAPER is None, reason="the Neptune paper text (shared/seeds/001_*.txt) is not here")


# ---- the prompts -----------------------------------------------------------------------------------


def test_prompts_are_pinned():
    texts = {**PAPER_PROMPTS, "topics_output_format": TOPICS_OUTPUT_FORMAT,
             "segment_context_line": SEGMENT_CONTEXT_LINE}
    got = {k: (hashlib.sha256(v.encode()).hexdigest()[:16], len(v)) for k, v in texts.items()}
    assert got == PINS
    for name, sentences in KEY_SENTENCES.items():
        for sentence in sentences:
            assert sentence in PAPER_PROMPTS[name], (name, sentence)
    for name, text in PAPER_PROMPTS.items():  # the scripted LLM (and a reader) can tell them apart
        assert prompt_kind(text) == name, name


@needs_paper
def test_prompts_are_the_papers_text_byte_for_byte():
    """Undo the documented extraction fixes: each prompt is then one contiguous span of the paper."""
    assert PAPER is not None
    names = {id(v): k for k, v in vars(N).items() if isinstance(v, str) and k.endswith("_PROMPT")}
    assert len(EXTRACTION_FIXES) == 13
    for name, text in PAPER_PROMPTS.items():
        constant = names[id(text)]
        restored = text
        for fix in (f for f in EXTRACTION_FIXES if f.prompt == constant):
            assert restored.count(fix.ours) == 1 and PAPER.count(fix.paper) == 1, fix
            restored = restored.replace(fix.ours, fix.paper)
        assert PAPER.count(restored) == 1, name
    for name, sentences in KEY_SENTENCES.items():
        for sentence in sentences:
            for fix in EXTRACTION_FIXES:
                sentence = sentence.replace(fix.ours, fix.paper)
            assert sentence in PAPER, name
    # the paper's full example lists are all there: 10 good, 3 bad questions; 1 good, 2 bad decoy sets
    assert PAPER_PROMPTS["qa"].count("- Question (") == 12 and PAPER_PROMPTS["qa"].count("-Question (") == 1
    assert PAPER_PROMPTS["decoys"].count("Wrong Answer 4:") == 3
    # and none of the paper's figure captions or page artefacts
    for text in PAPER_PROMPTS.values():
        assert "Figure" not in text and "***" not in text and ":* " not in text


def test_format_functions_fill_every_placeholder():
    script = N.video_script([(0, 4, 'A red frame showing the text "{video_script}".')], [(1, 2, "Hello {x}.")])
    filled = {
        "frame_caption": N.format_frame_caption_prompt(),
        "shot_summary": N.format_shot_summary_prompt(["A red frame.", "A red frame.", "", "A blue frame."]),
        "topics": N.format_topics_prompt("  We cook rice. Then we eat.  "),
        "clustering": N.format_clustering_prompt("Cooking rice", 5000, "", "", script),
        "segment": N.format_segment_prompt("The host cooks.", script, 800),
        "visual_support": N.format_visual_support_prompt("The host cooks.", N.visual_captions_text([(0, 4, "red")])),
        "qa": N.format_qa_prompt("[00:00 - 00:04] Section: Intro\nCaption: red", 5),
        "decoys": N.format_decoy_prompt("DC", "QUESTION 1: (counting) Q?\nCORRECT ANSWER: 3", 1),
    }
    for name, text in filled.items():
        assert prompt_kind(text) == name
        left = re.findall(r"\{[a-z_ ]+\}|\[list of frame captions in the shot\]", text.replace(script, ""))
        assert left == [], (name, left)
    # content with braces is put in as is, never read as a placeholder
    assert 'showing the text "{video_script}"' in filled["clustering"] and "Hello {x}." in filled["segment"]
    assert filled["shot_summary"] == ("Summarize these sentences in dense short sentences: A red frame.\n"
                                      "A blue frame.")
    assert filled["topics"] == PAPER_PROMPTS["topics"].replace(
        " **Transcript:** {transcript}", f"\n\n{TOPICS_OUTPUT_FORMAT}\n\n**Transcript:** We cook rice. Then we eat.")
    assert "less than 5000 characters" in filled["clustering"]
    assert "Suggested Structure: None (the video has no transcript).\n\nContext: None (the video has no title " \
           "or description).\n\nVideo Script: Scene 1 (00:00 - 00:04)\n" in filled["clustering"]
    # without a context the segment prompt is the paper's template, filled
    assert filled["segment"] == PAPER_PROMPTS["segment"].replace("{max_output_characters}", "800").replace(
        "{shared_topic_cluster_caption}", "The host cooks.").replace("{doc_segment}", script)
    with_context = N.format_segment_prompt("The host cooks.", script, 800, context=N.context_text("Rice", None))
    assert with_context == filled["segment"].replace("\n\nPartial Script: ", "\n\nContext: Title: Rice\n\nPartial Script: ")
    assert "Your Task: Craft 5 Challenging" in filled["qa"]
    assert filled["qa"].endswith("Dense Caption with Timestamps: [00:00 - 00:04] Section: Intro\nCaption: red")
    assert "generate 6 incorrect answers" in filled["decoys"] and "A set of 1 questions" in filled["decoys"]
    assert filled["decoys"].endswith("Question and Correct Answer: QUESTION 1: (counting) Q?\nCORRECT ANSWER: 3")
    with pytest.raises(ValueError, match="non-empty frame caption"):
        N.format_shot_summary_prompt(["", " "])


def test_text_builders_lay_out_scripts_and_captions():
    assert [N.format_timestamp(s) for s in (0, 59.9, 61, 3599, 3600, 3725.5)] == \
        ["00:00", "00:59", "01:01", "59:59", "1:00:00", "1:02:05"]
    shots = [(0.0, 5.0, "A red frame."), (5.0, 9.0, "A blue   frame."), (9.0, 12.0, "")]
    speech = [Subtitle(text="Hello.", start=0.5, end=1.5), (4.0, 7.0, "Across the cut."),  # midpoint 5.5: shot 2
              (11.0, 14.0, "Past the end."), (3.0, 4.0, "  ")]
    assert N.speech_by_shot(shots, speech) == [["Hello."], ["Across the cut."], ["Past the end."]]
    assert N.video_script(shots, speech, first_scene=4) == (
        "Scene 4 (00:00 - 00:05)\nVisual captions: A red frame.\nTranscript sentences: Hello.\n\n"
        "Scene 5 (00:05 - 00:09)\nVisual captions: A blue frame.\nTranscript sentences: Across the cut.\n\n"
        "Scene 6 (00:09 - 00:12)\nVisual captions: none\nTranscript sentences: Past the end.")
    assert N.visual_captions_text(shots[:2]) == "[00:00 - 00:05] A red frame.\n[00:05 - 00:09] A blue frame."
    assert N.suggested_structure([("Intro", "Hi."), ("Rice", "Cooking.")]) == \
        "Topic 1: Intro\nDescription 1: Hi.\nTopic 2: Rice\nDescription 2: Cooking."
    assert N.suggested_structure([]) == N.NO_STRUCTURE
    assert P.parse_topics(N.suggested_structure([("Intro", "Hi."), ("Rice", "Cooking.")])) == \
        [("Intro", "Hi."), ("Rice", "Cooking.")]
    assert N.context_text(" My  video ", "word " * 400, max_description=20) == \
        "Title: My video\nDescription: word word word word ..."
    assert N.context_text("", None) == N.NO_CONTEXT
    segments = [N.DenseSegment(30, 61, "Rice", "Rice   boils.", ""),
                N.DenseSegment(0, 30, "Intro", "The host says hi.", "A red frame.")]
    assert N.dense_captions_text(segments) == (
        "[00:00 - 00:30] Section: Intro\nCaption: The host says hi.\nVisual support: A red frame.\n\n"
        "[00:30 - 01:01] Section: Rice\nCaption: Rice boils.")
    qas = [P.QA("counting", "How many pots?", "2"), P.QA("", "Why?", "Because.")]
    text = N.questions_and_answers_text(qas)
    assert text == "QUESTION 1: (counting) How many pots?\nCORRECT ANSWER: 2\n\nQUESTION 2: Why?\nCORRECT ANSWER: Because."
    assert P.parse_questions(text) == qas


# ---- the parsers -------------------------------------------------------------------------------------


def test_frame_caption_parser():
    good = ("Answer(Mood): Calm.\nAnswer(General): A kitchen.\nAnswer(Text): No text.\n\n"
            "Caption: A calm kitchen\nwith a pot on the stove.\n")
    assert P.parse_frame_caption(good) == "A calm kitchen with a pot on the stove."
    echoed = "Caption: A couple of sentences summarizing the information.\n...\n**Caption:** A red frame."
    assert P.parse_frame_caption(echoed) == "A red frame."  # the last Caption: line
    assert P.parse_frame_caption("```\nAnswer(General): A red frame.\n```") == "A red frame."  # the fallback
    assert P.parse_frame_caption("Answer(General): A red frame.\nCaption:") == "A red frame."
    for bad, why in [("I cannot describe this image.", "no Caption: line"), ("Caption:   \n", "Caption: line is empty")]:
        with pytest.raises(P.ReplyParseError, match=why) as e:
            P.parse_frame_caption(bad)
        assert isinstance(e.value, LvuError) and "\n" not in str(e.value)


def test_plain_text_parsers():
    assert P.parse_shot_summary("Summary:\n- A red frame.\n- Then a blue one.\n") == "A red frame. Then a blue one."
    assert P.parse_visual_support("```\nThe shots show a **red** frame.\n```") == "The shots show a red frame."
    for parse in (P.parse_shot_summary, P.parse_visual_support):
        with pytest.raises(P.ReplyParseError, match="reply is empty"):
            parse("```\n```")
    assert P.parse_updated_description("Sure.\n<updated_description>The host\n cooks &amp; eats."
                                       "</updated_description>") == "The host cooks & eats."
    assert P.parse_updated_description("```xml\n<updated_description>Cut off at the limit") == "Cut off at the limit"
    with pytest.raises(P.ReplyParseError, match="no <updated_description>"):
        P.parse_updated_description("Here is the improved description.")
    with pytest.raises(P.ReplyParseError, match="is empty"):
        P.parse_updated_description("<updated_description> </updated_description>")


def test_topics_parser_variants():
    ours = "Topic 1: Intro\nDescription 1: The host says hi.\n\nTopic 2: Rice\nDescription 2: Rice is cooked."
    assert P.parse_topics(ours) == [("Intro", "The host says hi."), ("Rice", "Rice is cooked.")]
    bold = "**Topic 1:** Intro\n**Description 1:** The host\n  says hi.\n- **Topic 2**: Rice - **Description**: Cooked."
    assert P.parse_topics(bold) == [("Intro", "The host says hi."), ("Rice", "Cooked.")]
    assert P.parse_topics("Topic: Intro | Description: Hi.") == [("Intro", "Hi.")]
    listed = "Here are the topics:\n1. **Intro**: The host says hi.\n2. Rice - Cooking it.\n3. Eating\n   They eat."
    assert P.parse_topics(listed) == [("Intro", "The host says hi."), ("Rice", "Cooking it."), ("Eating", "They eat.")]
    xml = "<topics><topic><title>Intro</title><description>Hi &amp; bye.</description></topic></topics>"
    assert P.parse_topics(xml) == [("Intro", "Hi & bye.")]
    many = "\n".join(f"Topic {i}: T{i}\nDescription {i}: D{i}" for i in range(1, 8))
    assert [t for t, _ in P.parse_topics(many)] == ["T1", "T2", "T3", "T4", "T5"]
    assert P.parse_topics("Topic 1: <short topic title>\nTopic 2: Real\nDescription 2: d") == [("Real", "d")]
    with pytest.raises(P.ReplyParseError, match="no Topic and Description pairs"):
        P.parse_topics("The video covers several things.")


def test_clustering_parser_and_segments():
    paper_style = ("```xml\n<topic> <description>Intro &amp; greeting</description> <topic_scenes>1, 2<topic_scenes> "
                   "<story>The host says hi.</story> </topic>\n<topic> <description>Cooking</description> "
                   "<topic_scenes>Scene 3, scenes 5-6</topic_scenes> <story>Rice boils.</story> </topic>\n"
                   "<topic><description>Back to the host</description><topic_scenes>4, 99<topic_scenes>"
                   "<story>Cut off at the len")  # no closing tags: the length limit cut it
    topics = P.parse_clustering(paper_style, scenes=range(1, 8))
    assert topics == [P.ClusterTopic("Intro & greeting", (1, 2), "The host says hi."),
                      P.ClusterTopic("Cooking", (3, 5, 6), "Rice boils."),
                      P.ClusterTopic("Back to the host", (4,), "Cut off at the len")]
    assert P.parse_clustering(paper_style)[2].scenes == (4, 99)  # no known scenes: kept as written
    # scene 7 is in no topic: it joins the topic of the scene before it; 4 splits topic 1 in two
    assert P.segments_from_topics(topics, range(1, 8)) == [
        P.Segment(0, (1, 2)), P.Segment(1, (3,)), P.Segment(2, (4,)), P.Segment(1, (5, 6, 7))]
    twice = [P.ClusterTopic("a", (2, 3), ""), P.ClusterTopic("b", (3, 4), "")]
    assert P.segments_from_topics(twice, [1, 2, 3, 4]) == [P.Segment(0, (1, 2, 3)), P.Segment(1, (4,))]
    with pytest.raises(ValueError):
        P.segments_from_topics(twice, [8, 9])
    with pytest.raises(P.ReplyParseError, match="no <topic>"):
        P.parse_clustering("Topic 1 covers scenes 1 to 3.")
    with pytest.raises(P.ReplyParseError, match="among scenes 1-3"):
        P.parse_clustering("<topic><topic_scenes>7</topic_scenes></topic>", scenes=[1, 2, 3])


QA_REPLY = """Sure! Here are 4 questions.

**QUESTION 1: (counting)** How many pots are used
throughout the video?
**CORRECT ANSWER:** 2.

Question 2 (visual-temporal): What colour is the lid before the rice boils? Correct Answer: Red.

3. QUESTION 3: (Cause and Effect)
Why does the host lower the heat?
ANSWER: To stop the rice burning.

- Question (summarization): What is the video about? Correct Answer: Cooking rice.
QUESTION 5: (predictive) What happens next?
"""


def test_questions_parser_variants():
    assert P.parse_questions(QA_REPLY) == [
        P.QA("counting", "How many pots are used throughout the video?", "2."),
        P.QA("visual-temporal", "What colour is the lid before the rice boils?", "Red."),
        P.QA("Cause and Effect", "Why does the host lower the heat?", "To stop the rice burning."),
        P.QA("summarization", "What is the video about?", "Cooking rice."),
    ]  # question 5 has no answer (the reply was cut): dropped
    assert P.parse_questions("QUESTION 1:\n(counting) How many?\nCORRECT ANSWER:\n3") == [P.QA("counting", "How many?", "3")]
    with pytest.raises(P.ReplyParseError, match="no QUESTION line"):
        P.parse_questions(MALFORMED["qa"])
    with pytest.raises(P.ReplyParseError, match="none of its 2 questions has a CORRECT ANSWER"):
        P.parse_questions("QUESTION 1: (a) One?\nQUESTION 2: (b) Two?")


def test_decoys_parser_matches_blocks_back_to_questions():
    qas = P.parse_questions(QA_REPLY)
    reply = """QUESTION 2 (Visual-temporal): What colour is the lid before the rice boils?
CORRECT ANSWER: Red.
WRONG ANSWER 1: Blue.
WRONG ANSWER 2: Green.
WRONG ANSWER 3:
Yellow.
WRONG ANSWER 4: red
WRONG ANSWER 5: Black.
WRONG ANSWER 6: White.
WRONG ANSWER 7: Grey.

**QUESTION 1 (Counting):** How many pots are used throughout the video?
**CORRECT ANSWER:** 2.
**WRONG ANSWERS:**
- 3.
- 4.
- 4.
- 1.
5.
6.
7.

QUESTION 9 (cause and effect): Why is the heat lowered by the host?
CORRECT ANSWER: To stop the rice burning.
Wrong Answer 1: To save gas. Wrong Answer 2: To keep it warm. Wrong Answer 3: To add water.
Wrong Answer 4: To let it rest. Wrong Answer 5: To boil it faster.
Wrong Answer 6: To cook the lid.

CORRECT ANSWER: Cooking rice.
Decoy 1: Cooking pasta.
Decoy 2: Washing rice.
Decoy 3: Buying rice.
Decoy 4: Eating rice.
Decoy 5: Growing rice.
Decoy 6: Storing rice.
"""
    assert P.parse_decoys(reply, qas) == [
        ["3.", "4.", "1.", "5.", "6.", "7."],                          # repeats dropped
        ["Blue.", "Green.", "Yellow.", "Black.", "White.", "Grey."],   # "red" is the answer
        ["To save gas.", "To keep it warm.", "To add water.", "To let it rest.", "To boil it faster.",
         "To cook the lid."],                                          # renumbered, reworded
        ["Cooking pasta.", "Washing rice.", "Buying rice.", "Eating rice.", "Growing rice.", "Storing rice."],
    ]                                                                  # the last matched by its answer
    # exactly six: five (what the old parser let through) and seven are both malformed, every such
    # question named in the one error the retry prompt repeats
    short = reply.replace("Decoy 6: Storing rice.", "").replace("7.\n", "")
    with pytest.raises(P.ReplyParseError) as e:
        P.parse_decoys(short, qas)
    assert re.search(r"question 1 \('How many pots.*'\) has 5 wrong answers; question 4 \('What is the video "
                     r"about\?'\) has 5 wrong answers — exactly 6 different wrong answers", str(e.value)), str(e.value)
    assert "exactly 6" in P.retry_prompt("PROMPT", short, e.value)
    with pytest.raises(P.ReplyParseError, match=r"question 2 .* has 7 wrong answers"):
        P.parse_decoys(reply.replace("WRONG ANSWER 7: Grey.", "WRONG ANSWER 7: Grey.\nWRONG ANSWER 8: Pink."), qas)
    with pytest.raises(P.ReplyParseError, match="question 3 .* has 5 wrong answers"):  # a copy does not count
        P.parse_decoys(reply.replace("To cook the lid.", "To add water!"), qas)
    assert P.parse_decoys(short, qas, partial=True)[3] == ["Cooking pasta.", "Washing rice.", "Buying rice.",
                                                            "Eating rice.", "Growing rice."]
    assert P.parse_decoys(reply, qas, 4, partial=True)[0] == ["3.", "4.", "1.", "5."]
    with pytest.raises(P.ReplyParseError, match="question 1 .* is missing"):
        P.parse_decoys("QUESTION 1: Something else entirely?\nCORRECT ANSWER: 2.", qas[:1])
    # same count, no numbers, no repeated text: matched by position
    plain = "\n\n".join("\n".join(f"WRONG ANSWER {k}: w{i}{k}" for k in range(1, 7)) for i in range(2))
    assert P.parse_decoys(plain, qas[:2]) == [[f"w0{k}" for k in range(1, 7)], [f"w1{k}" for k in range(1, 7)]]


def test_retry_prompt_says_why_and_how():
    with pytest.raises(P.ReplyParseError) as e:
        P.parse_questions("Sure! Here are some questions.")
    text = P.retry_prompt("ORIGINAL PROMPT", "Sure! Here are some questions.", e.value)
    assert text == (
        "ORIGINAL PROMPT\n\nYour previous reply was:\nSure! Here are some questions.\n\n"
        "Your reply could not be parsed: found no question with an answer in the reply: it has no QUESTION "
        "line: 'Sure! Here are some questions.'. Answer again in the format \"QUESTION 1: (capability) full "
        "question\" and on the next line \"CORRECT ANSWER: correct answer\".")
    again = pickle.loads(pickle.dumps(e.value))  # an error crossing processes keeps its format
    assert (type(again), again.reason, again.expected) == (P.ReplyParseError, e.value.reason, P.QA_FORMAT)
    long = P.retry_prompt("X", "y" * 5000, "bad\nthing.")
    assert "y" * 4000 + " [...]" in long and long.endswith("could not be parsed: bad thing. Answer again in the "
                                                           "format the task asks for.")


# ---- the scripted LLM through the openai backend -------------------------------------------------


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path):
    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def _ask(server: FakeOpenAIServer, prompts: list[Prompt]) -> list[str]:
    model = OpenAICompat(model="fake-llm", base_url=server.base_url, backoff=0.01, cache=False)

    async def go():
        try:
            return await asyncio.gather(*(model.generate(p) for p in prompts))
        finally:
            await model.close()

    responses = asyncio.run(go())
    assert all(r.error is None for r in responses), [r.error for r in responses]
    return [r.text for r in responses]


def _with_retry(server, text: str, parse, *args):
    reply = _ask(server, [Prompt(parts=[Text(text=text)])])[0]
    try:
        return parse(reply, *args)
    except P.ReplyParseError as e:
        return parse(_ask(server, [Prompt(parts=[Text(text=P.retry_prompt(text, reply, e))])])[0], *args)


@pytest.mark.slow
def test_scripted_llm_round_trip_through_every_stage():
    replies = ScriptedReplies(frame_text="index", malformed_first={"qa", "clustering"})
    with FakeOpenAIServer(answer=replies) as server:
        # frame captions: the VLM sees the frame; the scripted one reads the barcode frame number
        frames = [Frame(image=draw_frame(i, (160, 96)), timestamp=float(i)) for i in (3, 4, 9)]
        captions = [P.parse_frame_caption(r) for r in _ask(server, [
            Prompt(parts=[f, Text(text=N.format_frame_caption_prompt())], max_tokens=300) for f in frames])]
        assert [re.search(r'"frame (\d+)"', c).group(1) for c in captions] == ["3", "4", "9"]
        shots = [(0.0, 5.0, _with_retry(server, N.format_shot_summary_prompt(captions[:2]), P.parse_shot_summary)),
                 (5.0, 9.0, _with_retry(server, N.format_shot_summary_prompt(captions[2:]), P.parse_shot_summary)),
                 (9.0, 12.0, "A black frame with no text.")]
        assert shots[0][2] == " ".join(captions[:2])
        speech = [(0.5, 2.0, "Welcome to the kitchen."), (6.0, 8.0, "Now the rice boils."), (10, 11, "Bye now.")]
        topics = _with_retry(server, N.format_topics_prompt(" ".join(s for _, _, s in speech)), P.parse_topics)
        assert topics[0] == ("Welcome to the", "Welcome to the kitchen.")
        script = N.video_script(shots, speech)
        clustering = N.format_clustering_prompt("Rice", N.CLUSTERING_MAX_CHARS, N.suggested_structure(topics),
                                                N.context_text("Rice", None), script)
        clusters = _with_retry(server, clustering, P.parse_clustering, [1, 2, 3])
        assert [c.scenes for c in clusters] == [(1,), (2,), (3,)]
        segments = P.segments_from_topics(clusters, [1, 2, 3])
        dense = []
        for seg in segments:
            own = [shots[n - 1] for n in seg.scenes]
            caption = _with_retry(server, N.format_segment_prompt(clusters[seg.topic].story, N.video_script(
                own, speech, first_scene=seg.scenes[0]), context=""), P.parse_updated_description)
            support = _with_retry(server, N.format_visual_support_prompt(caption, N.visual_captions_text(own)),
                                  P.parse_visual_support)
            dense.append(N.DenseSegment(own[0][0], own[-1][1], clusters[seg.topic].description, caption, support))
        assert "Now the rice boils." in dense[1].caption
        qas = _with_retry(server, N.format_qa_prompt(N.dense_captions_text(dense), 4), P.parse_questions)
        assert len(qas) == 4 and qas[0] == P.QA("visual-temporal", 'What text is shown on screen in the part '
                                                'about The part showing "frame 3"?', "frame 3")
        decoys = _with_retry(server, N.format_decoy_prompt(N.dense_captions_text(dense), N.questions_and_answers_text(
            qas), len(qas)), P.parse_decoys, qas)
        assert [len(d) for d in decoys] == [6, 6, 6, 6]
        assert all(qa.answer not in d for qa, d in zip(qas, decoys))
    # the malformed first replies were retried once each, and every other prompt answered once
    assert replies.malformed == {"qa": 1, "clustering": 1}
    assert replies.calls == {"frame_caption": 3, "shot_summary": 2, "topics": 1, "clustering": 2, "segment": 3,
                             "visual_support": 3, "qa": 2, "decoys": 1}
    assert len(server.chat_requests()) == sum(replies.calls.values())


def test_scripted_malformed_replies_fail_every_parser():
    parsers = {"frame_caption": P.parse_frame_caption, "shot_summary": P.parse_shot_summary,
               "topics": P.parse_topics, "clustering": P.parse_clustering,
               "segment": P.parse_updated_description, "visual_support": P.parse_visual_support,
               "qa": P.parse_questions, "decoys": lambda r: P.parse_decoys(r, [P.QA("", "Q?", "A")])}
    for kind, parse in parsers.items():
        with pytest.raises(P.ReplyParseError):
            parse(MALFORMED[kind])
    always = ScriptedReplies(malformed_always={"topics"})
    body = {"messages": [{"role": "user", "content": N.format_topics_prompt("Hi. Bye.")}]}
    assert always(body) == always(body) == MALFORMED["topics"]
    assert P.parse_topics(scripted_reply(body)) == [("Hi", "Hi."), ("Bye", "Bye.")]
    assert scripted_reply({"messages": [{"role": "user", "content": "Hello?"}]}).startswith("scripted_reply: unrec")
    with pytest.raises(ValueError, match="unknown prompt kinds"):
        ScriptedReplies(malformed_first={"nope"})
    filt = {"messages": [{"role": "user", "content": "Instructions:\n\n" + PROMPT_OPENINGS["qad_filter"]
                          + " ...\n\nOptions: (A) x (B) y (C) z\n"}]}
    assert re.fullmatch(r"ANSWER: [ABC] > [ABC] > [ABC]\nEXPLANATION: .*", scripted_reply(filt))
