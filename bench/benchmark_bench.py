"""Speed of the benchmark table: every default metric on Clotho-Eval plus three datasets of
BRACE's size, from fresh imports, as whole commands on the README's defaults (SQLite, the embedded broker).

The three BRACE-size datasets are synthetic, made here from Clotho-Eval's clips (`make_brace_files`), in
BRACE's two layouts with its quirks (captions starting with a newline, `caption_<n>` and `_broken` types):
- brace-synth-main-a: 230 clips, Human-Human + Human-Machine_1 + four Machine-Machine pairs each (1,380 pairs),
  three votes per pair (the first three of Clotho-Eval's four);
- brace-synth-main-b: the other 250-clip ordering, Human-Human + Human-Machine_1 + three Machine-Machine (1,250);
- brace-synth-hallucination: 3,800 pairs, each reference caption of Clotho-Eval with a noun replaced by an
  unrelated one (three or four variants per reference), the original on a random side, the clip's other
  references as the pair's references.
Their clips are new clips (file names suffixed), so nothing is shared with Clotho-Eval's stored scores.

Timed: the four imports, then `manage.py metric_benchmark --format json` with no --metrics (every available
metric, CALIBRATED cross-validated and trained elsewhere), which computes every score with its temporary
worker. The budget is 10 minutes on 2 cores; the load average is printed beside the time.

Run: HF_HUB_OFFLINE=1 .venv/bin/python bench/benchmark_bench.py [--shared ../shared] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
BUDGET_SECONDS = 600
UNRELATED_NOUNS = [
    "goat",
    "violin",
    "robot",
    "piano",
    "elephant",
    "trumpet",
    "drone",
    "tractor",
    "parrot",
    "guitar",
    "submarine",
    "kettle",
    "lion",
    "helicopter",
    "accordion",
    "typewriter",
    "frog",
    "cello",
    "vacuum",
    "horse",
]


def _clotho(shared: Path) -> list[dict]:
    return json.loads((shared / "datasets" / "clotho_eval.json").read_text())


def _votes(entry: list) -> list[int]:
    """Three BRACE votes (+1 / -1) from Clotho-Eval's four (0 becomes the majority's side, +1 on a tie)."""
    votes = entry[-1][:3]
    majority = 1 if sum(entry[-1]) >= 0 else -1
    return [v if v != 0 else majority for v in votes]


def main_items(clotho: list[dict], *, clips: int, machine_pairs: int, suffix: str, seed: int) -> list[dict]:
    rng = random.Random(seed)
    order = list(range(len(clotho)))
    rng.shuffle(order)
    items = []
    for index in order[:clips]:
        source = clotho[index]
        item = {"file_name": f"{Path(source['raw_name']).stem}-{suffix}.wav", "references": list(source["references"])}
        hc = source["HC"]
        item["Human-Human"] = [hc[0], "\n" + hc[1], "caption_1", "caption_2", _votes(hc)]
        hm = source["HM"]
        system = hm[3] + ("_broken" if rng.random() < 0.2 else "")
        item["Human-Machine_1"] = [hm[1], hm[0], system, "human", [-v for v in _votes(hm)]]
        for n in range(1, machine_pairs + 1):
            mm = source[f"MM_{n}"]
            item[f"Machine-Machine_{n}"] = [mm[0], mm[1], mm[2], mm[3], _votes(mm)]
        items.append(item)
    return items


def hallucination_items(clotho: list[dict], *, pairs: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    references = [(item, position) for item in clotho for position in range(len(item["references"]))]
    per_reference = -(-pairs // len(references))
    items: dict[str, dict] = {}
    made = 0
    for variant in range(per_reference):
        for source, position in references:
            if made >= pairs:
                break
            original = source["references"][position]
            words = original.rstrip(".").split()
            nouns = [i for i, word in enumerate(words) if len(word) > 3 and word.isalpha() and i > 0]
            if not nouns:
                continue
            target = nouns[(variant + position) % len(nouns)]
            replacement = UNRELATED_NOUNS[(made * 7 + variant) % len(UNRELATED_NOUNS)]
            hallucinated = " ".join(words[:target] + [replacement] + words[target + 1 :])
            if hallucinated == original:
                continue
            others = [text for k, text in enumerate(source["references"]) if k != position]
            item = items.setdefault(source["raw_name"], {"file_name": f"{Path(source['raw_name']).stem}-h.wav"})
            key = f"caption_{len(item)}"
            if rng.random() < 0.5:
                item[key] = [original, hallucinated, "human", "hallucination", {"references": others}]
            else:
                item[key] = ["\n" + hallucinated, original, "hallucination", "human", {"references": others}]
            made += 1
    return list(items.values())


def make_brace_files(shared: Path, folder: Path) -> dict[str, Path]:
    clotho = _clotho(shared)
    files = {
        "brace-synth-main-a": main_items(clotho, clips=230, machine_pairs=4, suffix="a", seed=1),
        "brace-synth-main-b": main_items(clotho, clips=250, machine_pairs=3, suffix="b", seed=2),
        "brace-synth-hallucination": hallucination_items(clotho, pairs=3800, seed=3),
    }
    paths = {}
    for name, items in files.items():
        paths[name] = folder / f"{name}.json"
        paths[name].write_text(json.dumps(items))
    return paths


def run(command: list[str], env: dict, label: str) -> float:
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "manage.py", *command], cwd=PROJECT, env=env, capture_output=True, text=True
    )
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{label} failed:\n{result.stderr[-3000:]}")
    print(f"  {label}: {seconds:.1f} s (load {os.getloadavg()[0]:.1f})", flush=True)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shared", default=str(PROJECT.parent / "shared"))
    parser.add_argument("--keep", help="work in this folder and keep it (database, files, the table)")
    arguments = parser.parse_args()
    shared = Path(arguments.shared)
    folder = Path(arguments.keep) if arguments.keep else Path(tempfile.mkdtemp(prefix="benchmark-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{folder / 'db.sqlite3'}",
        "MEDIA_ROOT": str(folder / "media"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    for key in ("REDIS_URL", "CELERY_BROKER_URL"):
        env.pop(key, None)
    files = make_brace_files(shared, folder)
    for name, path in files.items():
        items = json.loads(path.read_text())
        count = sum(1 for item in items for key in item if key not in ("file_name", "references"))
        print(f"{name}: {len(items)} clips, {count} pairs")
    run(["migrate", "--noinput"], env, "migrate (not timed)")
    start = time.perf_counter()
    run(
        ["import_pairwise_judgements", str(shared / "datasets" / "clotho_eval.json"), "--dataset", "clotho-eval"],
        env,
        "import clotho-eval",
    )
    for name, path in files.items():
        run(["import_pairwise_judgements", str(path), "--dataset", name], env, f"import {name}")
    table_path = folder / "benchmark.json"
    benchmark_start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "manage.py", "metric_benchmark", "--format", "json"],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise SystemExit(f"metric_benchmark failed:\n{result.stderr[-3000:]}")
    table_path.write_text(result.stdout)
    benchmark_seconds = time.perf_counter() - benchmark_start
    total = time.perf_counter() - start
    print(
        f"  metric_benchmark (every default metric, 4 datasets): {benchmark_seconds:.1f} s "
        f"(load {os.getloadavg()[0]:.1f})"
    )
    table = json.loads(result.stdout)
    print(
        f"total from fresh imports: {total:.1f} s, budget {BUDGET_SECONDS} s: "
        f"{'within' if total <= BUDGET_SECONDS else 'OVER'}"
    )
    print(f"metrics: {', '.join(table['metrics'])}")
    for dataset in table["datasets"]:
        best = max(
            (
                (name, cell[dataset["name"]]["ours"]["total"])
                for name, cell in table["cells"].items()
                if dataset["name"] in cell and "ours" in cell[dataset["name"]] and not name.startswith("CALIBRATED")
            ),
            key=lambda item: item[1] or 0,
        )
        calibrated = table["cells"].get("CALIBRATED", {}).get(dataset["name"], {}).get("ours", {}).get("total")
        print(
            f"  {dataset['name']}: {dataset['pairs']['total']} pairs; best single {best[0]} {best[1]}; "
            f"CALIBRATED {calibrated}"
        )
    if arguments.keep:
        print(f"kept in {folder}")


if __name__ == "__main__":
    main()
