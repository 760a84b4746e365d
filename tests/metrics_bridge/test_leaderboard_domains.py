"""The leaderboard's per-domain columns (AudioCapBench's per-category tables) and the LLM judge's breakdown,
checked against sentence-transformers run directly and against the judge's known answers."""

import io
import json

import numpy as np
import pytest
from django.core.management import call_command
from django.urls import reverse

from corpus.models import Caption, CaptioningSystem, Clip, Dataset
from metrics_bridge.services.evaluation.leaderboard import leaderboard_build, leaderboard_table
from metrics_bridge.tasks.runs import enqueue_chunks
from tests.metrics_bridge.test_llm_judge import FakeChatCompletions, endpoint  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db

REFERENCES = ["a dog barks in the yard", "a dog is barking loudly", "barking of a dog outside"]
CAPTIONS = {
    # dataset: (domain, {system: [caption per clip]})
    "birds": ("sound", {"A": ["a dog barks", "birds sing in a tree"], "B": ["a dog is barking", "wind blows"]}),
    "yard": ("sound", {"A": ["a dog barks twice", "a car passes", "rain falls"]}),
    "songs": ("music", {"A": ["a piano plays a slow tune", "a dog howls to a song"]}),
}


def build():
    systems = {name: CaptioningSystem.objects.create(name=name) for name in ("A", "B")}
    for dataset_name, (domain, by_system) in CAPTIONS.items():
        dataset = Dataset.objects.create(name=dataset_name, domain=domain)
        clip_count = max(len(captions) for captions in by_system.values())
        clips = [Clip.objects.create(dataset=dataset, external_id=f"{dataset_name}-{n}") for n in range(clip_count)]
        for clip in clips:
            for position, text in enumerate(REFERENCES):
                Caption.objects.create(clip=clip, text=text, role="reference", author_kind="human", position=position)
        for system_name, captions in by_system.items():
            for clip, text in zip(clips, captions, strict=False):
                Caption.objects.create(clip=clip, text=text, role="candidate", author_kind="machine",
                                       system=systems[system_name])  # fmt: skip
    return systems


def sbert_reference(captions: list[str]) -> float:
    """Mean over captions of the mean cosine with the references (protocols.md §1), straight from the library."""
    from sentence_transformers import SentenceTransformer

    from metrics_bridge.scoring.sbert import model_path

    model = SentenceTransformer(str(model_path()), device="cpu", local_files_only=True)
    candidates = model.encode(captions, normalize_embeddings=True)
    references = model.encode(REFERENCES, normalize_embeddings=True)
    return float(np.mean(candidates @ references.T))


def test_domain_columns_pool_each_domain_over_its_datasets(client, make_user):
    build()
    for name in CAPTIONS:
        leaderboard_build(dataset=Dataset.objects.get(name=name), enqueue=enqueue_chunks, metric_names=["SBERT"])
    table = leaderboard_table(dataset=Dataset.objects.get(name="birds"), metric_names=["SBERT"])
    domains = table["domains"]
    assert domains["domains"] == ["sound", "music", "overall"]
    a_sound = CAPTIONS["birds"][1]["A"] + CAPTIONS["yard"][1]["A"]
    a_music = CAPTIONS["songs"][1]["A"]
    a = domains["systems"]["A"]
    assert a["sound"]["metrics"]["SBERT"] == pytest.approx(sbert_reference(a_sound), abs=1e-5)
    assert a["music"]["metrics"]["SBERT"] == pytest.approx(sbert_reference(a_music), abs=1e-5)
    assert a["overall"]["metrics"]["SBERT"] == pytest.approx(sbert_reference(a_sound + a_music), abs=1e-5)
    assert (a["sound"]["captions"], a["sound"]["datasets"], a["music"]["datasets"]) == (5, ["birds", "yard"], ["songs"])
    assert set(domains["systems"]["B"]) == {"sound", "overall"}  # B has no music captions
    # the page shows the table for the chosen metric
    client.force_login(make_user("chief", "admin"))
    url = reverse("metrics_bridge:leaderboard", args=[Dataset.objects.get(name="birds").pk])
    client.post(reverse("metrics_bridge:dashboard_refresh", args=["leaderboard", Dataset.objects.get(name="birds").pk]))
    page = client.get(url).content.decode()
    assert 'id="leaderboard-domains"' in page and "Per domain: SBERT" in page
    assert f"{a['music']['metrics']['SBERT']:.4f}" in page and f"{a['sound']['metrics']['SBERT']:.4f}" in page
    # a score computed on another dataset changes the cached page (its fingerprint covers the other datasets)
    Caption.objects.filter(clip__dataset__name="songs", system__name="A").first().delete()
    leaderboard_build(dataset=Dataset.objects.get(name="songs"), enqueue=enqueue_chunks, metric_names=["SBERT"])
    assert 'id="dashboard-stale"' in client.get(url).content.decode()


def test_judge_breakdown_per_system_and_domain(endpoint, settings):  # noqa: F811 (fixture)
    settings.LLM_API_BASE, settings.LLM_MODEL = endpoint, "judge-model"
    FakeChatCompletions.received = []
    build()
    out = io.StringIO()
    call_command("leaderboard", "--dataset", "birds", "--metrics", "LLM_JUDGE_3D", "--format", "json", stdout=out,
                 stderr=io.StringIO())  # fmt: skip
    board = json.loads(out.getvalue())
    # the fake judge gives (8, 6, 9) to a caption mentioning a dog, (2, 1, 3) to any other
    assert board["judge"]["A"] == {"accuracy": 5.0, "completeness": 3.5, "hallucination": 6.0}
    assert board["judge"]["B"] == {"accuracy": 5.0, "completeness": 3.5, "hallucination": 6.0}
    rows = {row["system"]: row for row in board["systems"]}
    assert rows["A"]["metrics"]["LLM_JUDGE_3D"] == pytest.approx((5.0 + 3.5 + 6.0) / 3)
    call_command("leaderboard", "--dataset", "yard", "--metrics", "LLM_JUDGE_3D", "--format", "json",
                 stdout=io.StringIO(), stderr=io.StringIO())  # fmt: skip
    table = leaderboard_table(dataset=Dataset.objects.get(name="birds"), metric_names=["LLM_JUDGE_3D"])
    sound = table["domains"]["systems"]["A"]["sound"]
    # A's five sound captions: dog, birds, dog, car, rain -> accuracy (8 + 2 + 8 + 2 + 2) / 5
    assert sound["judge"] == pytest.approx({"accuracy": 4.4, "completeness": 3.0, "hallucination": 5.4})
    assert "music" not in table["domains"]["systems"]["A"] or table["domains"]["systems"]["A"]["music"]["missing"]
