"""X-ACE agreement with people on Clotho-Eval under the FENSE pairwise protocol (protocols.md section 1).

References come from the captions only (Clotho has no expert annotation: the paper's "w/o anno").
X-ACE is an embedding-style metric: MM pairs use all 5 references; HC scores a against the
references without a (and b without b); HI/HM score both against the references without a; lists
shorter than 4 are padded by repeating from the start. Pairs with zero human truth are left out; a
tie (d == 0) with non-zero truth counts as wrong.

Uses metrics_bridge.agreement's protocol when it provides `pairwise_requests`/`pairwise_accuracy`,
else the small local implementation below.

Run: HF_HUB_OFFLINE=1 .venv/bin/python bench/xace_agreement_bench.py [--shared ../shared] [--dataset clotho_eval.json]
     [--annotations]   (AudioCaps-style files: use the AudioCaps-F annotations for clips that have one)
     [--bare-events]   (events compared by their bare lemma, the version-1 node similarity)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from metrics_bridge.scoring.base import ScoringContext, ScoringRequest  # noqa: E402
from metrics_bridge.scoring.xace import XaceScorer  # noqa: E402

SPLITS = ("HC", "HI", "HM", "MM")


def pad(references: list[str], size: int = 4) -> list[str]:
    padded = list(references)
    i = 0
    while padded and len(padded) < size:
        padded.append(references[i % len(references)])
        i += 1
    return padded


def without(references: list[str], caption: str) -> list[str]:
    return [r for r in references if r != caption]


def clip_key_of(item: dict) -> str | None:
    if item.get("audio_id"):
        return f"Y{item['audio_id']}.wav"
    return item.get("raw_name")


def pairwise_pairs(items: list[dict]) -> list[dict]:
    """Every judged pair with the reference lists each side is scored against."""
    pairs = []
    for item in items:
        references = [r for r in item.get("references") or [] if r]
        for key in ("HC", "HI", "HM", "MM_1", "MM_2", "MM_3", "MM_4", "MM_5"):
            entry = item.get(key)
            if not entry:
                continue
            caption_a, caption_b, votes = entry[0], entry[1], entry[-1]
            split = key.split("_")[0]
            if split == "HC":
                refs_a, refs_b = pad(without(references, caption_a)), pad(without(references, caption_b))
            elif split in ("HI", "HM"):
                refs_a = refs_b = pad(without(references, caption_a))
            else:
                refs_a = refs_b = list(references)
            pairs.append(
                {
                    "split": split,
                    "a": caption_a,
                    "b": caption_b,
                    "refs_a": tuple(refs_a),
                    "refs_b": tuple(refs_b),
                    "truth": sum(votes),
                    "clip": clip_key_of(item),
                }
            )
    return pairs


def accuracy(pairs: list[dict], scores: dict[tuple, float]) -> dict[str, float | int]:
    correct = {s: 0 for s in SPLITS}
    counted = {s: 0 for s in SPLITS}
    for pair in pairs:
        if pair["truth"] == 0:
            continue
        d = scores[(pair["a"], pair["refs_a"], pair["clip"])] - scores[(pair["b"], pair["refs_b"], pair["clip"])]
        counted[pair["split"]] += 1
        correct[pair["split"]] += d * pair["truth"] > 0
    table = {s: round(100 * correct[s] / counted[s], 1) if counted[s] else None for s in SPLITS}
    table["total"] = round(100 * sum(correct.values()) / max(1, sum(counted.values())), 1)
    table["pairs"] = counted
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shared", default=str(Path(__file__).resolve().parent.parent.parent / "shared"))
    parser.add_argument("--dataset", default="clotho_eval.json")
    parser.add_argument(
        "--annotations", action="store_true", help="use AudioCaps-F expert annotations where a clip has one"
    )
    parser.add_argument(
        "--bare-events", action="store_true", help="compare events by their bare lemma only (version 1 S)"
    )
    args = parser.parse_args()
    datasets = Path(args.shared) / "datasets"
    items = json.loads((datasets / args.dataset).read_text())
    context = ScoringContext()
    if args.annotations:
        context.expert_annotations = json.loads((datasets / "audiocaps_f_annotations.json").read_text())
    scorer = XaceScorer(event_context=not args.bare_events)
    started = time.perf_counter()
    try:
        from metrics_bridge.agreement.protocol import clips_from_fense_items, fense_agreement
    except ImportError:
        fense_agreement = None
    if fense_agreement is not None:
        reports = fense_agreement(clips_from_fense_items(items), scorer, context)
        tables = {name: report.as_dict() for name, report in reports.items()}
        how = "metrics_bridge.agreement.protocol"
    else:
        tables = local_agreement(items, scorer, context)
        how = "local protocol"
    elapsed = time.perf_counter() - started
    print(f"{args.dataset}: {elapsed:.1f} s, {scorer.version}, {how}")
    print(f"{'metric':<10}{'HC':>7}{'HI':>7}{'HM':>7}{'MM':>7}{'total':>8}")
    for name in scorer.metric_names:
        table = tables[name]
        print(f"{name:<10}" + "".join(f"{table.get(s)!s:>7}" for s in SPLITS) + f"{table['total']!s:>8}")
    print("pairs with non-zero truth:", tables["XACE"]["pairs"])


def local_agreement(items: list[dict], scorer: XaceScorer, context: ScoringContext) -> dict[str, dict]:
    pairs = pairwise_pairs(items)
    requests = {}
    for pair in pairs:
        for side in ("a", "b"):
            key = (pair[side], pair[f"refs_{side}"], pair["clip"])
            requests.setdefault(key, ScoringRequest(candidate=key[0], references=key[1], clip_key=key[2]))
    results = scorer.score_batch(list(requests.values()), context)
    return {
        name: accuracy(pairs, {key: result.value for key, result in zip(requests, results[name], strict=False)})
        for name in scorer.metric_names
    }


if __name__ == "__main__":
    main()
