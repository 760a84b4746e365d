"""Content fingerprints: what data a dataset (or a learned component's training set) holds, by content, not by name.

A held-out figure is only held out if the model and every learned feature behind it never saw the evaluated
data; dataset names say nothing about that (a half of Clotho-Eval imported as `clotho-eval-b` is inside
`clotho-eval`; a 10-pair sample may carry a benchmark's name). So data is compared by content:

- a caption text by the hash of its normalised form (NFKC, lower case, punctuation as spaces, whitespace
  collapsed: "A dog barks." and "a dog barks" are one text);
- a clip's audio by the sha256 of its file when the clip has one; a clip without audio by its file name
  (the corpus file it stands for, e.g. Clotho's `x.wav` or an AudioCaps YouTube id), which is also compared
  with the names of clips that do have audio (one side may have been imported without it);
- a judged pair by (its clip's audio identity, the two caption texts in either order).

Plain Python, no Django: the Django side builds `ClipContent` / `PairContent` from its rows.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

#: hex characters kept of a text's sha256 (64 bits: no collision among millions of captions)
HASH_CHARS = 16
#: where a learned component declares the texts it was trained on: a JSON file beside its weights
TRAINING_TEXTS_SUFFIX = ".training_texts.json"
TRAINING_TEXTS_FORMAT = "metrics_bridge-training-texts-1"


def normalise_text(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    return " ".join(re.sub(r"[^\w\s]", " ", text).split())


def text_hash(text: str) -> str:
    return hashlib.sha256(normalise_text(text).encode("utf-8")).hexdigest()[:HASH_CHARS]


def clip_name(name: str) -> str:
    """A clip's file name without folders, lower case ("" when there is none)."""
    return name.replace("\\", "/").rsplit("/", 1)[-1].strip().lower()


@dataclass(frozen=True)
class ClipContent:
    key: str  # how the dataset's pairs refer to the clip
    audio_sha256: str = ""
    names: tuple[str, ...] = ()  # file name, external id
    references: tuple[str, ...] = ()

    @property
    def audio_identity(self) -> str:
        if self.audio_sha256:
            return "sha256:" + self.audio_sha256
        names = sorted(filter(None, (clip_name(name) for name in self.names)))
        return "name:" + (names[0] if names else self.key)


@dataclass(frozen=True)
class PairContent:
    clip_key: str
    caption_a: str
    caption_b: str


def pair_text_key(caption_a: str, caption_b: str) -> str:
    return "|".join(sorted((text_hash(caption_a), text_hash(caption_b))))


@dataclass
class ContentFingerprint:
    """Every text (hash -> one spelling of it), clip audio and pair of a dataset, and a digest of its pairs' texts."""

    texts: dict[str, str]
    audio_hashes: frozenset[str]
    #: names of the clips without an audio hash, and of every clip
    unhashed_names: frozenset[str]
    names: frozenset[str]
    pairs: frozenset[str]
    #: sha256 of the sorted multiset of the pairs' text keys: equal for the same judged pairs however imported
    pairs_digest: str
    pair_count: int
    #: clip key -> audio identity (for the audio a pair belongs to)
    audio_of_clip: dict[str, str] = field(default_factory=dict)
    #: hashes of the texts of the judged pairs' captions (what a caption-level detector is applied to)
    caption_texts: frozenset[str] = frozenset()
    #: clip key -> hashes of its reference texts
    clip_texts: dict[str, frozenset[str]] = field(default_factory=dict)


def content_fingerprint(clips: Iterable[ClipContent], pairs: Iterable[PairContent]) -> ContentFingerprint:
    clips = list(clips)
    pairs = list(pairs)
    texts: dict[str, str] = {}
    for text in [*(ref for clip in clips for ref in clip.references), *(t for p in pairs for t in _texts(p))]:
        texts.setdefault(text_hash(text), text)
    audio_of_clip = {clip.key: clip.audio_identity for clip in clips}
    names_of = [{clip_name(name) for name in clip.names if clip_name(name)} for clip in clips]
    pair_keys = sorted(pair_text_key(*_texts(pair)) for pair in pairs)
    return ContentFingerprint(
        texts=texts,
        audio_hashes=frozenset(clip.audio_sha256 for clip in clips if clip.audio_sha256),
        unhashed_names=frozenset(
            name for clip, names in zip(clips, names_of, strict=True) if not clip.audio_sha256 for name in names
        ),
        names=frozenset(name for names in names_of for name in names),
        pairs=frozenset(
            audio_of_clip.get(pair.clip_key, "clip:" + pair.clip_key) + "|" + pair_text_key(*_texts(pair))
            for pair in pairs
        ),
        pairs_digest=pairs_digest(pair_keys),
        pair_count=len(pairs),
        audio_of_clip=audio_of_clip,
        caption_texts=frozenset(text_hash(text) for pair in pairs for text in _texts(pair)),
        clip_texts={clip.key: frozenset(text_hash(text) for text in clip.references) for clip in clips},
    )


def pairs_digest(sorted_pair_keys: list[str]) -> str:
    return hashlib.sha256(json.dumps(sorted_pair_keys).encode("utf-8")).hexdigest()


def _texts(pair: PairContent) -> tuple[str, str]:
    return pair.caption_a, pair.caption_b


@dataclass(frozen=True)
class Overlap:
    """What two datasets share: clips' audio, judged pairs, caption texts (one spelling each, sorted)."""

    audio: int
    pairs: int
    texts: tuple[str, ...]

    @property
    def shares_recordings_or_pairs(self) -> bool:
        return bool(self.audio or self.pairs)

    def describe(self) -> str:
        """E.g. "125 clips' audio, 772 judged pairs and 1,250 caption texts (e.g. "a dog barks")"."""
        parts = []
        if self.audio:
            parts.append(f"{self.audio:,} clip{'s' if self.audio != 1 else ''}' audio")
        if self.pairs:
            parts.append(f"{self.pairs:,} judged pair{'s' if self.pairs != 1 else ''}")
        if self.texts:
            example = self.texts[0] if len(self.texts[0]) <= 80 else self.texts[0][:77] + "..."
            parts.append(f'{len(self.texts):,} caption text{"s" if len(self.texts) != 1 else ""} (e.g. "{example}")')
        if not parts:
            return "nothing"
        return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def overlap(evaluated: ContentFingerprint, other: ContentFingerprint) -> Overlap:
    """What `other` shares with `evaluated` (counted on the evaluated side)."""
    shared_names = (evaluated.unhashed_names & other.names) | (evaluated.names & other.unhashed_names)
    audio = {identity for identity in evaluated.audio_of_clip.values() if identity.startswith("sha256:")}
    shared_audio = {identity for identity in audio if identity[len("sha256:") :] in other.audio_hashes}
    shared_texts = sorted(evaluated.texts[key] for key in evaluated.texts.keys() & other.texts.keys())
    return Overlap(
        audio=len(shared_audio) + len(shared_names),
        pairs=len(evaluated.pairs & other.pairs),
        texts=tuple(shared_texts),
    )


def mentions(texts: Iterable[str], hashes: set[str] | frozenset[str] | dict) -> bool:
    """Whether any of `texts` is (after normalisation) one of the hashed texts."""
    return any(text_hash(text) in hashes for text in texts)


# --- the texts a learned component was trained on ---------------------------------------------------------


@dataclass(frozen=True)
class TrainingTexts:
    """The declared training texts of a learned component (hashes of their normalised forms)."""

    hashes: frozenset[str]
    description: str


def training_texts_path(model_path: Path) -> Path:
    return model_path.with_name(model_path.name + TRAINING_TEXTS_SUFFIX)


def write_training_texts(model_path: Path, texts: Iterable[str], *, description: str) -> Path:
    """Store the fingerprint set of `texts` beside the component's file (sorted hashes: the texts are not kept)."""
    path = training_texts_path(model_path)
    hashes = sorted({text_hash(text) for text in texts})
    content = {"format": TRAINING_TEXTS_FORMAT, "description": description, "texts": len(hashes), "hashes": hashes}
    path.write_text(json.dumps(content, indent=0) + "\n", encoding="utf-8")
    return path


def read_training_texts(model_path: Path) -> TrainingTexts | None:
    """The component's declared training texts; None when it declares none (unknown: it may have seen anything)."""
    path = training_texts_path(model_path)
    if not path.is_file():
        return None
    content = json.loads(path.read_text(encoding="utf-8"))
    if content.get("format") != TRAINING_TEXTS_FORMAT:
        raise ValueError(f"{path}: not a training-text declaration (format {content.get('format')!r})")
    return TrainingTexts(hashes=frozenset(content["hashes"]), description=str(content.get("description", "")))
