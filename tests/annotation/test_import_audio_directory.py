"""import_audio: matching files to clips, reporting strays, idempotence, all-or-nothing on a bad file."""

import shutil

import pytest
from django.core.management import CommandError, call_command

from corpus.models import Clip, Dataset
from tests.annotation.audio_helpers import media_files
from tests.annotation.table_counts import all_rows_snapshot


@pytest.fixture
def audio_folder(shared_dir, tmp_path):
    """34.wav by file name, 35.wav by external id without extension, Yabc123.wav by AudioCaps id, a stray text file."""
    source = shared_dir / "datasets" / "audio"
    folder = tmp_path / "incoming"
    folder.mkdir()
    shutil.copy(source / "34.wav", folder / "34.wav")
    shutil.copy(source / "35.wav", folder / "35.wav")
    shutil.copy(source / "36.wav", folder / "Yabc123.wav")
    shutil.copy(source / "Example.flac", folder / "Example.flac")
    (folder / "README.txt").write_text("not audio, and no clip is called README")
    return folder


@pytest.fixture
def dataset(db):
    dataset = Dataset.objects.create(name="study")
    Clip.objects.create(dataset=dataset, external_id="record-34", file_name="34.wav")
    Clip.objects.create(dataset=dataset, external_id="35")
    Clip.objects.create(dataset=dataset, external_id="abc123", file_name="something-else.wav")
    Clip.objects.create(dataset=dataset, external_id="example", file_name="Example")
    Clip.objects.create(dataset=dataset, external_id="no-audio-yet")
    return dataset


@pytest.mark.django_db
def test_files_match_by_file_name_external_id_and_audiocaps_id(audio_folder, dataset, media_root, capsys):
    call_command("import_audio", str(audio_folder), "--dataset", "study")

    attached = dict(Clip.objects.exclude(audio="").values_list("external_id", "sample_rate"))
    assert attached == {"record-34": 44100, "35": 48000, "abc123": 48000, "example": 44100}
    assert not Clip.objects.get(external_id="no-audio-yet").audio
    output = capsys.readouterr().out
    assert "clip audio" in output and "4 created, 0 updated, 0 unchanged" in output
    assert "no clip matches README.txt" in output
    assert len(media_files(media_root)) == 4 * 2, "four files and their rater copies"
    assert Clip.objects.exclude(audio="").filter(rater_audio="").count() == 0


@pytest.mark.django_db
def test_second_run_changes_nothing(audio_folder, dataset, media_root, capsys):
    call_command("import_audio", str(audio_folder), "--dataset", "study")
    rows, files = all_rows_snapshot(), media_files(media_root)

    call_command("import_audio", str(audio_folder), "--dataset", "study")

    assert all_rows_snapshot() == rows
    assert media_files(media_root) == files
    assert "0 created, 0 updated, 4 unchanged" in capsys.readouterr().out


@pytest.mark.django_db
def test_one_undecodable_file_fails_the_whole_import(audio_folder, dataset, media_root):
    Clip.objects.create(dataset=dataset, external_id="broken")
    (audio_folder / "broken.wav").write_text("text pretending to be a WAV file")
    rows = all_rows_snapshot()

    with pytest.raises(CommandError, match=r"^broken\.wav: not decodable audio"):
        call_command("import_audio", str(audio_folder), "--dataset", "study")

    assert all_rows_snapshot() == rows
    assert media_files(media_root) == []


@pytest.mark.django_db
def test_missing_folder_unknown_dataset_and_two_files_for_one_clip(audio_folder, dataset, media_root, tmp_path):
    with pytest.raises(CommandError, match="no such folder"):
        call_command("import_audio", str(tmp_path / "nowhere"), "--dataset", "study")
    with pytest.raises(CommandError, match='dataset "other" does not exist'):
        call_command("import_audio", str(audio_folder), "--dataset", "other")
    shutil.copy(audio_folder / "34.wav", audio_folder / "35.flac")
    with pytest.raises(CommandError, match=r"35\.wav: clip 35 already matched by 35\.flac"):
        call_command("import_audio", str(audio_folder), "--dataset", "study")
    assert media_files(media_root) == []


@pytest.mark.django_db
def test_a_failure_while_storing_removes_the_files_already_stored(audio_folder, dataset, media_root, monkeypatch):
    from corpus.services import audio

    original = audio._stored_file_name
    calls = []

    def fail_on_third(file_name, sha256):
        calls.append(file_name)
        if len(calls) == 3:
            raise OSError("disk full")
        return original(file_name, sha256)

    monkeypatch.setattr(audio, "_stored_file_name", fail_on_third)
    rows = all_rows_snapshot()

    with pytest.raises(OSError, match="disk full"):
        call_command("import_audio", str(audio_folder), "--dataset", "study")

    assert len(calls) == 3
    assert all_rows_snapshot() == rows
    assert media_files(media_root) == []
