"""What every corpus importer shares: reading the input file, the error it raises, its summary, its accounts.

Importers validate the whole input before writing and write inside one transaction, so a bad file
raises `ImportDataError` (a message naming the file and the offending key/index) and leaves the
database as it was. Commands turn that error into a `CommandError`; API views into a 400.
"""

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.core.validators import validate_slug

from corpus.models import Dataset

OUTCOMES = ("created", "updated", "unchanged")


class ImportDataError(ValueError):
    """The input cannot be imported; the message names the file and the offending key, index or cell."""


@dataclass
class ImportSummary:
    """Rows created / updated / unchanged per kind of thing, plus free-form counters and notes."""

    source_name: str
    counts: dict[str, dict[str, int]] = field(default_factory=lambda: defaultdict(lambda: dict.fromkeys(OUTCOMES, 0)))
    extra: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add(self, kind: str, outcome: str, number: int = 1) -> None:
        if outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {outcome!r}")
        self.counts[kind][outcome] += number

    def count(self, kind: str, outcome: str) -> int:
        return self.counts[kind][outcome] if kind in self.counts else 0

    @property
    def changed_anything(self) -> bool:
        return any(kind_counts["created"] or kind_counts["updated"] for kind_counts in self.counts.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source_name,
            "counts": {k: dict(v) for k, v in self.counts.items()},
            "extra": dict(self.extra),
            "notes": list(self.notes),
        }

    def lines(self) -> list[str]:
        """Human-readable summary, one line per kind."""
        width = max((len(kind) for kind in [*self.counts, *self.extra]), default=0)
        result = [f"Imported {self.source_name}:"]
        for kind, kind_counts in self.counts.items():
            parts = ", ".join(f"{kind_counts[outcome]} {outcome}" for outcome in OUTCOMES)
            result.append(f"  {kind.ljust(width)}  {parts}")
        for name, value in self.extra.items():
            result.append(f"  {name.ljust(width)}  {value}")
        result.extend(f"  note: {note}" for note in self.notes)
        return result


def json_file_load(*, path: Path | str) -> tuple[Any, str]:
    """Parse a JSON file; returns (data, file name for messages). Raises ImportDataError naming the file."""
    path = Path(path)
    if not path.exists():
        raise ImportDataError(f"{path}: no such file")
    if not path.is_file():
        raise ImportDataError(f"{path}: not a file")
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ImportDataError(f"{path.name}: not UTF-8 text (byte {error.start})") from None
    try:
        return json.loads(text), path.name
    except json.JSONDecodeError as error:
        raise ImportDataError(
            f"{path.name}: not valid JSON (line {error.lineno} column {error.colno}: {error.msg})"
        ) from None


def dataset_name_validate(*, name: str) -> None:
    try:
        validate_slug(name)
    except ValidationError:
        raise ImportDataError(f'dataset name "{name}" must contain only letters, digits, "-" and "_"') from None
    if len(name) > Dataset._meta.get_field("name").max_length:
        raise ImportDataError(f'dataset name "{name}" is too long')


def dataset_get_or_create(*, name: str, summary: ImportSummary) -> Dataset:
    dataset_name_validate(name=name)
    # Names are compared without case: "DEMO" beside "demo" would read as one dataset in every list.
    other = Dataset.objects.filter(name__iexact=name).exclude(name=name).values_list("name", flat=True).first()
    if other is not None:
        raise ImportDataError(
            f'dataset name "{name}" differs only in case from the existing dataset "{other}": '
            f'use "{other}" or a name of its own'
        )
    dataset, created = Dataset.objects.get_or_create(name=name)
    summary.add("datasets", "created" if created else "unchanged")
    return dataset


def dataset_get_existing(*, name: str) -> Dataset:
    dataset = Dataset.objects.filter(name=name).first()
    if dataset is None:
        raise ImportDataError(f'dataset "{name}" does not exist')
    return dataset


def import_account_get_or_create(*, username: str, role: str, summary: ImportSummary, kind: str):
    """An account standing for the people behind imported data (judges, experts); it cannot sign in."""
    user_model = get_user_model()
    user = user_model.objects.filter(username=username).first()
    created = user is None
    if created:
        user = user_model(username=username)
        user.set_unusable_password()
        user.save()
    group = Group.objects.filter(name=role).first()
    if group is not None and not user.groups.filter(pk=group.pk).exists():
        user.groups.add(group)
        summary.add(kind, "created" if created else "updated")
    else:
        summary.add(kind, "created" if created else "unchanged")
    return user


def json_nul_check(*, data: Any, source_name: str) -> None:
    """Refuse a NUL character (\\u0000) anywhere in a JSON document, naming where it is.

    JSON allows it, but PostgreSQL text cannot hold it: without this check the import would fail
    inside the database with an unhandled error instead of a clear message.
    """
    pending = [(data, "")]
    while pending:
        value, where = pending.pop()
        if isinstance(value, str):
            if "\x00" in value:
                raise ImportDataError(f"{source_name}:{where or ' the document'}: contains a NUL character (\\u0000)")
        elif isinstance(value, dict):
            for key, child in value.items():
                if "\x00" in key:
                    raise ImportDataError(f"{source_name}:{where} a key contains a NUL character (\\u0000)")
                pending.append((child, f'{where} key "{key}"'))
        elif isinstance(value, list):
            pending.extend((child, f"{where} index {index}") for index, child in enumerate(value))


def text_nul_check(*, text: str, source_name: str) -> None:
    """Refuse a NUL character in a text file (CSV, JSON), naming its line: PostgreSQL text cannot hold it,
    and without this check the import would fail inside the database instead of with a clear message."""
    position = text.find("\x00")
    if position >= 0:
        line = text.count("\n", 0, position) + 1
        raise ImportDataError(f"{source_name}: line {line}: contains a NUL character (\\u0000)")


def text_field_check(*, value: Any, where: str, max_length: int | None, allow_empty: bool = False) -> str:
    """The value as a string, or ImportDataError saying where it is and what was expected."""
    if not isinstance(value, str):
        raise ImportDataError(f"{where}: expected a string, got {json_type_name(value)}")
    if not allow_empty and not value.strip():
        raise ImportDataError(f"{where}: must not be empty")
    if max_length is not None and len(value) > max_length:
        raise ImportDataError(f"{where}: longer than {max_length} characters")
    return value


def file_stem(name: str) -> str:
    """`a/b.wav` -> `b`; a name without an extension is returned as it is (ids may contain dots only there)."""
    path = PurePath(name)
    return path.stem if path.suffix else name


def json_type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    return {dict: "an object", list: "a list", str: "a string", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__
    )
