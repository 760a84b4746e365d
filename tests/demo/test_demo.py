"""`manage.py demo` builds a simulated study whose dashboards mean something, the same every time, and can run twice."""

import hashlib
import io
import json
import re
import wave
from collections import Counter
from pathlib import Path

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import call_command

from accounts.roles import user_roles
from annotation.models import AnnotationCampaign, AnnotationTask, ExpertAnnotation
from annotation.services.annotation_campaigns import annotation_task_next
from corpus.models import Caption, CaptioningSystem, Clip, Dataset
from ratings.models import Campaign, CaptionPair, PairwiseVote, ThumbsRating
from tests.annotation.table_counts import all_table_counts
from tests.ratings.campaign_data import headphone_pass_give

SPLITS = ("HC", "HI", "HM", "MM")


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def run_demo(*args) -> str:
    output = io.StringIO()
    call_command("demo", *args, stdout=output)
    return output.getvalue()


def printed_passwords(output: str) -> dict[str, str]:
    """The accounts table: a heading row, a rule, then one row per account (name, roles, password)."""
    lines = output.splitlines()
    heading = next(index for index, line in enumerate(lines) if line.split() == ["Account", "Roles", "Password"])
    assert set(lines[heading + 1].replace(" ", "")) == {"-"}, "a rule under the headings"
    rows = {}
    for line in lines[heading + 2 :]:
        match = re.match(r"^(admin|annotator|reviewer|rater) +\S+ +(\S+)$", line)
        if not match:
            break
        rows[match.group(1)] = match.group(2)
    return rows


def media_files(root: Path) -> list[Path]:
    return sorted(path for path in root.rglob("*") if path.is_file())


def study_digest() -> str:
    """Everything the simulated people did, by names and texts (never row ids): equal digests, equal studies."""
    votes = sorted(
        PairwiseVote.objects.filter(rater__username__startswith="sim-").values_list(
            "rater__username", "pair__source_key", "pair__caption_a__text", "pair__caption_b__text", "choice"
        )
    )
    ratings = sorted(
        (rater, text, precision, recall, str(fluency), str(conciseness), str(irrelevance))
        for rater, text, precision, recall, fluency, conciseness, irrelevance in ThumbsRating.objects.filter(
            rater__username__startswith="sim-"
        ).values_list(
            "rater__username", "caption__text", "precision", "recall", "fluency", "conciseness", "irrelevance"
        )
    )
    drafts = sorted(
        (username, external_id, json.dumps(draft, sort_keys=True))
        for username, external_id, draft in AnnotationTask.objects.values_list(
            "annotator__username", "clip__external_id", "draft"
        )
    )
    captions = sorted(Caption.objects.values_list("clip__external_id", "role", "text"))
    clips = sorted(Clip.objects.values_list("external_id", "sha256"))
    payload = json.dumps([votes, ratings, drafts, captions, clips], default=str)
    return hashlib.sha256(payload.encode()).hexdigest()


def test_demo_builds_a_simulated_study(db, media_root, monkeypatch):
    # The sign-in address comes from PORT when set (else from the address ./scripts/run last served on, which a
    # run-script test in this checkout may have written): pin it so the printed address is known.
    monkeypatch.setenv("PORT", "8000")
    output = run_demo("--no-metrics")

    # >= 40 clips of synthesized audio, measured independently of the ingestion code
    clips = list(Clip.objects.filter(dataset__name="demo").order_by("pk"))
    assert len(clips) >= 40
    for clip in clips:
        with wave.open(str(Path(clip.audio.path))) as audio:
            seconds = audio.getnframes() / audio.getframerate()
            assert (audio.getframerate(), audio.getnchannels(), audio.getsampwidth()) == (16000, 1, 2)
        assert 2.5 <= seconds <= 6.0 and clip.duration_seconds == pytest.approx(seconds)
        assert clip.waveform_peaks and max(clip.waveform_peaks) > 0.05

    # >= 6 captioning systems, a caption of each per clip, five references per clip
    captions = Caption.objects.filter(clip__dataset__name="demo")
    systems = set(captions.filter(role="candidate", system__isnull=False).values_list("system__name", flat=True))
    assert len(systems) >= 6 and CaptioningSystem.objects.filter(name__in=systems).count() == len(systems)
    assert captions.filter(role="reference").count() == 5 * len(clips)
    assert captions.filter(system__isnull=False).count() == len(systems) * len(clips)

    # >= 12 simulated raters who cannot sign in, votes on every split, THumBS ratings by panels
    simulated = get_user_model().objects.filter(username__startswith="sim-rater-")
    assert simulated.count() >= 12 and not any(user.has_usable_password() for user in simulated)
    votes = PairwiseVote.objects.filter(rater__in=simulated)
    assert {split: votes.filter(pair__split=split).count() > 0 for split in SPLITS} == dict.fromkeys(SPLITS, True)
    assert set(votes.values_list("rater__username", flat=True)) == set(simulated.values_list("username", flat=True))
    assert CaptionPair.objects.filter(split="HI").exclude(gold_choice="a").count() == 0  # attention checks
    ratings = ThumbsRating.objects.filter(rater__in=simulated)
    assert ratings.values("rater").distinct().count() >= 12
    assert set(Counter(ratings.values_list("caption_id", flat=True)).values()) == {3}  # three raters per caption

    # an annotation study: three simulated annotators on every clip of it, gold published for most
    study = AnnotationCampaign.objects.get(name="demo-annotation-study")
    tasks = AnnotationTask.objects.filter(campaign=study, status="submitted")
    assert tasks.values("annotator").distinct().count() == 3
    assert tasks.count() == 3 * study.clips.count()
    gold = ExpertAnnotation.objects.filter(clip__in=study.clips.all(), status="gold")
    assert 0 < gold.count() < study.clips.count()  # the rest wait for the demo reviewer

    # the demo accounts work, and the rater has a share left to do in both studies
    passwords = printed_passwords(output)
    assert sorted(passwords) == ["admin", "annotator", "rater", "reviewer"]
    for username, password in passwords.items():
        user = authenticate(username=username, password=password)
        assert user is not None and user_roles(user) == {username}, username
    rater = get_user_model().objects.get(username="rater")
    for campaign in Campaign.objects.filter(dataset__name="demo"):
        items = campaign.assignments.get(rater=rater).items
        assert items.exists() and not items.filter(completed_at__isnull=False).exists()
    assert get_user_model().objects.get(username="admin").is_superuser
    assert f"Simulated study on dataset demo: {len(clips)} clips ({len(clips)} with audio" in output
    assert "Sign in at http://127.0.0.1:8000/" in output


def test_the_demo_pages_say_the_study_is_simulated(db, media_root, client):
    run_demo("--no-metrics")
    demo = Dataset.objects.get(name="demo")
    rater = get_user_model().objects.get(username="rater")
    headphone_pass_give(rater)  # else the item page sends the rater to the screening first
    item = rater.assignments.filter(campaign__dataset=demo).first().items.order_by("position").first()
    annotation_campaign = AnnotationCampaign.objects.filter(dataset=demo, annotators__username="annotator").first()
    annotator = get_user_model().objects.get(username="annotator")
    task = annotation_task_next(campaign=annotation_campaign, annotator=annotator)
    for username, path, expected in (
        ("admin", f"/metrics/datasets/{demo.pk}/leaderboard/", True),
        ("rater", f"/ratings/items/{item.token}/", True),
        ("annotator", f"/annotate/tasks/{task.pk}/", True),
        # pages about no one dataset: a site holding the demo holds real data too
        ("admin", "/metrics/", False),
        ("rater", "/ratings/", False),
        (None, "/accounts/login/", False),
    ):
        client.logout()
        if username:
            client.force_login(get_user_model().objects.get(username=username))
        page = client.get(path, follow=True).content.decode()
        assert ('class="simulated-banner"' in page and "Simulated study." in page) is expected, path


def test_the_demo_is_the_same_every_time(db, media_root):
    # In the test's transaction (flush truncates inside it): a second build on a fresh database, its row ids shifted
    run_demo("--no-metrics")
    first = study_digest()
    from django.db import connection

    connection.check_constraints()  # PostgreSQL: fire the deferred foreign-key checks, or TRUNCATE refuses
    call_command("flush", "--noinput")
    for path in media_files(media_root):
        path.unlink()
    from django.contrib.auth.models import Group

    from accounts.roles import ALL_ROLES
    from annotation.models import AttributeTag
    from annotation.tag_library import attribute_tags_seed

    for role in ALL_ROLES:  # what the migrations made, which flush removed
        Group.objects.get_or_create(name=role)
    attribute_tags_seed(AttributeTag)
    # rows made and gone before it: the second study's row ids differ from the first's
    from corpus.models import Dataset

    shift = Dataset.objects.create(name="shift")
    shift_clips = Clip.objects.bulk_create([Clip(dataset=shift, external_id=f"shift-{n}") for n in range(7)])
    shift_captions = Caption.objects.bulk_create(
        [Caption(clip=clip, text=f"shift {n}", role="reference", position=0) for n, clip in enumerate(shift_clips)]
    )
    CaptionPair.objects.bulk_create(
        [
            CaptionPair(
                clip=shift_clips[0],
                caption_a=shift_captions[0],
                caption_b=shift_captions[n],
                split="HC",
                source_key=f"shift-{n}",
            )
            for n in range(1, 4)
        ]
    )
    get_user_model().objects.bulk_create([get_user_model()(username=f"shift-{n}") for n in range(5)])
    Campaign.objects.create(name="shift", dataset=shift, task_type="pairwise")
    Campaign.objects.filter(name="shift").delete()
    get_user_model().objects.filter(username__startswith="shift-").delete()
    shift.delete()

    run_demo("--no-metrics")

    assert study_digest() == first


def test_demo_runs_again_without_changing_anything_and_resets_passwords_when_asked(db, media_root):
    first = printed_passwords(run_demo("--no-metrics"))
    counts, files = all_table_counts(), media_files(media_root)
    password_hashes = dict(get_user_model().objects.values_list("username", "password"))

    output = run_demo("--no-metrics")

    assert all_table_counts() == counts
    assert media_files(media_root) == files
    assert dict(get_user_model().objects.values_list("username", "password")) == password_hashes
    assert "with audio, 0 stored now)" in output
    assert printed_passwords(output) == dict.fromkeys(["admin", "annotator", "reviewer", "rater"], "(unchanged)")

    # --reset-passwords: new passwords, each of which signs in
    second = printed_passwords(run_demo("--no-metrics", "--reset-passwords"))
    assert all(second[name] != first[name] for name in first)
    assert all(authenticate(username=name, password=password) for name, password in second.items())


@pytest.mark.slow
def test_the_demo_dashboards_mean_something(db, media_root):
    from metrics_bridge.models import MetricRun
    from metrics_bridge.services.evaluation.agreement import calibration_summary
    from metrics_bridge.services.evaluation.dashboards import dashboard_state
    from ratings.services.quality import campaign_rater_quality

    # The demo's metrics but FENSE (its error detector alone takes ~45 s of CI's two cores; it is scored like SBERT)
    demo_metrics = ["BLEU_1", "BLEU_4", "ROUGE_L", "CIDEr_D", "SBERT"]
    run_demo("--metrics", ",".join(demo_metrics))
    dataset = Clip.objects.filter(dataset__name="demo").first().dataset
    assert set(MetricRun.objects.values_list("status", flat=True)) == {"done"}

    # Agreement: >= 30 pairs with a human preference in every split, counted here from the votes themselves
    sums: dict[int, int] = Counter()
    for pair_id, choice in PairwiseVote.objects.values_list("pair_id", "choice"):
        sums[pair_id] += {"a": 1, "b": -1}.get(choice, 0)
    splits = dict(CaptionPair.objects.values_list("pk", "split"))
    decided = Counter(splits[pair_id] for pair_id, total in sums.items() if total)
    agreement = dashboard_state(kind="agreement", target=dataset)
    assert agreement.fresh and {split: agreement.payload["pairs"][split] for split in SPLITS} == dict(decided)
    assert min(decided.values()) >= 30
    assert set(demo_metrics) <= set(agreement.payload["metrics"])
    # every part of the agreement page (CALIBRATED's fit too) and the benchmark table were stored by the build:
    # their first view shows numbers, not "computing"
    from metrics_bridge.services.evaluation.benchmark import benchmark_state
    from metrics_bridge.services.evaluation.dashboards import dashboard_part_states

    assert all(state.fresh for state in dashboard_part_states(kind="agreement", target=dataset).values())
    assert benchmark_state().fresh
    assert calibration_summary(dataset=dataset)["row"]["total"] is not None  # CALIBRATED fitted

    # Sensitivity: a finished report of the demo's metrics that it runs (FENSE left out above), every factor applied
    from metrics_bridge.models import SensitivityReport

    (sensitivity,) = SensitivityReport.objects.filter(dataset=dataset)
    assert sensitivity.status == SensitivityReport.Status.DONE
    assert {"BLEU_4", "CIDEr_D", "SBERT"} <= set(sensitivity.result["metrics"])
    assert all(row["applied"] > 0 for row in sensitivity.result["perturbations"].values())

    # THumBS: alpha and ICC defined, every metric correlated
    thumbs = dashboard_state(kind="thumbs", target=Campaign.objects.get(name="demo-thumbs"))
    assert thumbs.fresh
    alpha = thumbs.payload["agreement"]["krippendorff_alpha"]
    assert all(alpha[field] is not None and alpha[field] > 0.2 for field in ("precision", "recall", "overall"))
    icc = thumbs.payload["agreement"]["icc2k_overall"]
    assert icc["value"] is not None and icc["value"] > 0.5 and icc["items"] >= 30
    assert set(demo_metrics) <= set(thumbs.payload["correlations"])

    # Leaderboard: every system with its win rate interval; people rank the graded systems as simulated
    leaderboard = dashboard_state(kind="leaderboard", target=dataset)
    rows = {row["system"]: row for row in leaderboard.payload["systems"]}
    assert all(row["win_rate_ci"] and row["metrics"]["SBERT"] is not None for row in rows.values())
    by_win_rate = sorted(rows, key=lambda system: -rows[system]["human"]["pairwise_win_rate"])
    assert by_win_rate[0] == "demo-accurate"
    assert set(by_win_rate[-2:]) == {"demo-generic", "demo-wrong-source"}

    # Quality control finds the careless rater and the one failing the attention checks
    quality = {row.username: row for row in campaign_rater_quality(campaign=Campaign.objects.get(name="demo-pairwise"))}
    careless, failing = quality["sim-rater-11"], quality["sim-rater-12"]
    others = [row for name, row in quality.items() if name.startswith("sim-") and row not in (careless, failing)]
    assert careless.agreement < min(row.agreement for row in others)
    assert careless.median_seconds < min(row.median_seconds for row in others)

    def gold_pass_rate(row) -> float:
        return row.gold_passed / row.gold_compared

    assert all(row.gold_compared >= 5 for row in [failing, *others])
    assert gold_pass_rate(failing) < 0.5 < min(gold_pass_rate(row) for row in others)
