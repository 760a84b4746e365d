"""Admin uploads over the API: pairwise judgements, AudioCaps-F annotations, clip audio."""

import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from pydub.generators import Sine

from annotation.models import ExpertAnnotation
from corpus.models import Caption, Clip
from ratings.models import CaptionPair, PairwiseVote

PAIRWISE_ITEMS = [
    {
        "raw_name": "upload_clip.wav",
        "references": ["a dog barks", "a dog is barking", "a man speaks", "wind blows", "birds sing"],
        "HC": ["a dog barks", "a dog is barking", "human_1", "human_2", [1, 0, -1, 1]],
        "HM": ["wind blows", "wind is blowing", "human_4", "sys_a", [-1, -1, 0, 1]],
        "MM_1": ["wind is blowing", "a dog", "sys_a", "sys_b", [1, 1, 1, 1]],
    }
]
AUDIOCAPS_F = {
    "Yabc123.wav": {"dog barking": {"source": ["dog"], "attr": ["loud"]}, "wind": {"source": [], "attr": []}}
}


def _json_file(name: str, data) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, json.dumps(data).encode(), content_type="application/json")


def _wav_bytes(milliseconds: int) -> bytes:
    buffer = io.BytesIO()
    Sine(330, sample_rate=22050).to_audio_segment(duration=milliseconds, volume=-6).export(buffer, format="wav")
    return buffer.getvalue()


def test_admin_imports_pairwise_judgements_and_a_repeat_changes_nothing(world, client_for):
    client = client_for("admin")
    response = client.post(
        "/api/imports/pairwise-judgements/", {"file": _json_file("mini.json", PAIRWISE_ITEMS), "dataset": "up"}
    )
    assert response.status_code == 201, response.content
    summary = response.json()
    assert summary["source"] == "mini.json"
    assert CaptionPair.objects.filter(clip__dataset__name="up").count() == 3
    assert PairwiseVote.objects.filter(pair__clip__dataset__name="up").count() == 12
    again = client.post(
        "/api/imports/pairwise-judgements/", {"file": _json_file("mini.json", PAIRWISE_ITEMS), "dataset": "up"}
    )
    assert again.status_code == 200
    assert all(counts["created"] == 0 and counts["updated"] == 0 for counts in again.json()["counts"].values())


def test_broken_json_is_refused_naming_the_file(world, client_for):
    upload = SimpleUploadedFile("broken.json", b'[{"references": ', content_type="application/json")
    response = client_for("admin").post("/api/imports/pairwise-judgements/", {"file": upload, "dataset": "up"})
    assert response.status_code == 400
    assert response.json()["file"].startswith("broken.json: not valid JSON (line 1 column 17")
    invalid = _json_file("shape.json", {"not": "a list"})
    response = client_for("admin").post("/api/imports/pairwise-judgements/", {"file": invalid, "dataset": "up"})
    assert response.status_code == 400
    assert response.json()["file"].startswith("shape.json: expected a list of items")
    assert not Clip.objects.filter(dataset__name="up").exists()


def test_admin_imports_audiocaps_f(world, client_for):
    response = client_for("admin").post(
        "/api/imports/audiocaps-f/", {"file": _json_file("f.json", AUDIOCAPS_F), "dataset": "acf"}
    )
    assert response.status_code == 201, response.content
    annotation = ExpertAnnotation.objects.get(clip__dataset__name="acf", clip__external_id="abc123")
    assert annotation.status == "gold"
    assert list(annotation.events.values_list("label", flat=True)) == ["dog barking", "wind"]


@pytest.mark.parametrize("url", ["/api/imports/pairwise-judgements/", "/api/imports/audiocaps-f/"])
@pytest.mark.parametrize("role", ["rater", "annotator", "reviewer"])
def test_only_admins_import(world, client_for, url, role):
    response = client_for(role).post(url, {"file": _json_file("x.json", []), "dataset": "nope"})
    assert response.status_code == 403


def test_admin_uploads_clip_audio(world, client_for, media_root):
    clip = world.clips[1]
    upload = SimpleUploadedFile("new.wav", _wav_bytes(2500), content_type="audio/wav")
    response = client_for("admin").post(f"/api/clips/{clip.pk}/audio/", {"file": upload})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["changed"] is True
    assert body["clip"]["duration_seconds"] == pytest.approx(2.5)
    assert body["clip"]["sample_rate"] == 22050
    assert body["clip"]["audio_url"] == f"http://testserver/clips/{clip.pk}/audio/"
    clip.refresh_from_db()
    assert clip.audio.storage.exists(clip.audio.name)
    same = SimpleUploadedFile("new.wav", _wav_bytes(2500), content_type="audio/wav")
    assert client_for("admin").post(f"/api/clips/{clip.pk}/audio/", {"file": same}).json()["changed"] is False


def test_non_audio_upload_is_refused_and_nothing_changes(world, client_for, media_root):
    clip = world.clips[1]
    upload = SimpleUploadedFile("notes.wav", b"this is not audio", content_type="audio/wav")
    response = client_for("admin").post(f"/api/clips/{clip.pk}/audio/", {"file": upload})
    assert response.status_code == 400
    assert response.json()["file"].startswith("notes.wav: not decodable audio")
    clip.refresh_from_db()
    assert not clip.audio


@pytest.mark.parametrize("role", ["rater", "annotator", "reviewer"])
def test_only_admins_upload_audio(world, client_for, role):
    upload = SimpleUploadedFile("x.wav", _wav_bytes(300), content_type="audio/wav")
    assert client_for(role).post(f"/api/clips/{world.clips[1].pk}/audio/", {"file": upload}).status_code == 403
    assert Caption.objects.count() == 21  # nothing else happened either
