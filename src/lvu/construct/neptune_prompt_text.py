"""Neptune's construction prompts, copied verbatim from the paper (Nagrani et al., "Neptune: The Long
Orbit to Benchmarking Long Video Understanding", Appendix C.2.1-C.2.4; docs/build.md).

Each constant is the paper's text byte for byte except for PDF-extraction artefacts, listed in
EXTRACTION_FIXES (paper text as extracted -> text here, with the reason), which tests undo to get the
paper's span back exactly. The rules for fixing:

- a line or page break in the middle of a sentence is joined with one space; a figure caption or
  page break that lands inside a prompt is dropped; paragraph breaks between complete sentences
  are kept as extracted (where the paper ran list items together in one paragraph, so do we);
- bold rendered as garbled runs of asterisks is written **like this**, as the extraction renders
  the paper's other bold labels (e.g. the topics prompt's "**Task:**");
- placeholders keep the paper's names; those the paper writes as bare words ("Partial Script:
  doc_segment") get braces like its braced ones ("{video_script}"), so filling them is unambiguous.

The two things the paper leaves out and the pipeline needs (the topics prompt's output format and
a slot for the video context the segment prompt says it gets) are the separate additions at the
end; lvu.construct.neptune_prompts puts them in and fills the placeholders.

The QAD blind-filter prompt (App. C.2.5) lives in lvu.construct.blind.
"""

from __future__ import annotations

from typing import NamedTuple

# ---- the paper's prompts -------------------------------------------------------------------------

# C.2.1: one caption per frame at 1 fps (the VLM sees the frame with this text).
FRAME_CAPTION_PROMPT = (
    "Answer the following questions about the given image. Then use the information from the answers "
    "only, and write a single sentence as caption. Make sure you do not hallucinate information.\n"
    "\n"
    "Question(Mood): Describe the general mood in the image as succinctly as possible. Avoid "
    "specifying detailed objects, colors or text.\n"
    "\n"
    "Question(Background): Describe the background of the image as succinctly as possible. Avoid "
    "specifying detailed objects, colors or text. Eg: The background is a parking lot, playground, "
    "kitchen etc. Question(Person): Is there any person in the image. If yes, describe them and what "
    "are they doing here? If no, say no person. Question(General): Describe the image as succinctly as "
    "possible. Avoid specifying detailed objects, colors or text. Question(Text): Is there any text? "
    "What does it say?\n"
    "\n"
    "Result template:\n"
    "\n"
    "Answer(Mood): A succinct description of what is happening in the image with the general mood. "
    "Answer(Background): A succinct description of the background scene in the image and what is "
    "happening. Answer(Person): If there are people in the image, a succinct description. "
    "Answer(General): A succinct description of the image. Answer(Text): Reply if there is any text, "
    "where it is placed and how it is related to what is happening in the image.\n"
    "\n"
    "Caption: A couple of sentences summarizing the information given by the answers about mood, "
    "background, person, general and text.\n"
    "\n"
    "With the above format as template, generate the response for the new image next."
)

# C.2.2 "Shot level captions": a shot's frame captions -> one shot caption.
SHOT_SUMMARY_PROMPT = (
    "Summarize these sentences in dense short sentences: [list of frame captions in the shot]"
)

# C.2.2 "Topic and Description pairs": only when the video has speech (ASR).
TOPICS_PROMPT = (
    "**Task:** Take a deep breath and give me the structural topics of the Youtube video below using "
    "the transcript. Give up to 5 Topic and Description pairs using output format. **Transcript:** "
    "{transcript}"
)

# C.2.2 "Shot Clustering": scenes (shots) of a part of the video script -> topics, as XML. The
# malformed closing tag "<topic_scenes>" after the scene numbers is the paper's own.
CLUSTERING_PROMPT = (
    "Take a deep breath and identify the sequential topic structure of this video using the "
    "\"{head_topic}\" in Scenes. A part of the video script is provided as a set of Scenes and in each "
    "scene, visual captions and transcript sentences are provided. The overall suggested structure "
    "from the transcript is provided as well. Assign every scene in this part of the script to one "
    "topic structure. For each scene, the visual captions should support and relate the topic. If the "
    "support or relation is not strong create a new topic and assign the scene to it. Reevaluate the "
    "suggested structure from the transcript and make sure all scenes are assigned to the best "
    "associated topics. Keep output length to be less than {max output characters} characters.\n"
    "\n"
    "Output Format: XML output where topic has the following children (description, topic_scenes, "
    "story) <topic> <description>The description of the topic</description> <topic_scenes>Comma "
    "separated scene number(s) related to this topic<topic_scenes> <story>Summarized caption that "
    "describes what happens and what's shown for this topic in the scenes by combining visual caption "
    "and transcript sentences of the related scenes</story> </topic>\n"
    "\n"
    "Suggested Structure: {initial_structure_from_ASR_if_exists}\n"
    "\n"
    "Context: {summary_of_title_and_description}\n"
    "\n"
    "Video Script: {video_script}"
)

# C.2.2 "Segment Captions": a topic's story, improved from one segment's partial script.
SEGMENT_PROMPT = (
    "Task: You are the expert in video description writing. Use the information \"Partial Script\" to "
    "improve the \"Initial Description\" by adding the missing information either from visual or "
    "transcript. The video context is also given to help you interpret the script. Only add "
    "information that is in the \"Partial Script\". Make the output concise and compact with less or "
    "the same length as Initial Description. The updated video description is plain text. Your answer "
    "should follow the output format. Keep output length to be less than {max_output_characters} "
    "characters.\n"
    "\n"
    "Initial Description: {shared_topic_cluster_caption}\n"
    "\n"
    "Output Format: XML format like below <updated_description>updated video description "
    "text</updated_description>\n"
    "\n"
    "Partial Script: {doc_segment}"
)

# C.2.2 "Visual Support Caption": which shot captions support a segment's caption.
VISUAL_SUPPORT_PROMPT = (
    "**Task:** I provide video scene information and your job is to summarize the exact elements from "
    "\"Visual Captions\" that directly support the \"Scene Story\" of the scene below. The visuals of "
    "the scene is broken down to shots and each shot is described in a line of text in the Visual "
    "Captions.\n"
    "\n"
    "Scene Story: {dense_caption_for_the_segment}\n"
    "\n"
    "Visual Captions: {visual_captions_of_the_segment}\n"
    "\n"
    "**Output Format:** Plain text with at most 200 words summarizing the supporting visual elements."
)

# C.2.3, stage 1: questions and their answers from the dense captions, with every example.
QA_PROMPT = (
    "I want you to act as a rigorous teacher in the \"Long-term Video Understanding\" class. Let's "
    "test your students' in-depth comprehension!\n"
    "\n"
    "Understanding: I'll provide you with the following:\n"
    "\n"
    "- Dense Captions: A detailed breakdown of the video, including key moments and timestamps. "
    "Analyze this carefully.\n"
    "\n"
    "Your Task: Craft {target_number} Challenging Short-Answer Questions\n"
    "\n"
    "Requirement:\n"
    "\n"
    "- Challenge: Demonstrate your ability to create challenging, insightful short-answer questions "
    "about the video. These shouldn't test simple recall only. Aim to probe understanding of "
    "relationships, motives, subtle details, and the implications of events within the video.\n"
    "\n"
    "Diversity: Design a variety of question types (more on this below).\n"
    "Specificity: Each question must be self-contained and laser-focused on a single concept or event "
    "from the video. Avoid compound or overly broad questions.\n"
    "\n"
    "- Answers: Model the ideal answer format: Brief, accurate, and rooted directly in evidence from "
    "the video's content.\n"
    "\n"
    "- Video-Centric: Stay true to what's explicitly shown or stated in the video. Avoid relying on "
    "outside knowledge or speculation. Design questions so the correct answer cannot be easily "
    "determined without carefully analyzing the video.\n"
    "\n"
    "- Minimize Information Leakage: For question types like ranking or ordering, ensure that the "
    "order of candidates or options listed in the question doesn't inadvertently reveal the correct "
    "answer. Shuffle them to maintain neutrality.\n"
    "\n"
    "- Content-First: Timestamps and section titles within the captions are there for guidance. Do not "
    "explicitly refer to those markers in your questions or answers. Focus on the events and elements "
    "themselves.\n"
    "\n"
    "- Unambiguous: Ensure each question has a single, clearly defined correct answer. Avoid questions "
    "that are open to multiple interpretations (e.g., counting elements where viewers might "
    "disagree).\n"
    "\n"
    "- Visual Elements: Questions focused on visual reasoning or visual narratives should emphasize "
    "the interpretation of the visuals. Keep the question minimal, letting the answer describe the "
    "specific visual elements in detail.\n"
    "\n"
    "You want to test students' capabilities of understanding the video, including but not limited to "
    "the following aspects:\n"
    "\n"
    "Ability: Summarize and compare long parts of the video. Ability: Compress information from the "
    "video rather than just listing the actions that happened in the video. Ability: Identify the most "
    "important segments of the video. Ability: Recognize and understand the visual elements in "
    "different parts of the video. Ability: Understand the timeline of events and the plot in the "
    "video. Ability: Count objects, actions and events. Focus on higher-level counting where the same "
    "instance does not occur in all/every frame and actions are sufficiently dissimilar. Ability: "
    "Understand and reason about cause and effect in the video. Ability: Understand the unspoken "
    "message that the audience may perceive after watching the video, which may require common sense "
    "knowledge to infer. Ability: Understand the visual reasoning of why and how important visual "
    "content is shown in the video. Ability: Understand the visual narrative of the video and the mood "
    "of the video and which visual elements do contribute to that. Ability: Understand object states "
    "change over time, such as door opening and food being eaten. Presentation - QUESTION: Introduce "
    "each question as \"QUESTION 1, 2, 3: (capability) full question\". - ANSWER: Follow the format "
    "\"CORRECT ANSWER: correct answer\".\n"
    "\n"
    "Good example questions: - Question (counting): How many ingredients are added to the bowl in "
    "total throughout the video? Correct Answer: 3.\n"
    "\n"
    "- Question (goal reasoning): What is the purpose of the man standing in front of the whiteboard "
    "with a diagram on it? Correct Answer: To explain the features and capabilities of the vehicle.\n"
    "\n"
    "- Question (cause and effect): How does the document help people to be happier? Correct Answer: "
    "It helps people to identify and focus on the things that make them happy, and to develop healthy "
    "habits.\n"
    "\n"
    "- Question (timeline event): In what order are the following topics discussed in the video: "
    "history of pantomime, importance of pantomime, mime as a tool for communication, benefits of "
    "pantomime? Correct Answer: Mime as a tool for communication, history of pantomime, importance of "
    "pantomime, benefits of pantomime.\n"
    "\n"
    "- Question (predictive): What happens after the man jumps up and down on the diving board? "
    "Correct Answer: He jumps into the pool.\n"
    "\n"
    "- Question (summarization): What is the overall opinion of the reviewers about Hawaiian Shaka "
    "Burger? Correct Answer: The food is good, but the patties are frozen.\n"
    "\n"
    "- Question (creator intent): What message does the video creators try to send to the viewers? "
    "Correct Answer: Nature is essential for human well-being.\n"
    "\n"
    "- Question (visual-temporal): What color is the scarf that Jessica wears before she enters the "
    "restaurant? Correct Answer: Red.\n"
    "\n"
    "- Question (visual narrative): How does John's overall facial expression contribute to the "
    "explanation of the financial situation that is described in the video? Correct Answer: He shows "
    "sad feelings and expression when he described the financial collapse of the company which adds to "
    "the sense of empathy that video describes.\n"
    "\n"
    "- Question (visual reasoning): What was shown to support the effects of a high cholesterol diet "
    "in the video? Correct Answer: Video demonstrates how cholesterol gradually clogs blood vessels, "
    "using an animation to illustrate the cross-section of vessels and the buildup of plaque.\n"
    "\n"
    "Bad example questions because it can be answered by common sense. -Question (counting): How many "
    "players are there in a soccer team? Correct Answer: 11.\n"
    "\n"
    "Bad example questions because it asks for trivial details. - Question (counting): How many times "
    "the word 'hurricane' is said in the video? Correct Answer: 7.\n"
    "\n"
    "Bad example questions because the summary of topics are subjective and ambiguous. - Question "
    "(timeline event): List the sequence of topics Grace discusses in the video, starting with the "
    "earliest. Correct Answer: Getting ready for a photoshoot, attending a baseball game, showing off "
    "her new outfit, playing a Wayne's World board game, and discussing her upcoming week.\n"
    "\n"
    "Dense Caption with Timestamps: {video_inputs_str}"
)

# C.2.4, stage 2: decoys (wrong answers) for the stage-1 questions, with every example.
DECOY_PROMPT = (
    "Role: You are a rigorous teacher in a \"Long-term Video Understanding\" class. You will assist "
    "students in developing strong critical thinking skills. This requires creating sophisticated test "
    "questions to accompany video content.\n"
    "\n"
    "Understanding: I will provide:\n"
    "\n"
    "- Dense Captions: A breakdown of the video, including structure, key events, and timestamps. - "
    "Target Questions & Answers: A set of {target_number} questions about the video, along with their "
    "correct answers.\n"
    "\n"
    "Task: Generate High-Quality Multiple-Choice Questions\n"
    "\n"
    "1. Analyze: Carefully study the dense captions, questions, and correct answers. Familiarize "
    "yourself with the nuanced details of the video content.\n"
    "\n"
    "2. Decoy Design: For each target question, generate {decoy_number} incorrect answers "
    "(distractors). These distractors must be:\n"
    "\n"
    "Challenging: Plausible to the point where students need deep content understanding and critical "
    "thinking to choose the correct answer.\n"
    "Stylistic Match: Mimic the style, tone, and complexity of the correct answer.\n"
    "\n"
    "Similar Length: Keep length close to that of the correct answer, preventing students from "
    "eliminating choices based on length differences.\n"
    "Factually Relevant: Related to the video content, even if slightly incorrect due to a detail "
    "change, misinterpretation, or logical fallacy.\n"
    "Reasonable: Each decoy should be something that could be true, making simple elimination "
    "impossible.\n"
    "\n"
    "Specific Techniques for Distractor Creation\n"
    "\n"
    "- Subtle Tweaks: Alter a minor detail from the correct answer (e.g., change a time, location, or "
    "name).\n"
    "\n"
    "- Confusing Similarity: Use a concept from elsewhere in the video that seems related but applies "
    "to a different context.\n"
    "\n"
    "- Misdirection: Introduce a true statement related to the video's theme but not directly "
    "answering the question.\n"
    "\n"
    "- Order Shuffling: If the question involves the order of events, subtly rearrange the order "
    "within the distractors.\n"
    "\n"
    "Presentation:\n"
    "\n"
    "QUESTION: Repeat the provided question faithfully (e.g., \"QUESTION 1 (Capability): ...\")\n"
    "CORRECT ANSWER: Repeat the correct answer (e.g., \"CORRECT ANSWER: ...\")\n"
    "WRONG ANSWERS: List each wrong answer on a separate line without using letters to label choices "
    "(e.g., \"WRONG ANSWER 1: ...\", \"WRONG ANSWER 2: ...\")\n"
    "\n"
    "GOOD Example: Question: What are the three main challenges that the college is taking on? Correct "
    "Answer: Food scarcity, pollution, and disease. Wrong Answer 1: Global warming, deforestation, and "
    "poverty. Wrong Answer 2: Hunger, homelessness, and crime. Wrong Answer 3: Obesity, malnutrition, "
    "and food insecurity. Wrong Answer 4: Food waste, water shortages, and air pollution.\n"
    "\n"
    "BAD examples where the decoys format is different from correct answer: Question: What color is "
    "the shirt that the woman is wearing? Correct Answer: Black. Wrong Answer 1: The woman is wearing "
    "a white shirt. Wrong Answer 2: The woman is wearing a blue shirt. Wrong Answer 3: The woman is "
    "wearing a green shirt. Wrong Answer 4: The woman is wearing a red shirt.\n"
    "\n"
    "BAD examples because only the correct answer is in positive sentiment. Question: What is the "
    "overall sentiment of the man in the video? Correct Answer: He is overjoyed with his new gift. "
    "Wrong Answer 1: He is upset his gift is not big enough. Wrong Answer 2: He is sad about life in "
    "general. Wrong Answer 3: He is upset the gift is not great. Wrong Answer 4: He seems down and "
    "unhappy.\n"
    "\n"
    "Dense Caption with Timestamps: {video_inputs_str}\n"
    "\n"
    "Question and Correct Answer: {question_and_answer_str}"
)

# ---- what the paper leaves out (our additions, documented in docs/build.md) ------------------------

# The topics prompt asks for pairs "using output format" but the paper does not print that format;
# lvu.construct.neptune_prompts.format_topics_prompt puts this one between the task and the transcript.
TOPICS_OUTPUT_FORMAT = (
    "**Output Format:** one pair per topic, in the order the topics come in the video:\n"
    "Topic 1: <short topic title>\n"
    "Description 1: <one or two sentences on what the topic covers>"
)

# The segment prompt says "The video context is also given" but its template has no slot for it;
# format_segment_prompt adds this line before "Partial Script:" when a context is given, with the
# label the clustering prompt uses for the same text.
SEGMENT_CONTEXT_LINE = "Context: {summary_of_title_and_description}"


class Fix(NamedTuple):
    """One PDF-extraction artefact: `paper` (as extracted) became `ours` in the constant `prompt`."""

    prompt: str
    paper: str
    ours: str


EXTRACTION_FIXES: tuple[Fix, ...] = (
    # The Figure 6 caption (and a page break) fall between the Mood question and the Background one.
    # The break follows a complete sentence, so the paragraph break is kept (see the module docstring).
    Fix("FRAME_CAPTION_PROMPT",
        ("colors or text.\n"
         "\n"
         "\n"
         "Figure 6: **Diversity sampling:** We show the change in cluster distribution after diversity "
         "sampling.\n"
         "\n"
         "Question(Background)"),
        ("colors or text.\n"
         "\n"
         "Question(Background)")),
    # The paper writes this placeholder as a bare word; braces mark it like the paper's braced ones.
    Fix("TOPICS_PROMPT",
        "**Transcript:** transcript",
        "**Transcript:** {transcript}"),
    # The Figure 7 caption and a page break split the sentence "...visual captions and transcript...".
    Fix("CLUSTERING_PROMPT",
        ("visual captions and\n"
         "\n"
         "\n"
         "Figure 7: Video Captioning: We extract dense segment level captions automatically for each "
         "video. This is done by prompting an LLM using video signals (ASR, frame captions, shot "
         "boundaries and metadata) with various different steps and prompts.\n"
         "\n"
         "transcript sentences"),
        "visual captions and transcript sentences"),
    # Bare-word placeholder, braced.
    Fix("SEGMENT_PROMPT",
        "less than max_output_characters characters",
        "less than {max_output_characters} characters"),
    # A stray '*' (a bold marker the extraction half ate) and a bare-word placeholder.
    Fix("SEGMENT_PROMPT",
        "Initial Description:* shared_topic_cluster_caption",
        "Initial Description: {shared_topic_cluster_caption}"),
    # A line broken in the middle of the phrase.
    Fix("SEGMENT_PROMPT",
        ("updated video\n"
         "description text"),
        "updated video description text"),
    # Bare-word placeholder, braced.
    Fix("SEGMENT_PROMPT",
        "Partial Script: doc_segment",
        "Partial Script: {doc_segment}"),
    # Bold run garbled into six asterisks each side; the paper's other bold labels read **Task:**.
    Fix("VISUAL_SUPPORT_PROMPT",
        "******Task:******",
        "**Task:**"),
    # Bare-word placeholder, braced.
    Fix("VISUAL_SUPPORT_PROMPT",
        "Scene Story: dense_caption_for_the_segment",
        "Scene Story: {dense_caption_for_the_segment}"),
    # Bare-word placeholder, braced.
    Fix("VISUAL_SUPPORT_PROMPT",
        "Visual Captions: visual_captions_of_the_segment",
        "Visual Captions: {visual_captions_of_the_segment}"),
    # Garbled bold markers around "Output Format:".
    Fix("VISUAL_SUPPORT_PROMPT",
        "****Output** Format:******",
        "**Output Format:**"),
    # A page break in the middle of "full question".
    Fix("QA_PROMPT",
        ("(capability) full\n"
         "\n"
         "question"),
        "(capability) full question"),
    # A page break in the middle of the sentence.
    Fix("QA_PROMPT",
        ("Video demonstrates\n"
         "\n"
         "how cholesterol"),
        "Video demonstrates how cholesterol"),
)

PAPER_PROMPTS: dict[str, str] = {
    "frame_caption": FRAME_CAPTION_PROMPT,
    "shot_summary": SHOT_SUMMARY_PROMPT,
    "topics": TOPICS_PROMPT,
    "clustering": CLUSTERING_PROMPT,
    "segment": SEGMENT_PROMPT,
    "visual_support": VISUAL_SUPPORT_PROMPT,
    "qa": QA_PROMPT,
    "decoys": DECOY_PROMPT,
}
"""Every prompt by stage name (the names lvu.construct uses for the stages)."""
