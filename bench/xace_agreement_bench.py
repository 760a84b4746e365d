"""X-ACE agreement with people under the FENSE pairwise protocol (protocols.md §1), both readings of Eq. 7-8.

The paper averages the four factors (Eq. 7-8: "1/4 sum") and does not say what happens when a factor is
not applicable (no node in either graph). This bench scores the pairs with the product's protocol code
and XaceScorer under both readings -- "present" (average of the factors present) and "four" (divide by
four, an absent factor adding 0) -- and prints HC/HI/HM/MM/total for XACE and its factors, plus how often
each factor was not applicable.

Clotho-Eval has no expert annotations, so XACE and XACE_CAPTIONS coincide there; `--annotations` gives
AudioCaps-style files their AudioCaps-F graphs (clip keys Y<youtube id>.wav).

Run: HF_HUB_OFFLINE=1 .venv/bin/python bench/xace_agreement_bench.py [--shared ../shared]
     [--dataset clotho_eval.json] [--annotations] [--readings present,four]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from metrics_bridge.agreement.protocol import clips_from_fense_items, fense_agreement  # noqa: E402
from metrics_bridge.scoring.base import ScoringContext  # noqa: E402
from metrics_bridge.scoring.xace import XaceScorer, load_tag_library  # noqa: E402

SPLITS = ("HC", "HI", "HM", "MM", "total")
TAG_LIBRARY = ROOT / "annotation" / "data" / "attribute_tags.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shared", default=str(ROOT.parent / "shared"))
    parser.add_argument("--dataset", default="clotho_eval.json")
    parser.add_argument("--annotations", action="store_true", help="use AudioCaps-F graphs where a clip has one")
    parser.add_argument("--readings", default="present,four")
    args = parser.parse_args()
    shared = Path(args.shared)
    clips = clips_from_fense_items(json.loads((shared / "datasets" / args.dataset).read_text()))
    annotations = {}
    if args.annotations:
        annotations = json.loads((shared / "datasets" / "audiocaps_f_annotations.json").read_text())
    context = ScoringContext(attribute_tags=load_tag_library(TAG_LIBRARY), expert_annotations=annotations)
    print(f"{args.dataset}: {sum(len(c.pairs) for c in clips)} pairs")
    for reading in args.readings.split(","):
        scorer = XaceScorer(macro=reading)
        started = time.perf_counter()
        reports = fense_agreement(clips, scorer, context)
        elapsed = time.perf_counter() - started
        print(f"\nmacro reading {reading!r} ({elapsed:.0f} s, {scorer.version})")
        print(f"{'metric':10}" + "".join(f"{split:>8}" for split in SPLITS) + f"{'n/a pairs':>11}")
        for name, report in reports.items():
            row = report.as_dict()
            cells = "".join(f"{row.get(split) if row.get(split) is not None else '-':>8}" for split in SPLITS)
            not_applicable = sum(split.not_applicable for split in report.splits.values())
            print(f"{name:10}{cells}{not_applicable:>11}")


if __name__ == "__main__":
    main()
