"""LLM judges of captions against references, on any OpenAI-compatible chat-completions endpoint.

- LLM_JUDGE_3D (AudioCapBench): accuracy, completeness, hallucination (10 = none), each 0-10;
  value = overall = their mean. Category guidance for the dataset's domain: sound (default), music or
  speech (`ScoringContext.dataset.domain`, a Dataset setting).
- LLM_JUDGE_REF (AIR-Bench chat evaluation): the judge rates a reference answer and the hypothesis
  1-10 for usefulness, relevance, accuracy and comprehensiveness; a second round swaps their positions;
  value = mean of the hypothesis' two scores (cancels position bias). The reference answer is, per
  dataset (`ScoringContext.dataset.airbench_reference`), the first reference caption or -- as AIR-Bench
  does for its chat benchmark -- an answer the LLM writes from the audio description (the reference
  captions) and the question, generated once per reference list and cached like every response.

Each response is cached by (model, sha256 of the prompt); details carry the scores, the rounds and
the token counts (usage.prompt_tokens / completion_tokens; 0 for answers served from the cache).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from .base import ScoreResult, ScoringContext, ScoringRequest
from .llm_client import ChatClient, ChatResponse, LLMError, endpoint_unavailable_reason

CATEGORY_GUIDANCE = {
    "sound": (
        "This is a general sound / sound-event clip. Judge how well the prediction identifies the sound "
        "sources and sound events, their order and the acoustic environment (indoor/outdoor, near/far, background)."
    ),
    "music": (
        "This is a music clip. Judge how well the prediction describes the genre, instrumentation, tempo and "
        "rhythm, vocals, and the mood or atmosphere."
    ),
    "speech": (
        "This is a speech clip. Judge how well the prediction describes the speaker characteristics (gender, age, "
        "voice quality), emotional tone, speaking style, and the transcript content when the references give it."
    ),
}

JUDGE_3D_SYSTEM = "You are a strict, consistent evaluator of audio captions. You answer with JSON only."

JUDGE_3D_TEMPLATE = """You are given reference captions written by people who listened to an audio clip, and a predicted caption from a model that listened to the same clip.

{guidance}

Reference captions:
{references}

Predicted caption:
{candidate}

Score the prediction on three independent dimensions, each an integer from 0 to 10:
- accuracy: are the sounds/events the prediction describes semantically correct according to the references? (precision)
- completeness: are all key elements of the references covered by the prediction? (recall)
- hallucination: does the prediction avoid inventing content that is not in the references? 10 = nothing invented, 0 = heavily invented.

Answer with one JSON object and nothing else:
{{"accuracy": <0-10>, "completeness": <0-10>, "hallucination": <0-10>, "reasoning": "<one sentence>"}}"""  # noqa: E501

REF_JUDGE_SYSTEM = "You are a helpful and precise assistant for checking the quality of the answer."

REF_JUDGE_TEMPLATE = """[Detailed Audio Description]
{description}
[Question]
Describe the audio in one sentence (an audio caption).
[The Start of Assistant 1's Answer]
{first}
[The End of Assistant 1's Answer]
[The Start of Assistant 2's Answer]
{second}
[The End of Assistant 2's Answer]
[System]
We would like to request your feedback on the performance of two AI assistants in response to the user question and audio description displayed above. AI assistants are provided with detailed audio descriptions and questions.
Please rate the helpfulness, relevance, accuracy, and comprehensiveness of their responses. Each assistant receives an overall score on a scale of 1 to 10, where a higher score indicates better overall performance. Please output a single line containing only two values indicating the scores for Assistant 1 and 2, respectively. The two scores are separated by a space."""  # noqa: E501

REFERENCE_ANSWER_SYSTEM = "You are a helpful assistant who has listened to an audio clip."

REFERENCE_ANSWER_TEMPLATE = """[Detailed Audio Description]
{description}
[Question]
Describe the audio in one sentence (an audio caption).
[System]
The detailed description above stands in for the audio itself. Answer the question as if you had listened to the clip: one fluent sentence covering what the description says, inventing nothing. Output the answer only."""  # noqa: E501

_NUMBER = r"-?\d+(?:\.\d+)?"


def parse_three_scores(text: str) -> dict[str, float]:
    """{"accuracy", "completeness", "hallucination"} from a JSON answer (code fences and chatter around it
    are tolerated; "key: value" lines are accepted too). Raises LLMError saying what is missing."""
    keys = ("accuracy", "completeness", "hallucination")
    found: dict[str, float] = {}
    cleaned = re.sub(r"```(?:json)?", "", text)
    for match in re.finditer(r"\{.*?\}", cleaned, flags=re.DOTALL):
        try:
            data = json.loads(match.group(0))
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict):
            lowered = {str(k).strip().lower(): v for k, v in data.items()}
            for key in keys:
                if key in lowered:
                    try:
                        found[key] = float(lowered[key])
                    except (TypeError, ValueError):
                        raise LLMError(
                            f"judge answer: {key} is not a number ({lowered[key]!r}) in {text[:200]!r}"
                        ) from None
            if found:
                break
    for key in keys:
        if key not in found:
            match = re.search(rf'"?{key}"?\s*[:=]\s*({_NUMBER})', cleaned, flags=re.IGNORECASE)
            if match:
                found[key] = float(match.group(1))
    missing = [k for k in keys if k not in found]
    if missing:
        raise LLMError(f"judge answer lacks {', '.join(missing)}: {text[:200]!r}")
    for key, value in found.items():
        if not 0 <= value <= 10:
            raise LLMError(f"judge answer: {key}={value} is outside 0-10: {text[:200]!r}")
    return found


def parse_two_scores(text: str) -> tuple[float, float]:
    """The two scores (Assistant 1, Assistant 2) of the AIR-Bench answer: the first line with two numbers."""
    for line in text.strip().splitlines():
        numbers = re.findall(_NUMBER, line.replace(",", " "))
        if len(numbers) >= 2:
            first, second = float(numbers[0]), float(numbers[1])
            if not (1 <= first <= 10 and 1 <= second <= 10):
                raise LLMError(f"judge answer: scores {first} {second} are outside 1-10: {text[:200]!r}")
            return first, second
    raise LLMError(f"judge answer has no line with two scores: {text[:200]!r}")


def _usage(responses: list[ChatResponse]) -> dict:
    return {
        "prompt_tokens": sum(r.prompt_tokens for r in responses if not r.cached),
        "completion_tokens": sum(r.completion_tokens for r in responses if not r.cached),
        "cached_calls": sum(1 for r in responses if r.cached),
        "calls": len(responses),
    }


class _LLMScorer:
    needs = frozenset({"references", "llm"})
    corpus_level = False
    protocol_kind = "embedding"
    metric_names: tuple[str, ...] = ()
    version = ""

    def unavailable_reason(self, context: ScoringContext | None = None) -> str | None:
        return endpoint_unavailable_reason(context.llm if context else None, self.metric_names[0])

    def version_for(self, context: ScoringContext) -> str:
        """The version including the judge model and the dataset settings the prompts use."""
        return f"{self.version}+{(context.llm or {}).get('model', 'unknown')}+{self.settings_label(context)}"

    def settings_label(self, context: ScoringContext) -> str:
        return ""

    def client(self, context: ScoringContext) -> ChatClient:
        reason = self.unavailable_reason(context)
        if reason:
            raise LLMError(reason)
        return ChatClient.from_context(context.llm, cache=context.llm_cache)


class AudioCapBenchJudge(_LLMScorer):
    metric_names = ("LLM_JUDGE_3D",)
    version = "audiocapbench-3d-prompt-1"

    def settings_label(self, context: ScoringContext) -> str:
        return f"domain-{context.dataset.domain}"

    def prompt(self, request: ScoringRequest, category: str) -> str:
        references = "\n".join(f"- {r}" for r in request.references if r.strip()) or "- (none)"
        return JUDGE_3D_TEMPLATE.format(
            guidance=CATEGORY_GUIDANCE[category], references=references, candidate=request.candidate
        )

    def score_batch(self, requests: Sequence[ScoringRequest], context: ScoringContext) -> dict[str, list[ScoreResult]]:
        client = self.client(context)
        category = context.dataset.domain
        if category not in CATEGORY_GUIDANCE:
            raise LLMError(f"LLM_JUDGE_3D: unknown domain {category!r} (sound, music or speech)")
        results = []
        for request in requests:
            response = client.complete(self.prompt(request, category), system=JUDGE_3D_SYSTEM)
            scores = parse_three_scores(response.text)
            overall = (scores["accuracy"] + scores["completeness"] + scores["hallucination"]) / 3
            details = {**scores, "overall": overall, "category": category, "model": client.model, **_usage([response])}
            results.append(ScoreResult(overall, details))
        return {"LLM_JUDGE_3D": results}


class AirBenchReferenceJudge(_LLMScorer):
    metric_names = ("LLM_JUDGE_REF",)
    version = "airbench-ref-swap-prompt-1"

    def settings_label(self, context: ScoringContext) -> str:
        choice = context.dataset.airbench_reference
        return "reference-first" if choice == "first" else "reference-llm-prompt-1"

    @staticmethod
    def prompt(description: str, first: str, second: str) -> str:
        return REF_JUDGE_TEMPLATE.format(description=description, first=first, second=second)

    @staticmethod
    def reference_answer(client: ChatClient, description: str, references: list[str], choice: str) -> tuple[str, list]:
        """(reference answer, responses it took): the first reference, or the LLM's answer (cached by prompt)."""
        if choice == "first":
            return references[0], []
        response = client.complete(
            REFERENCE_ANSWER_TEMPLATE.format(description=description), system=REFERENCE_ANSWER_SYSTEM
        )
        answer = " ".join(response.text.split())
        if not answer:
            raise LLMError("LLM_JUDGE_REF: the LLM wrote an empty reference answer")
        return answer, [response]

    def score_batch(self, requests: Sequence[ScoringRequest], context: ScoringContext) -> dict[str, list[ScoreResult]]:
        client = self.client(context)
        results = []
        for index, request in enumerate(requests):
            references = [r for r in request.references if r.strip()]
            if not references:
                raise LLMError(f"LLM_JUDGE_REF: request {index} ({request.candidate_id!r}) has no reference caption")
            description = "Captions written by people who listened to the clip:\n" + "\n".join(
                f"- {r}" for r in references
            )
            choice = context.dataset.airbench_reference
            reference, generation = self.reference_answer(client, description, references, choice)
            # round 1: reference first; round 2: hypothesis first
            first = client.complete(self.prompt(description, reference, request.candidate), system=REF_JUDGE_SYSTEM)
            second = client.complete(self.prompt(description, request.candidate, reference), system=REF_JUDGE_SYSTEM)
            reference_1, hypothesis_1 = parse_two_scores(first.text)
            hypothesis_2, reference_2 = parse_two_scores(second.text)
            value = (hypothesis_1 + hypothesis_2) / 2
            details = {
                "hypothesis_scores": [hypothesis_1, hypothesis_2],
                "reference_scores": [reference_1, reference_2],
                "reference_answer": reference,
                "reference_source": choice,
                "model": client.model,
                **_usage([*generation, first, second]),
            }
            results.append(ScoreResult(value, details))
        return {"LLM_JUDGE_REF": results}
