"""What a pairwise-judgement file describes, before anything is written: clips, captions, pairs, votes.

The FENSE and BRACE parsers (`pairwise_import`, `brace_import`) both produce these; the writer in
`pairwise_import` stores them the same way whatever the layout.
"""

from dataclasses import dataclass
from typing import Any

from corpus.models import Caption, CaptioningSystem
from corpus.services.importing import ImportDataError
from ratings.models import CaptionPair

SYSTEM_NAME_LENGTH = CaptioningSystem._meta.get_field("name").max_length

#: +1: caption a (caption_0) preferred, -1: caption b, 0: no preference
VOTE_CHOICES = {1: CaptionPair.Choice.A, -1: CaptionPair.Choice.B, 0: CaptionPair.Choice.NONE}


def votes_parse(votes: list[Any], where: str, expected: str) -> tuple[str, ...]:
    """The choices of a pair's votes, or ImportDataError naming the vote (`expected`: what the format allows)."""
    choices = []
    for column, vote in enumerate(votes):
        if isinstance(vote, bool) or not isinstance(vote, int | float) or vote not in VOTE_CHOICES:
            raise ImportDataError(f"{where} vote {column}: expected {expected}, got {vote!r}")
        choices.append(VOTE_CHOICES[int(vote)])
    return tuple(choices)


@dataclass(frozen=True)
class CaptionSpec:
    """A caption as the input describes it; `key` identifies it within its clip."""

    key: tuple
    text: str
    author_kind: str
    source_label: str
    system_name: str | None = None
    position: int | None = None


def machine_caption(text: str, system_name: str, source_label: str, where: str) -> CaptionSpec:
    """A system's caption (keyed by system and text), or ImportDataError when the name cannot be stored."""
    if len(system_name) > SYSTEM_NAME_LENGTH:
        raise ImportDataError(f"{where}: system name longer than {SYSTEM_NAME_LENGTH} characters")
    return CaptionSpec(
        key=("machine", system_name, text),
        text=text,
        author_kind=Caption.AuthorKind.MACHINE,
        source_label=source_label,
        system_name=system_name,
    )


@dataclass(frozen=True)
class PairSpec:
    source_key: str
    split: str
    caption_a: CaptionSpec
    caption_b: CaptionSpec
    choices: tuple[str, ...]
    # The source labels as written in the pair entry (a reference's own label is `human_<slot>`).
    labels: tuple[str, str] = ("", "")
    # BRACE-Hallucination: the pair's own references and its known answer ("a" or "b": the original caption).
    references: tuple[str, ...] = ()
    gold_choice: str = ""


@dataclass(frozen=True)
class ItemSpec:
    external_id: str
    file_name: str | None
    references: tuple[CaptionSpec, ...]
    pairs: tuple[PairSpec, ...]

    @property
    def candidates(self) -> list[CaptionSpec]:
        seen: dict[tuple, CaptionSpec] = {}
        for pair in self.pairs:
            for caption in (pair.caption_a, pair.caption_b):
                if caption.key[0] != "reference":
                    seen.setdefault(caption.key, caption)
        return list(seen.values())
