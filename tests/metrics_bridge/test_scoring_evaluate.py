"""`metrics_bridge.scoring.evaluate`: the metric library on its own, as researchers use aac-metrics in a notebook.

It must run without Django (a fresh interpreter with no settings module), agree with pycocoevalcap on the classic
metrics, and give exactly the values a metric run stores for the same captions (the run's all-references batch).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pycocoevalcap.bleu.bleu import Bleu
from pycocoevalcap.cider.cider import Cider
from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

from metrics_bridge.scoring import evaluate

REPO = Path(__file__).resolve().parents[2]
METRICS = ["BLEU_4", "ROUGE_L", "CIDEr_D", "METEOR", "SBERT"]
CANDIDATES = [
    "a dog barks while cars pass by",
    "rain falls on a tin roof",
    "a man speaks and a door closes",
    "birds chirp in the distance",
]
REFERENCES = [
    ["a dog is barking near a busy road", "cars drive past as a dog barks", "a barking dog and traffic"],
    ["heavy rain falls on a metal roof", "rain drums on a roof", "rain is pouring onto a tin roof"],
    ["a man talks then a door slams", "someone speaks and shuts a door", "a door closes after a man speaks"],
    ["birds are singing far away", "distant birds chirp", "several birds tweet in the background"],
]

SCRIPT = """
import json, sys
from metrics_bridge.scoring import evaluate
result = evaluate(json.loads(sys.argv[1]), json.loads(sys.argv[2]), metrics=json.loads(sys.argv[3]))
print(json.dumps({"per_caption": result.per_caption, "corpus": result.corpus,
                  "django": sorted(name for name in sys.modules if name.split(".")[0] == "django")}))
"""


def test_it_runs_in_a_plain_interpreter_without_django():
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONPATH=str(REPO))
    completed = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(CANDIDATES), json.dumps(REFERENCES), json.dumps(METRICS)],
        cwd="/",  # not the repository: nothing may be found by accident (a settings module, a conftest)
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    output = json.loads(completed.stdout.strip().splitlines()[-1])
    assert output["django"] == []
    assert set(output["per_caption"]) == set(METRICS) == set(output["corpus"])
    for name in METRICS:
        assert len(output["per_caption"][name]) == len(CANDIDATES)
        assert all(isinstance(value, float) for value in output["per_caption"][name])
    in_process = evaluate(CANDIDATES, REFERENCES, metrics=METRICS)
    for name in METRICS:
        assert output["per_caption"][name] == pytest.approx(in_process.per_caption[name], abs=1e-6)


def test_the_classic_values_are_pycocoevalcaps():
    result = evaluate(CANDIDATES, REFERENCES, metrics=["BLEU_4", "CIDEr_D"])
    tokenizer = PTBTokenizer()
    gts = tokenizer.tokenize({i: [{"caption": r} for r in refs] for i, refs in enumerate(REFERENCES)})
    res = tokenizer.tokenize({i: [{"caption": c}] for i, c in enumerate(CANDIDATES)})
    bleu, _ = Bleu(4).compute_score(gts, res, verbose=0)
    cider_mean, cider_each = Cider().compute_score(gts, res)
    assert result.corpus["BLEU_4"] == pytest.approx(bleu[3], abs=1e-9)
    assert result.per_caption["CIDEr_D"] == pytest.approx(list(cider_each), abs=1e-9)
    assert result.corpus["CIDEr_D"] == pytest.approx(cider_mean, abs=1e-9)


def test_mismatched_inputs_are_refused():
    with pytest.raises(ValueError, match="reference lists"):
        evaluate(["a dog barks"], [], metrics=["ROUGE_L"])
    with pytest.raises(ValueError, match="at least one reference"):
        evaluate(["a dog barks"], [[]], metrics=["ROUGE_L"])
    with pytest.raises(KeyError):
        evaluate(["a dog barks"], [["a dog"]], metrics=["NOT_A_METRIC"])


@pytest.mark.django_db
def test_a_metric_run_stores_what_evaluate_returns():
    from corpus.models import Caption, CaptioningSystem, Clip, Dataset
    from metrics_bridge.models import MetricRun, MetricScore
    from metrics_bridge.services.runs.plans import ALL_REFERENCES
    from metrics_bridge.services.runs.runs import metric_run_create
    from metrics_bridge.tasks.runs import execute_metric_run

    dataset = Dataset.objects.create(name="evaluate-equivalence")
    system = CaptioningSystem.objects.create(name="sys-evaluate")
    caption_ids = []
    for index, (candidate, references) in enumerate(zip(CANDIDATES, REFERENCES, strict=True)):
        clip = Clip.objects.create(dataset=dataset, external_id=f"clip-{index}", file_name=f"clip-{index}.wav")
        for position, text in enumerate(references):
            Caption.objects.create(
                clip=clip,
                text=text,
                role=Caption.Role.REFERENCE,
                author_kind=Caption.AuthorKind.HUMAN,
                position=position,
            )
        caption = Caption.objects.create(
            clip=clip,
            text=candidate,
            role=Caption.Role.CANDIDATE,
            author_kind=Caption.AuthorKind.MACHINE,
            system=system,
        )
        caption_ids.append(caption.pk)

    run = execute_metric_run(run=metric_run_create(dataset=dataset, metric_names=METRICS))
    assert run.status == MetricRun.Status.DONE

    expected = evaluate(CANDIDATES, REFERENCES, metrics=METRICS)
    for name in METRICS:
        rows = MetricScore.objects.filter(metric=name, caption_id__in=caption_ids)
        if name == "CIDEr_D":  # corpus-level: the all-references batch is the corpus evaluate() sees
            rows = rows.filter(reference_set__context=ALL_REFERENCES)
        stored = dict(rows.values_list("caption_id", "value"))
        assert len(stored) == len(CANDIDATES), name
        assert [stored[pk] for pk in caption_ids] == pytest.approx(expected.per_caption[name], abs=1e-6), name
