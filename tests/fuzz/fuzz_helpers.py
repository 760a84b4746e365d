"""Shared pieces of the fuzz tests: mutating valid JSON, rolling an example back, the database fingerprint."""

import hashlib
import json
from contextlib import contextmanager
from typing import Any

from django.apps import apps
from django.db import transaction
from hypothesis import strategies as st

FINGERPRINT_APPS = ("auth", "corpus", "annotation", "ratings")

# Any JSON value, small: what a careless hand or a broken script could put anywhere in a file.
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=30),
    st.sampled_from(["", " ", "human_1", "HC", "MM_1", "Y.wav", "Yabc.wav", "x" * 300, "=1+1", "\x00", "é"]),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)


def json_paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path (keys / indexes) to a value inside `value`, the root included."""
    paths = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            paths += json_paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            paths += json_paths(child, (*prefix, index))
    return paths


def _parent(document: Any, path: tuple):
    node = document
    for step in path[:-1]:
        node = node[step]
    return node


@st.composite
def mutated_json(draw, base: Any, max_mutations: int = 3) -> Any:
    """`base` with 1..max_mutations edits: a value replaced, a key or element removed or duplicated, a key
    renamed, or a whole different document (rarely)."""
    if draw(st.integers(0, 19)) == 0:
        return draw(json_values)
    document = json.loads(json.dumps(base))
    for _ in range(draw(st.integers(1, max_mutations))):
        paths = json_paths(document)
        path = draw(st.sampled_from(paths))
        operation = draw(st.sampled_from(["replace", "delete", "duplicate", "rename"]))
        if not path:
            document = draw(json_values)
            continue
        parent, step = _parent(document, path), path[-1]
        if operation == "replace":
            parent[step] = draw(json_values)
        elif operation == "delete":
            del parent[step]
        elif operation == "duplicate" and isinstance(parent, list):
            parent.insert(step, json.loads(json.dumps(parent[step])))
        elif operation == "rename" and isinstance(parent, dict):
            parent[draw(st.text(max_size=12))] = parent.pop(step)
        else:
            parent[step] = draw(json_values)
    return document


def database_fingerprint() -> dict[str, str]:
    """A hash of every row of every auth/annotation/ratings table (so "unchanged" means every value)."""
    fingerprint = {}
    for model in apps.get_models(include_auto_created=True):
        if model._meta.app_label not in FINGERPRINT_APPS:
            continue
        rows = model.objects.order_by("pk").values_list()
        digest = hashlib.sha256()
        for row in rows.iterator():
            digest.update(repr(row).encode())
        fingerprint[model._meta.label] = f"{rows.count()}:{digest.hexdigest()[:16]}"
    return fingerprint


class _RollBackError(Exception):
    pass


@contextmanager
def rolled_back():
    """Run an example in a savepoint that is always rolled back: each example starts from the same data."""
    try:
        with transaction.atomic():
            yield
            raise _RollBackError
    except _RollBackError:
        pass

