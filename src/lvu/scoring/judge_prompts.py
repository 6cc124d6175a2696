"""Judge prompts as protocol constants: the Neptune paper's GEM prompt, MLVU's generation-judge
prompts (the official repo's, byte for byte) and lvu's LLM choice-extraction prompt.

Sources (docs/judges.md has the details):
- GEM: Neptune paper App. D.3 (Gemma chat format; slots question, candidate, reference). The PDF
  extraction lost part of the line layout; the words are verbatim, the line breaks of the last
  paragraph and around the turn markers are lvu's reconstruction (Gemma's turn format).
- MLVU: JUNJIE99/MLVU `generation_evaluation/evaluate_ssc.py` (commit ae66ef9) and
  `evaluation/generation_evaluation/evaluate_summary.py` (commit 41add89): system and user
  messages are triple-quoted strings in the scripts, so they carry the scripts' indentation (28
  spaces per line, a leading newline, 24 spaces before the closing quotes) — sent as is, so kept.
"""

from __future__ import annotations

from lvu.types import LETTERS

# ---- GEM-style answer equivalence (Neptune App. D.3) ------------------------------------------

GEM_ANSWER_PREFIX = "ANSWERS_ARE_EQUIVALENT:"
"""The model turn starts with this; the next token is TRUE or FALSE."""

GEM_INSTRUCTION = """Answer Equivalence Instructions:
Carefully consider the following question and answers.
You will be shown a "gold-standard" answer from a human annotator,
referred to as the "Reference Answer" and a "Candidate Answer".
Your task is to determine whether the two answers are semantically
equivalent.

In general, a candidate answer is a good answer in place of the "gold" reference if both the following are satisfied:

1. The candidate contains at least the same (or more) relevant information as the reference, taking into account the question; in particular it does not omit any relevant information present in the reference.
2. The candidate contains neither misleading or excessive superfluous information not present in the reference, taking into account the question.

Your response should be one word, "TRUE" or "FALSE", in the following format:
ANSWERS_ARE_EQUIVALENT: [TRUE or FALSE]

Question: "{question}"
Candidate Answer: "{candidate}"
Reference Answer: "{reference}"

Please provide your response below."""
"""The user turn of the GEM prompt (slots: question, candidate, reference)."""

GEM_PROMPT = f"<start_of_turn>user\n{GEM_INSTRUCTION}<end_of_turn>\n<start_of_turn>model\n{GEM_ANSWER_PREFIX}"
"""The whole prompt in Gemma's raw chat format, as the paper prints it. Chat backends apply their
own template instead: GEM_INSTRUCTION is the user turn and GEM_ANSWER_PREFIX the assistant prefix,
which for a Gemma checkpoint renders exactly this text."""

GEM_WORDS = 100
"""Candidates are truncated to their first 100 words (App. D.3)."""


def truncate_words(text: str, n: int = GEM_WORDS) -> str:
    """The first n whitespace-separated words, joined by single spaces."""
    return " ".join(text.split()[:n])


def gem_user_text(question: str, candidate: str, reference: str) -> str:
    return GEM_INSTRUCTION.format(question=question, candidate=truncate_words(candidate), reference=reference)


# ---- MLVU generation judge (official repo scripts) ------------------------------------------------

_IN = " " * 28
"""The scripts' indentation of every message line."""
_OUT = "\n" + " " * 24
"""What precedes the closing triple quotes."""


def _indented(*lines: str) -> str:
    return "".join(f"\n{_IN}{line}" for line in lines) + _OUT


MLVU_SSC_SYSTEM = _indented(
    "##TASK DESCRIPTION: ",
    "You are required to evaluate a respondent's answer based on a provided question, some scoring points, and the "
    "respondent's answer. You should provide two scores. The first is the accuracy score, which should range from 1 "
    "to 5. The second is the relevance score, which should also range from 1 to 5. Below are the criteria for each "
    "scoring category.",
    "##ACCURACY Scoring Criteria: ",
    "Evaluate the respondent's answer against specific scoring points as follows:",
    "Score 1: The response completely misses the scoring point.",
    "Score 3: The response mentions content related to the scoring point but is not entirely correct.",
    "Score 5: The response accurately addresses the scoring point.",
    "Calculate the average score across all scoring points to determine the final accuracy score.",
    "##RELEVANCE Scoring Criteria:",
    "Assess how the respondent's answer relates to the original question:",
    "Score 1: The response is completely off-topic from the question.",
    "Score 2: The response is partially related to the question but contains a significant amount of irrelevant "
    "content.",
    "Score 3: The response primarily addresses the question, but the respondent seems uncertain about their own "
    "answer.",
    "Score 4: The response mostly addresses the question and the respondent appears confident in their answer.",
    "Score 5: The response is fully focused on addressing the question with no irrelevant content and demonstrates "
    "complete certainty.",
    "----",
    "##INSTRUCTION:",
    "1. Evaluate Accuracy: First, assess and score each scoring point based on the respondent's answer. Calculate the "
    "average of these scores to establish the final accuracy score. Provide a detailed rationale before assigning "
    "your score.",
    "2. Evaluate RELEVANCE: Assess the relevance of the respondent\u2019s answer to the question. Note that when "
    "evaluating relevance, the correctness of the answer is not considered; focus solely on how relevant the answer "
    "is to the question. Provide a comprehensive rationale before assigning your score.",
    "3. Output Scores in JSON Format: Present the scores in JSON format as follows:",
    "{'score_accuracy': score_acc, 'score_relevance': score_rele, 'total_score': score_acc + score_rele}",
)
"""evaluate_ssc.py's system message (note the curly apostrophe in instruction 2, as in the repo)."""

MLVU_VS_SYSTEM = _indented(
    "##TASK DESCRIPTION: ",
    "You are required to evaluate the performance of the respondent in the video summarization task based on the "
    "standard answer and the respondent's answer. You should provide two scores. The first is the COMPLETENESS "
    "score, which should range from 1 to 5. The second is the RELIABILITY score, which should also range from 1 to "
    "5. Below are the criteria for each scoring category:",
    "##COMPLETENESS Scoring Criteria:",
    "The completeness score focuses on whether the summary covers all key points and main information from the "
    "video. ",
    "Score 1: The summary hardly covers any of the main content or key points of the video.",
    "Score 2: The summary covers some of the main content and key points but misses many.",
    "Score 3: The summary covers most of the main content and key points.",
    "Score 4: The summary is very comprehensive, covering most to nearly all of the main content and key points.",
    "Score 5: The summary completely covers all the main content and key points of the video.",
    "##RELIABILITY Scoring Criteria:",
    "The reliability score evaluates the correctness and clarity of the video summary. It checks for factual errors, "
    "misleading statements, and contradictions with the video content. If the respondent's answer includes details "
    "that are not present in the standard answer, as long as these details do not conflict with the correct answer "
    "and are reasonable, points should not be deducted.",
    "Score 1: Contains multiple factual errors and contradictions; presentation is confusing.",
    "Score 2: Includes several errors and some contradictions; needs clearer presentation.",
    "Score 3: Generally accurate with minor errors; minimal contradictions; reasonably clear presentation.",
    "Score 4: Very accurate with negligible inaccuracies; no contradictions; clear and fluent presentation.",
    "Score 5: Completely accurate with no errors or contradictions; presentation is clear and easy to understand.",
    "----",
    "##INSTRUCTION:",
    "1. Evaluate COMPLETENESS: First, analyze the respondent's answer according to the scoring criteria, then "
    "provide an integer score between 1 and 5 based on sufficient evidence. ",
    "2. Evaluate RELIABILITY: First, analyze the respondent's answer according to the scoring criteria, then provide "
    "an integer score between 1 and 5 based on sufficient evidence. ",
    "3. Output Scores in JSON Format: Present the scores in JSON format as follows:",
    "{'score_completeness': score_comp, 'score_reliability': score_reli, 'total_score': score_comp + score_reli}",
)
"""evaluate_summary.py's system message: RELIABILITY throughout (the paper's Figure 12 says
CORRECTNESS in the criteria and instruction headings; the repo is what produced Table 1)."""

_ASK = ("Please score the respondent's answer according to the steps in the Instructions. You must end with a JSON "
        "dict to store the scores.")


def mlvu_ssc_user(question: str, scoring_points: list[str], prediction: str) -> str:
    """The SSC user message: the script drops newlines from the question and formats the scoring
    points as a Python list (`str(list)`)."""
    return _indented(_ASK, f"Question: {question.replace(chr(10), '')}", f"Scoring Points: {scoring_points}",
                     f"Respondent's Answer: {prediction}")


def mlvu_vs_user(reference: str, prediction: str) -> str:
    return _indented(_ASK, f"Standard Answer: {reference}", f"Respondent's Answer: {prediction}")


MLVU_KEYS = {"mlvu-ssc": ("score_accuracy", "score_relevance"), "mlvu-vs": ("score_completeness", "score_reliability")}
"""The keys the official calculate.py / calculate_sum.py read, in their order."""

# ---- LLM choice extraction (lvu's prompt) -----------------------------------------------------------

CHOICE_PROMPT = """You are given a multiple-choice question, its options and a response to it.
Decide which option the response chooses. Reply with the option's letter only.
If the response chooses none of the options, or more than one, reply Z.

Question: {question}
Options:
{options}
Response: {response}"""
"""Shows the options (VLMEvalKit's fallback prompt is built from a question column that lacks them)."""


def choice_user_text(question: str, options: list[str], response: str) -> str:
    lines = "\n".join(f"({LETTERS[i]}) {o}" for i, o in enumerate(options))
    return CHOICE_PROMPT.format(question=question, options=lines, response=response.strip())


# ---- VLMEvalKit's choice-matching judge (vlmeval/dataset/utils/multiple_choice.py) ---------------------

VLMEVALKIT_CHOICE_PROMPT = (
    'You are an AI assistant who will help me to match '
    'an answer with several options of a single-choice question. '
    'You are provided with a question, several options, and an answer, '
    'and you need to find which option is most similar to the answer. '
    'If the meaning of all options are significantly different from the answer, output Z. '
    'Your should output a single uppercase character in A, B, C, D (if they are valid options), and Z. \n'
    'Example 1: \n'
    'Question: What is the main object in image?\nOptions: A. teddy bear B. rabbit C. cat D. dog\n'
    'Answer: a cute teddy bear\nYour output: A\n'
    'Example 2: \n'
    'Question: What is the main object in image?\nOptions: A. teddy bear B. rabbit C. cat D. dog\n'
    'Answer: Spider\nYour output: Z\n'
    'Example 3: \n'
    'Question: {}?\nOptions: {}\nAnswer: {}\nYour output: '
)
"""VLMEvalKit's `build_prompt(question, options, prediction)` template (identical at 296425e2 and
e8e78f05), filled with str.format in that order; `options` is build_option_str's text."""

VLMEVALKIT_CHOICE_PROMPT_CN = (
    '你是一个帮助我匹配答案与单选题中多个选项的 AI 助手。'
    '你会被提供：一个问题，多个选项，一个答案。你的任务是找到与答案意义最相近的选项。'
    '如果所有选项的意义都与答案显著不同，则输出 Z。'
    '你应该输出一个单个的大写字母，例如 A, B, C, D（如果它们是有效选项），或 Z。'
    '例 1:'
    '问题: 图中最主要的物体是什么?\n选项: A. 泰迪熊 B. 兔子 C. 猫 D. 狗\n答案: 一只可爱的泰迪熊\n输出: A\n'
    '例 2: \n'
    '问题: 图中最主要的物体是什么?\n选项: A. 泰迪熊 B. 兔子 C. 猫 D. 狗\n答案: 蜘蛛\n输出: Z\n'
    '例 3: \n'
    '问题: {}?\n选项: {}\n答案: {}\n输出: '
)
"""VLMEvalKit's `build_prompt_cn` template, used instead when the question holds a CJK character
(`cn_string`: U+4E00..U+9FFF)."""
