"""CLAP and MACE end to end on a tiny, randomly initialised ClapModel built from a config here (no download).

The whole path: audio files of two sampling rates attached to clips, decoded and resampled to the model's
48 kHz, embedded in batches, cached by audio hash and caption, scores stored by a metric run, agreement
computed. Expected values are computed in this test straight from transformers' ClapModel / ClapProcessor,
with the WAV files read by the `wave` module and resampled by scipy (not through the product's code).
"""

import json
import math
import wave

import numpy as np
import pytest
from django.core.management import call_command

from corpus.models import Clip
from corpus.services.audio import clip_attach_audio
from metrics_bridge.models import MetricScore
from metrics_bridge.scoring import clap, fluency, registry
from metrics_bridge.scoring.base import MetricResources
from ratings.services.pairwise_import import pairwise_judgements_import

pytestmark = pytest.mark.django_db

ITEMS = [
    {
        "raw_name": f"clip{n}.wav",
        "references": [f"a dog barks {n}", "a dog is barking", "rain falls", "birds sing", "a car passes"],
        "HC": [f"a dog barks {n}", "a dog is barking", "human_1", "human_2", [1, 1, -1, 1]],
        "HM": ["rain falls", f"machine caption {n} of a dog", "human_3", "sysA", [-1, -1, 1, -1]],
        "MM_1": [f"a loud dog {n}", "wind blows hard", "sysA", "sysB", [1, 1, 1, -1]],
    }
    for n in range(3)
]
#: (sampling rate, channels, seconds) of each clip's file; clip 2 gets none
AUDIO = {0: (16000, 1, 1.5), 1: (44100, 2, 2.0)}


def _write_wav(path, rate, channels, seconds, frequency):
    t = np.arange(int(rate * seconds)) / rate
    signal = 0.4 * np.sin(2 * np.pi * frequency * t) + 0.1 * np.sin(2 * np.pi * 3 * frequency * t)
    frames = np.repeat((signal * 32767).astype("<i2")[:, None], channels, axis=1)
    with wave.open(str(path), "wb") as handle:
        handle.setnchannels(channels)
        handle.setsampwidth(2)
        handle.setframerate(rate)
        handle.writeframes(frames.tobytes())
    return path


def _read_wav(path):
    with wave.open(str(path), "rb") as handle:
        rate, channels = handle.getframerate(), handle.getnchannels()
        samples = np.frombuffer(handle.readframes(handle.getnframes()), dtype="<i2").astype(np.float64)
    return samples.reshape(-1, channels).mean(axis=1) / 32768, rate


@pytest.fixture(scope="module")
def tiny_clap_dir(tmp_path_factory):
    """A LAION-CLAP-shaped checkpoint in the transformers layout with random weights: byte-level tokenizer,
    the default ClapFeatureExtractor (48 kHz, 64 mel bins, unfused), a two-stage HTSAT of width 32."""
    import torch
    from transformers import ClapConfig, ClapFeatureExtractor, ClapModel, ClapProcessor, RobertaTokenizer
    from transformers.models.gpt2.tokenization_gpt2 import bytes_to_unicode

    folder = tmp_path_factory.mktemp("tiny-clap")
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for character in bytes_to_unicode().values():
        vocab.setdefault(character, len(vocab))
    vocab["<mask>"] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    tokenizer = RobertaTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"))
    processor = ClapProcessor(feature_extractor=ClapFeatureExtractor(truncation="rand_trunc"), tokenizer=tokenizer)
    config = ClapConfig(
        text_config={
            "vocab_size": len(vocab),
            "hidden_size": 32,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "intermediate_size": 37,
            "max_position_embeddings": 130,
        },
        audio_config={
            "hidden_size": 32,
            "depths": [1, 1],
            "num_attention_heads": [2, 2],
            "patch_embeds_hidden_size": 16,
            "window_size": 8,
            "spec_size": 256,
            "num_mel_bins": 64,
            "projection_hidden_size": 16,
        },
        projection_dim=16,
    )
    torch.manual_seed(0)
    ClapModel(config).eval().save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def _reference_scores(folder, wav_path, caption, references, error_probability):
    """CLAP and MACE of one caption computed here with transformers directly."""
    import torch
    from scipy.signal import resample_poly
    from transformers import ClapModel, ClapProcessor

    model = ClapModel.from_pretrained(folder, local_files_only=True).eval()
    processor = ClapProcessor.from_pretrained(folder, local_files_only=True)
    audio, rate = _read_wav(wav_path)
    divisor = math.gcd(rate, 48000)
    audio = resample_poly(audio, 48000 // divisor, rate // divisor).astype(np.float32)
    with torch.no_grad():
        audio_vector = model.get_audio_features(**processor(audio=[audio], sampling_rate=48000, return_tensors="pt"))[0]
        texts = model.get_text_features(**processor(text=[caption, *references], return_tensors="pt", padding=True))
    audio_vector = audio_vector / audio_vector.norm()
    texts = texts / texts.norm(dim=-1, keepdim=True)
    clap_value = float(audio_vector @ texts[0])
    text_value = float(np.mean([float(texts[0] @ texts[k]) for k in range(1, len(texts))]))
    penalty = 0.3 if error_probability > 0.97 else 0.0
    return clap_value, (clap_value + text_value) / 2 * (1 - penalty)


@pytest.fixture
def dataset_with_audio(tmp_path, settings, tiny_clap_dir):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.CLAP_MODEL_DIR = str(tiny_clap_dir)
    pairwise_judgements_import(data=ITEMS, dataset_name="clap-set", source_name="clap.json")
    files = {}
    for n, (rate, channels, seconds) in AUDIO.items():
        path = _write_wav(tmp_path / f"clip{n}.wav", rate, channels, seconds, 300 + 200 * n)
        clip_attach_audio(clip=Clip.objects.get(external_id=f"clip{n}.wav"), file=path, file_name=path.name)
        files[f"clip{n}.wav"] = path
    clap.clear_caches()
    return files


def test_clap_and_mace_run_end_to_end_and_equal_transformers_computed_directly(
    dataset_with_audio, tiny_clap_dir, capsys, monkeypatch
):
    monkeypatch.setattr(clap, "AUDIO_BATCH_SIZE", 1)  # two clips: two audio batches
    encodes_before = clap.audio_encodes
    call_command("compute_metrics", "--dataset", "clap-set", "--metrics", "CLAP,MACE", "--wait")
    assert clap.audio_encodes - encodes_before == 2  # each clip once, though its captions appear in many requests

    stored = MetricScore.objects.filter(metric__in=["CLAP", "MACE"]).select_related("caption__clip", "reference_set")
    assert stored.exists()
    checked = 0
    for score in stored:
        clip = score.caption.clip
        if clip.external_id not in dataset_with_audio:
            assert score.value is None and score.details["reason"] == "the clip has no audio"
            continue
        probability = float(fluency.error_probabilities([score.caption.text])[0])
        expected_clap, expected_mace = _reference_scores(
            tiny_clap_dir,
            dataset_with_audio[clip.external_id],
            score.caption.text,
            score.reference_set.texts,
            probability,
        )
        expected = expected_clap if score.metric == "CLAP" else expected_mace
        assert score.value == pytest.approx(expected, abs=2e-5), (score.metric, score.caption.text)
        assert score.details["audio_sha256"] == clip.sha256
        checked += 1
    assert checked >= 10

    # the scores are reused: a second run computes nothing and encodes no audio
    clap.clear_caches()
    call_command("compute_metrics", "--dataset", "clap-set", "--metrics", "CLAP,MACE", "--wait")
    assert clap.audio_encodes - encodes_before == 2
    capsys.readouterr()

    call_command("agreement_report", "--dataset", "clap-set", "--metrics", "CLAP,MACE", "--format", "json")
    report = json.loads(capsys.readouterr().out)
    # clip 2 has no audio: its pairs are not applicable to CLAP and MACE and leave their denominators
    for metric in ("CLAP", "MACE"):
        assert report["metrics"][metric]["total"] is not None
    assert "CLAP" not in report.get("unavailable", {})


def test_decoding_mixes_to_mono_and_resamples_to_the_models_rate(tmp_path):
    path = _write_wav(tmp_path / "tone.wav", 16000, 2, 1.0, 440)
    audio = clap.decode_audio(path, 48000)
    assert audio.dtype == np.float32 and len(audio) == 48000
    spectrum = np.abs(np.fft.rfft(audio))
    assert np.argmax(spectrum) == pytest.approx(440, abs=1)  # 1 Hz bins over one second
    original, _rate = _read_wav(path)
    assert float(np.max(np.abs(audio))) == pytest.approx(float(np.max(np.abs(original))), abs=0.01)


def test_without_a_configured_model_both_metrics_are_unavailable_with_the_reason(tmp_path):
    reasons = registry.unavailable_metrics()
    assert "CLAP_MODEL_DIR" in reasons["CLAP"] and reasons["MACE"] == reasons["CLAP"]
    empty = clap.unavailable_reason(MetricResources(clap_model_dir=str(tmp_path)))
    assert "has no config.json" in empty


def test_mace_follows_aac_metrics_combined_rule():
    assert clap.mace_value(0.6, 0.2, 0.5) == pytest.approx(0.4)
    assert clap.mace_value(0.6, 0.2, 0.98) == pytest.approx(0.4 * 0.7)
    assert clap.mace_value(0.6, 0.2, 0.97) == pytest.approx(0.4)
