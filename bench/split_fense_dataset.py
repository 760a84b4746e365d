"""Split a FENSE-format file (Clotho-Eval, AudioCaps-Eval) into two halves with disjoint clips, for transfer tests.

    .venv/bin/python bench/split_fense_dataset.py ../shared/datasets/clotho_eval.json --out /tmp/halves [--seed 0]

Writes <name>_a.json and <name>_b.json: the items (clips, with their references and every judged pair)
shuffled with the seed and cut in two, each half in the original item order. Items are copied
unchanged, so each half is a file of the same format that the importer reads like the original.
Only Clotho-Eval is available here; its two halves stand in for "another dataset of the same
format" when CALIBRATED is fitted on one and evaluated on the other
(`agreement_report --dataset clotho-eval-b --calibrate-on clotho-eval-a`). They share annotators,
systems and caption style, so this tests transfer across clips, not across corpora. One caveat:
an HI pair's second caption is a reference of another clip, which may sit in the other half; the
calibrated model sees only metric-score differences, never texts.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path


def split_items(items: list[dict], seed: int) -> tuple[list[dict], list[dict]]:
    order = list(range(len(items)))
    random.Random(seed).shuffle(order)
    first = set(order[: len(items) // 2])
    return [item for index, item in enumerate(items) if index in first], [
        item for index, item in enumerate(items) if index not in first
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=0)
    arguments = parser.parse_args()
    items = json.loads(arguments.source.read_text(encoding="utf-8"))
    halves = split_items(items, arguments.seed)
    arguments.out.mkdir(parents=True, exist_ok=True)
    for suffix, half in zip(("a", "b"), halves, strict=True):
        path = arguments.out / f"{arguments.source.stem}_{suffix}.json"
        path.write_text(json.dumps(half), encoding="utf-8")
        print(f"{path}: {len(half)} clips")


if __name__ == "__main__":
    main()
