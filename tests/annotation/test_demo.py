"""`manage.py demo` builds what it says and can run twice."""

import io
import re
import wave
from pathlib import Path

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import call_command

from accounts.roles import user_roles
from annotation.models import Caption, CaptioningSystem, Clip, ExpertAnnotation
from ratings.models import Campaign, CaptionPair
from tests.annotation.table_counts import all_table_counts


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


def test_demo_builds_the_corpus_audio_judgements_and_accounts(db, media_root):
    output = run_demo("--no-metrics")

    clips = list(Clip.objects.filter(dataset__name="demo").order_by("pk"))
    assert len(clips) == 8
    for clip in clips:
        path = Path(clip.audio.path)
        assert path.is_file() and path.is_relative_to(media_root)
        with wave.open(str(path)) as audio:  # measured independently of the ingestion code
            seconds = audio.getnframes() / audio.getframerate()
            assert (audio.getframerate(), audio.getnchannels(), audio.getsampwidth()) == (16000, 1, 2)
        assert 3.0 <= seconds <= 6.0
        assert clip.duration_seconds == pytest.approx(seconds)
        assert clip.waveform_peaks and max(clip.waveform_peaks) > 0.05

    captions = Caption.objects.filter(clip__dataset__name="demo")
    assert captions.filter(role="reference", author_kind="human").count() == 40
    assert captions.filter(role="candidate", author_kind="machine").count() == 24
    systems = set(captions.filter(role="candidate").values_list("system__name", flat=True))
    assert systems == {"demo-listener", "demo-generic", "demo-hallucinator"}
    assert CaptioningSystem.objects.filter(name__in=systems).count() == 3

    pairs = CaptionPair.objects.filter(clip__dataset__name="demo")
    assert sorted(pairs.values_list("split", flat=True)) == ["HC"] * 3 + ["HM"] * 3 + ["MM"] * 3
    thumbs = Campaign.objects.get(name="demo-thumbs")
    pairwise = Campaign.objects.get(name="demo-pairwise")
    assert (thumbs.task_type, thumbs.captions.count()) == ("thumbs", 16)
    assert (pairwise.task_type, pairwise.pairs.count()) == ("pairwise", 9)
    assert [assignment.rater.username for assignment in thumbs.assignments.all()] == ["rater"]
    assert pairwise.assignments.get().items.count() == 9

    annotations = ExpertAnnotation.objects.filter(clip__dataset__name="demo", annotator__username="annotator")
    assert sorted(annotations.values_list("status", flat=True)) == ["gold", "gold", "submitted"]

    passwords = printed_passwords(output)
    assert sorted(passwords) == ["admin", "annotator", "rater", "reviewer"]
    for username, password in passwords.items():
        user = authenticate(username=username, password=password)
        assert user is not None, username
        assert user_roles(user) == {username}
    assert get_user_model().objects.get(username="admin").is_superuser
    assert "dataset demo: 8 clips (8 with audio, 8 stored now), 40 references, 24 candidates, 9 pairs" in output
    assert "Sign in at http://127.0.0.1:8000/" in output
    assert "runserver" not in output and "start the server" not in output


def test_demo_runs_twice_without_changing_anything(db, media_root):
    run_demo("--no-metrics")
    counts, files = all_table_counts(), media_files(media_root)
    password_hashes = dict(get_user_model().objects.values_list("username", "password"))

    output = run_demo("--no-metrics")

    assert all_table_counts() == counts
    assert media_files(media_root) == files
    assert dict(get_user_model().objects.values_list("username", "password")) == password_hashes
    assert "(8 with audio, 0 stored now)" in output
    assert printed_passwords(output) == dict.fromkeys(["admin", "annotator", "reviewer", "rater"], "(unchanged)")


def test_demo_reset_passwords_gives_working_new_ones(db, media_root):
    first = printed_passwords(run_demo("--no-metrics"))
    second = printed_passwords(run_demo("--no-metrics", "--reset-passwords"))
    assert all(second[name] != first[name] for name in first)
    assert all(authenticate(username=name, password=password) for name, password in second.items())


def test_demo_computes_bleu_and_rouge_for_every_candidate(db, media_root, django_capture_on_commit_callbacks):
    from metrics_bridge.models import MetricRun, MetricScore

    # Chunks are queued on commit; the test transaction never commits, so run those callbacks here.
    with django_capture_on_commit_callbacks(execute=True):
        output = run_demo()
    run = MetricRun.objects.get()
    assert run.status == "done", run.error
    assert {"BLEU_4", "ROUGE_L"} <= set(run.metrics)
    candidate_ids = set(
        Caption.objects.filter(clip__dataset__name="demo", role="candidate").values_list("pk", flat=True)
    )
    for metric in ("BLEU_4", "ROUGE_L"):
        scored = set(
            MetricScore.objects.filter(metric=metric, caption_id__in=candidate_ids).values_list("caption_id", flat=True)
        )
        assert scored == candidate_ids, metric
    assert f"metric run {run.pk} (" in output

    # A second demo run plans nothing new: every score exists already.
    score_count = MetricScore.objects.count()
    with django_capture_on_commit_callbacks(execute=True):
        run_demo()
    assert MetricScore.objects.count() == score_count
    assert MetricRun.objects.order_by("-pk").first().chunks_total == 0
