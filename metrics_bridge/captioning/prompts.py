"""Prompts: per domain (the dataset's `domain` setting) two variants, used alternately over a dataset's clips.

AudioCapBench asks each model per category (sound, music, speech) for a caption, with the category's focus
(sound sources, events and environment; genre, instrumentation, tempo and mood; speaker, emotion, style and
content). Its README does not print the prompt text, so the built-in set is NOT the benchmark's prompts: its two
variants per domain are written after those category descriptions, and they add constraints of their own ("in
one sentence", "Answer with the caption only") that change caption length and so every metric. It is named for
that ("after-audiocapbench", shown as "written after AudioCapBench's description"): figures made with it are not
AudioCapBench's figures. Whoever holds the benchmark's own prompts gives them as a prompt file
(`prompt_set_parse`), which is then named by its file.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

DOMAINS = ("sound", "music", "speech")
PLAIN_TEXT = " Answer with the caption only, in plain text."
MAX_PROMPT_CHARACTERS = 4000
FILE_PREFIX = "file:"  # a prompt set read from a file is named "file:<its name>": no file passes for a built-in set

AFTER_AUDIOCAPBENCH_PROMPTS: dict[str, tuple[str, ...]] = {
    "sound": (
        "Describe the sounds in this audio clip in one sentence: the sound sources, the sound events in the "
        "order they happen, and the acoustic environment." + PLAIN_TEXT,
        "Write a one-sentence caption of this audio recording that names what makes each sound, what happens, "
        "and where it seems to take place." + PLAIN_TEXT,
    ),
    "music": (
        "Describe this music clip in one or two sentences: the genre, the instruments, the tempo and rhythm, "
        "any vocals, and the mood or atmosphere." + PLAIN_TEXT,
        "Write a short caption of this piece of music covering its genre, instrumentation, tempo, vocals and "
        "the feeling it conveys." + PLAIN_TEXT,
    ),
    "speech": (
        "Describe the speaker in this audio clip in one or two sentences: their gender and approximate age, "
        "voice quality, emotional tone and speaking style, and what they say." + PLAIN_TEXT,
        "Write a short caption of this speech recording that says who is speaking, how they sound (emotion, "
        "tone, pace) and what they talk about." + PLAIN_TEXT,
    ),
}


class PromptSetError(ValueError):
    """A prompt set file that cannot be used; the message names the file and the entry."""


@dataclass(frozen=True)
class PromptSet:
    name: str  # "after-audiocapbench", or "file:" and the prompt file's name
    prompts: dict[str, tuple[str, ...]]  # domain -> variants (at least one)

    def prompt_for(self, *, domain: str, index: int) -> tuple[str, int]:
        """(prompt, variant number) for the index-th clip of a dataset: the variants take turns."""
        if domain not in self.prompts:
            raise PromptSetError(
                f"prompt set {self.name.removeprefix(FILE_PREFIX)}: no prompt for the domain {domain!r}"
            )
        variants = self.prompts[domain]
        variant = index % len(variants)
        return variants[variant], variant

    def as_dict(self) -> dict[str, list[str]]:
        return {domain: list(variants) for domain, variants in self.prompts.items()}


AFTER_AUDIOCAPBENCH = PromptSet(name="after-audiocapbench", prompts=AFTER_AUDIOCAPBENCH_PROMPTS)
#: the built-in set's key before it was named for what it is: jobs that stored it, and scripts that pass it to
#: --prompt-set, still mean the same set
LEGACY_NAMES = {"audiocapbench": AFTER_AUDIOCAPBENCH.name}
BUILT_IN = {AFTER_AUDIOCAPBENCH.name: AFTER_AUDIOCAPBENCH}


def prompt_set_builtin(name: str) -> PromptSet | None:
    """The built-in prompt set called `name` (its old key included), or None."""
    return BUILT_IN.get(LEGACY_NAMES.get(name, name))


def prompt_set_label(name: str) -> str:
    """How pages and summaries name a prompt set: the built-in one says what it is, a file is named by its file."""
    if prompt_set_builtin(name) is not None:
        return "written after AudioCapBench's description (not AudioCapBench's own prompts)"
    return f"from the prompt file {name.removeprefix(FILE_PREFIX)}"


def prompt_sha256(prompt: str) -> str:
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()


def prompt_set_from_dict(*, name: str, prompts: dict) -> PromptSet:
    """A stored prompt set (a job's `prompts`) back as a PromptSet."""
    return PromptSet(name=name, prompts={domain: tuple(variants) for domain, variants in prompts.items()})


def prompt_set_parse(*, content: bytes, source_name: str) -> PromptSet:
    """A prompt set from a file: a JSON object {domain: prompt or [prompts]}, or plain text with one prompt per
    line for every domain. Domains a JSON file leaves out keep the built-in prompts (written after AudioCapBench's
    description)."""
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise PromptSetError(f"{source_name}: not UTF-8 text (byte {error.start})") from None
    if "\x00" in text:
        raise PromptSetError(f"{source_name}: contains a NUL character")
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise PromptSetError(
                f"{source_name}: not valid JSON (line {error.lineno} column {error.colno}: {error.msg})"
            ) from None
        prompts = dict(AFTER_AUDIOCAPBENCH_PROMPTS)
        for domain, value in data.items():
            if domain not in DOMAINS:
                raise PromptSetError(f'{source_name}: key "{domain}" is not a domain ({", ".join(DOMAINS)})')
            variants = [value] if isinstance(value, str) else value
            if not isinstance(variants, list) or not variants:
                raise PromptSetError(f'{source_name}: "{domain}" must be a prompt or a non-empty list of prompts')
            prompts[domain] = tuple(
                _checked(prompt, f'{source_name}: "{domain}" prompt {number}')
                for number, prompt in enumerate(variants, start=1)
            )
    else:
        lines = [(number, line.strip()) for number, line in enumerate(text.splitlines(), start=1) if line.strip()]
        if not lines:
            raise PromptSetError(f"{source_name}: no prompt in the file (one prompt per line, or a JSON object)")
        variants = tuple(_checked(line, f"{source_name}: line {number}") for number, line in lines)
        prompts = {domain: variants for domain in DOMAINS}
    return PromptSet(name=f"{FILE_PREFIX}{source_name}", prompts=prompts)


def _checked(prompt, where: str) -> str:
    if not isinstance(prompt, str):
        raise PromptSetError(f"{where}: must be text, got {type(prompt).__name__}")
    prompt = prompt.strip()
    if not prompt:
        raise PromptSetError(f"{where}: is empty")
    if len(prompt) > MAX_PROMPT_CHARACTERS:
        raise PromptSetError(f"{where}: is longer than {MAX_PROMPT_CHARACTERS} characters")
    return prompt
