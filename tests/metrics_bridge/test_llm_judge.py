"""LLM judges (AudioCapBench 3-D, AIR-Bench reference with position swap) against a local fake endpoint."""

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from metrics_bridge.scoring.base import DatasetSettings, ScoringContext, ScoringRequest
from metrics_bridge.scoring.llm_client import ChatClient, InMemoryLLMCache, LLMError
from metrics_bridge.scoring.llm_judge import (
    CATEGORY_GUIDANCE,
    JUDGE_3D_SYSTEM,
    AirBenchReferenceJudge,
    AudioCapBenchJudge,
    parse_three_scores,
    parse_two_scores,
)

REFERENCE_ANSWER = "a dog barks while a man speaks"


class FakeChatCompletions(BaseHTTPRequestHandler):
    """Speaks the chat-completions protocol with deterministic answers; records every request."""

    received: list[dict] = []

    def do_POST(self):  # noqa: N802 (http.server API)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).received.append(
            {"path": self.path, "body": body, "authorization": self.headers.get("Authorization")}
        )
        if body["model"] == "broken":
            self.send_response(400)
            self.end_headers()
            self.wfile.write(b'{"error": "bad model"}')
            return
        messages = body["messages"]
        system = messages[0]["content"] if messages[0]["role"] == "system" else ""
        user = messages[-1]["content"]
        if system == JUDGE_3D_SYSTEM:
            predicted = user.split("Predicted caption:\n", 1)[1].split("\n", 1)[0]
            scores = (8, 6, 9) if "dog" in predicted else (2, 1, 3)
            content = (
                "```json\n"
                + json.dumps(dict(zip(("accuracy", "completeness", "hallucination"), scores, strict=False)))
                + "\n```"
            )
        elif "Answer the question as if you had listened" in user:
            content = "  A dog barks near a talking man.\n"
        elif "Assistant 1's Answer" in user:
            first = re.search(r"Assistant 1's Answer\]\n(.*?)\n\[The End", user, re.S).group(1)
            # the reference always gets 9; the hypothesis 6 in second position, 4 in first (position bias)
            content = "9 6" if first == REFERENCE_ANSWER else "4 9"
        else:  # X-ACE Table 10 prompt
            content = (
                'Here you go: {"barking": {"source": ["dog"], "attr": None}, '
                '"speaking": {"source": ["man"], "attr": ["loudly"]}}'
            )
        answer = {
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": len(user) // 4, "completion_tokens": 7},
        }
        payload = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def endpoint():
    FakeChatCompletions.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeChatCompletions)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def context_for(api_base, model="judge-model", **dataset_settings):
    return ScoringContext(
        llm={"api_base": api_base, "api_key": "secret", "model": model},
        llm_cache=InMemoryLLMCache(),
        dataset=DatasetSettings(**dataset_settings),
    )


def test_unavailable_without_endpoint():
    assert AudioCapBenchJudge().unavailable_reason(ScoringContext()) == (
        "LLM_JUDGE_3D: no OpenAI-compatible endpoint configured (set LLM_API_BASE and LLM_MODEL)"
    )
    assert AirBenchReferenceJudge().unavailable_reason(None).startswith("LLM_JUDGE_REF: no OpenAI-compatible endpoint")
    assert AudioCapBenchJudge().unavailable_reason(ScoringContext(llm={"api_base": "http://x"})) is not None


def test_three_dimension_judge_scores_counts_tokens_and_caches(endpoint):
    judge = AudioCapBenchJudge()
    context = context_for(endpoint)
    requests = [
        ScoringRequest("a dog is barking", (REFERENCE_ANSWER,)),
        ScoringRequest("a bell rings", (REFERENCE_ANSWER,)),
    ]
    results = judge.score_batch(requests, context)["LLM_JUDGE_3D"]
    assert [r.value for r in results] == [pytest.approx(23 / 3), pytest.approx(2.0)]
    first = results[0].details
    assert (first["accuracy"], first["completeness"], first["hallucination"]) == (8, 6, 9)
    assert first["category"] == "sound" and first["model"] == "judge-model"
    sent = FakeChatCompletions.received[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["authorization"] == "Bearer secret"
    assert first["prompt_tokens"] == len(sent["body"]["messages"][-1]["content"]) // 4
    assert first["completion_tokens"] == 7 and first["cached_calls"] == 0
    assert len(FakeChatCompletions.received) == 2

    again = judge.score_batch(requests, context)["LLM_JUDGE_3D"]
    assert len(FakeChatCompletions.received) == 2  # every answer came from the cache
    assert [r.value for r in again] == [r.value for r in results]
    assert again[0].details["cached_calls"] == 1 and again[0].details["prompt_tokens"] == 0


@pytest.mark.parametrize(
    ("domain", "guidance"),
    [
        ("sound", "sound sources and sound events"),
        ("music", "genre, instrumentation"),
        ("speech", "speaker characteristics"),
    ],
)
def test_the_dataset_domain_chooses_the_category_guidance(endpoint, domain, guidance):
    context = context_for(endpoint, domain=domain)
    result = AudioCapBenchJudge().score_batch([ScoringRequest("a dog", ("a guitar plays",))], context)
    prompt = FakeChatCompletions.received[-1]["body"]["messages"][-1]["content"]
    assert guidance in prompt
    assert all(other not in prompt for other in CATEGORY_GUIDANCE.values() if other != CATEGORY_GUIDANCE[domain])
    assert result["LLM_JUDGE_3D"][0].details["category"] == domain
    assert AudioCapBenchJudge().version_for(context).endswith(f"+judge-model+domain-{domain}")
    with pytest.raises(ValueError, match="domain must be one of"):
        DatasetSettings(domain="poetry")


def test_reference_judge_averages_the_position_swapped_rounds(endpoint):
    context = context_for(endpoint)
    result = AirBenchReferenceJudge().score_batch(
        [ScoringRequest("a dog barks", (REFERENCE_ANSWER, "a man talks near a dog"))], context
    )["LLM_JUDGE_REF"][0]
    assert result.value == pytest.approx((6 + 4) / 2)
    assert result.details["hypothesis_scores"] == [6.0, 4.0]
    assert result.details["reference_scores"] == [9.0, 9.0]
    assert result.details["calls"] == 2 and result.details["completion_tokens"] == 14
    rounds = [r["body"]["messages"][-1]["content"] for r in FakeChatCompletions.received]
    assert rounds[0].index(REFERENCE_ANSWER + "\n[The End of Assistant 1") > 0
    assert rounds[1].index("a dog barks\n[The End of Assistant 1") > 0
    assert result.details["reference_source"] == "first"
    assert AirBenchReferenceJudge().version_for(context) == "airbench-ref-swap-prompt-1+judge-model+reference-first"


def test_reference_judge_can_compare_with_an_llm_written_reference_generated_once(endpoint):
    context = context_for(endpoint, airbench_reference="llm")
    references = ("a dog barks loudly", "a man talks near a dog")
    requests = [ScoringRequest("a dog barks", references), ScoringRequest("a bell rings", references)]
    results = AirBenchReferenceJudge().score_batch(requests, context)["LLM_JUDGE_REF"]
    generated = "A dog barks near a talking man."
    assert [r.details["reference_answer"] for r in results] == [generated, generated]
    assert results[0].details["reference_source"] == "llm"
    prompts = [r["body"]["messages"][-1]["content"] for r in FakeChatCompletions.received]
    generations = [p for p in prompts if "Answer the question as if you had listened" in p]
    assert len(generations) == 1  # written once, then served from the cache for the second caption
    assert "- a dog barks loudly\n- a man talks near a dog" in generations[0]
    judged = [p for p in prompts if "Assistant 1's Answer" in p]
    assert len(judged) == 4 and all(generated in p for p in judged)
    assert results[0].details["calls"] == 3 and results[1].details["cached_calls"] == 1
    assert AirBenchReferenceJudge().version_for(context).endswith("+judge-model+reference-llm-prompt-1")
    AirBenchReferenceJudge().score_batch(requests[:1], context)
    assert len(FakeChatCompletions.received) == len(prompts)  # a rerun asks nothing


def test_http_error_is_reported_with_status(endpoint):
    client = ChatClient(endpoint, "broken", retries=0)
    with pytest.raises(LLMError, match="HTTP 400"):
        client.complete("hello")


def test_unreachable_endpoint_is_a_clear_error():
    client = ChatClient("http://127.0.0.1:9/v1", "m", retries=0, timeout=2)
    with pytest.raises(LLMError, match="cannot reach"):
        client.complete("hello")


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ('{"accuracy": 7, "completeness": 5, "hallucination": 10, "reasoning": "ok"}', (7, 5, 10)),
        ('Sure!\n```json\n{"Accuracy": "6", "Completeness": 4.5, "Hallucination": 9}\n```', (6, 4.5, 9)),
        ("accuracy: 3\ncompleteness = 2\nhallucination: 8", (3, 2, 8)),
    ],
)
def test_parse_three_scores(answer, expected):
    scores = parse_three_scores(answer)
    assert (scores["accuracy"], scores["completeness"], scores["hallucination"]) == expected


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ('{"accuracy": 7, "completeness": 5}', "lacks hallucination"),
        ('{"accuracy": 12, "completeness": 5, "hallucination": 1}', "outside 0-10"),
        ("I cannot rate this.", "lacks accuracy"),
    ],
)
def test_parse_three_scores_errors(answer, message):
    with pytest.raises(LLMError, match=message):
        parse_three_scores(answer)


def test_parse_two_scores():
    assert parse_two_scores("8 7") == (8.0, 7.0)
    assert parse_two_scores("Scores:\n7.5, 9\nBecause...") == (7.5, 9.0)
    with pytest.raises(LLMError, match="no line with two scores"):
        parse_two_scores("Assistant 2 is better.")
    with pytest.raises(LLMError, match="outside 1-10"):
        parse_two_scores("0 11")


def test_xace_with_the_llm_extractor(endpoint):
    from metrics_bridge.scoring.xace import XaceScorer

    scorer = XaceScorer(extractor="llm")
    assert scorer.unavailable_reason(ScoringContext()).startswith("XACE (LLM extractor): no OpenAI-compatible endpoint")
    context = context_for(endpoint)
    result = scorer.score_batch([ScoringRequest("a dog barking as a man speaks loudly", (REFERENCE_ANSWER,))], context)
    details = result["XACE"][0].details
    assert details["extractor"] == "llm-extractor-table10+judge-model"
    assert details["graphs"]["candidate"]["node"]["speaking"] == {"source": ["man"], "attr": ["loudly"]}
    assert details["graphs"]["candidate"]["relationship"] == {"barking|&|speaking": "and"}
    assert "llm-extractor-table10" in scorer.version_for(context)
    assert scorer.version_for(context).endswith("+judge-model")
