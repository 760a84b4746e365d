"""Small hand-made corpora for the campaign, rating-page and quality tests (and the browser tests)."""

import io
import math
import random
import secrets
import struct
import wave
from datetime import timedelta

import numpy as np
from django.core.files.base import ContentFile
from django.utils import timezone

from corpus.models import Caption, CaptioningSystem, Clip, Dataset
from ratings.models import HeadphoneCheck


def secrets_made_repeatable(monkeypatch, seed: int) -> None:
    """Make the server's secret draws (order keys, item tokens, session keys) come from one seeded source, so an
    attack on an order has the same outcome on every run: a blinding test whose threshold holds by chance would
    otherwise fail at random, now and then, with nothing to learn from it. Both calls the server draws with are
    covered: `secrets.choice` (Django's random strings) and `secrets.token_bytes` (tokens and order keys)."""
    source = random.Random(seed)
    monkeypatch.setattr(secrets, "choice", source.choice)
    monkeypatch.setattr(secrets, "token_bytes", lambda nbytes=None: source.randbytes(32 if nbytes is None else nbytes))


def corpus_build(
    *, name: str = "demo", clip_count: int = 6, reference_count: int = 5, system_names=("sys_a", "sys_b", "sys_c")
) -> tuple[Dataset, list[Clip], list[CaptioningSystem]]:
    """Clips with `reference_count` distinct references and one machine caption per system."""
    dataset = Dataset.objects.create(name=name)
    systems = [CaptioningSystem.objects.get_or_create(name=system_name)[0] for system_name in system_names]
    clips = []
    for clip_number in range(1, clip_count + 1):
        clip = Clip.objects.create(dataset=dataset, external_id=f"clip{clip_number}.wav", duration_seconds=1.5)
        for position in range(reference_count):
            Caption.objects.create(
                clip=clip,
                text=f"reference {position + 1} of clip {clip_number}",
                role=Caption.Role.REFERENCE,
                author_kind=Caption.AuthorKind.HUMAN,
                position=position,
                source_label=f"human_{position + 1}",
            )
        for system in systems:
            Caption.objects.create(
                clip=clip,
                text=f"{system.name} says something about clip {clip_number}",
                role=Caption.Role.CANDIDATE,
                author_kind=Caption.AuthorKind.MACHINE,
                system=system,
                source_label=system.name,
            )
        clips.append(clip)
    return dataset, clips, systems


def headphone_pass_give(rater, *, days_ago: float = 0, kind: str = "antiphase") -> HeadphoneCheck:
    """A passed screening (of `kind`) completed `days_ago` days ago."""
    completed = timezone.now() - timedelta(days=days_ago)
    return HeadphoneCheck.objects.create(
        rater=rater, kind=kind, trials=[], correct_count=6, passed=True, completed_at=completed
    )


def headphone_trials_play(check: HeadphoneCheck) -> HeadphoneCheck:
    """Fetch every trial's sound once, as the page does before the rater may answer."""
    from ratings.services.headphone import trial_is_played, trial_sound_fetch

    check.refresh_from_db()
    for number, trial in enumerate(check.trials, start=1):
        if not trial_is_played(trial):
            trial_sound_fetch(check=check, trial_number=number)
    check.refresh_from_db()
    return check


def tone_wav_bytes(*, seconds: float = 1.5, sample_rate: int = 16000) -> bytes:
    """A quiet 440 Hz mono WAV (16-bit) for clips that need real audio."""
    frames = int(seconds * sample_rate)
    samples = (int(8000 * math.sin(2 * math.pi * 440 * index / sample_rate)) for index in range(frames))
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as output:
        output.setnchannels(1)
        output.setsampwidth(2)
        output.setframerate(sample_rate)
        output.writeframes(b"".join(struct.pack("<h", sample) for sample in samples))
    return buffer.getvalue()


def clip_audio_attach(clip: Clip, *, seconds: float = 1.5) -> Clip:
    """Store a WAV for the clip (and its rater copy) with duration and waveform peaks, as the audio importer would."""
    content = tone_wav_bytes(seconds=seconds)
    clip.audio.save(f"{clip.pk}.wav", ContentFile(content), save=False)
    clip.rater_audio.save("rater.wav", ContentFile(content), save=False)  # already a plain 16-bit WAV
    clip.duration_seconds = seconds
    clip.sample_rate = 16000
    clip.channels = 1
    clip.waveform_peaks = [round(0.25 + 0.2 * math.sin(index / 6) ** 2, 3) for index in range(200)]
    clip.save()
    return clip


def audio_served_give(item, *, seconds_ago: float = 60.0):
    """Record that the item's whole rater audio was sent to its rater `seconds_ago` (what the audio view
    records when the player fetches it). A clip without audio gets a stand-in rater-copy name (no file)."""
    from ratings.services.listening import audio_served_record

    clip = Clip.objects.get(pk=item.clip_id)
    if not clip.rater_audio:
        Clip.objects.filter(pk=clip.pk).update(rater_audio=f"rater-audio/stand-in-{clip.pk}.wav")
        clip.refresh_from_db(fields=["rater_audio"])
    audio_served_record(
        item=item,
        file_name=clip.rater_audio.name,
        size=1000,
        first=0,
        count=1000,
        started_at=timezone.now() - timedelta(seconds=seconds_ago),
    )
    return item


def listened_give(item, *, seconds_ago: float = 30.0):
    """The item shown and its audio served `seconds_ago`, then reported heard (as the page does).

    The rater's listening is counted on one clock, so when earlier items of the same rater already took
    that time, this one is served just before the earliest of them instead (heard in turn, not at once).
    """
    from django.db.models import Min

    from ratings.models import AssignmentItem
    from ratings.services.listening import item_mark_listened, listening_seconds_required

    earliest = AssignmentItem.objects.filter(
        assignment__rater_id=item.assignment.rater_id, listening_from__isnull=False
    ).aggregate(earliest=Min("listening_from"))["earliest"]
    if earliest is not None:
        before_earliest = (timezone.now() - earliest).total_seconds() + listening_seconds_required(item=item) + 1
        seconds_ago = max(seconds_ago, before_earliest)
    shown_at = timezone.now() - timedelta(seconds=seconds_ago)
    AssignmentItem.objects.filter(pk=item.pk, first_shown_at__isnull=True).update(first_shown_at=shown_at)
    item.refresh_from_db(fields=["first_shown_at"])
    audio_served_give(item, seconds_ago=seconds_ago)
    return item_mark_listened(item=item)


def wav_channels(wav_bytes: bytes, *, sample_rate: int) -> np.ndarray:
    """A 16-bit stereo WAV as float samples, shape (n, 2); checks the format on the way."""
    with wave.open(io.BytesIO(wav_bytes)) as reader:
        assert (reader.getnchannels(), reader.getsampwidth(), reader.getframerate()) == (2, 2, sample_rate)
        frames = reader.readframes(reader.getnframes())
    return np.frombuffer(frames, dtype="<i2").reshape(-1, 2).astype(float)
