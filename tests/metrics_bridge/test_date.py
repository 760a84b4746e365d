"""DATE (MECAT's DATE.py, protocols.md §4) against values computed with the algorithm of MECAT's released DATE.py
(../shared/checks/date_reference_clotho_hm.json: per item and for the set); on a small example worked by hand
with numpy, every intermediate value checked; a generic caption scores far below specific ones; the author sets."""

import json

import numpy as np
import pytest
import torch

from metrics_bridge.scoring import sbert
from metrics_bridge.scoring.base import DatasetSettings, ScoringContext, ScoringRequest
from metrics_bridge.scoring.date import DateScorer, date_computation, date_item_scores

CANDIDATES = ["a dog barks loudly", "rain falls on a roof", "a dog barks"]
REFERENCES = [
    ["a dog is barking", "a loud dog barks twice"],
    ["heavy rain falls on a tin roof", "rain pours on the roof"],
    ["a cat meows", "a kitten meows softly"],
]
DELTA = 0.1703


@pytest.fixture(scope="module")
def model():
    return sbert.load_model()


class ByHand:
    """DATE's steps written out with loops over word-pieces, from the model's embedding matrix."""

    def __init__(self, model):
        self.model = model
        self.tokenizer = model.tokenizer
        self.embeddings = model[0].auto_model.embeddings.word_embeddings.weight.detach().numpy().astype(np.float64)
        self.special = {self.tokenizer.cls_token_id, self.tokenizer.sep_token_id, self.tokenizer.pad_token_id}

    def ids(self, text):
        return self.tokenizer(text)["input_ids"]

    def cos(self, t, u):
        a, b = self.embeddings[t], self.embeddings[u]
        return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))

    def content(self, text):
        return [t for t in self.ids(text) if t not in self.special]

    def tf(self, text):
        content = self.content(text)
        return [sum(self.cos(t, u) ** 2 for u in content) for t in content]

    def idf(self, corpus):
        result = {}
        for t in {t for text in corpus for t in self.content(text)}:
            df = sum(min(1.0, sum(self.cos(t, u) ** 2 for u in self.content(text))) for text in corpus)
            result[t] = np.log((len(corpus) + 1) / (df + 1)) + 1
        return result

    def weights(self, text, idf):
        ids = self.ids(text)
        raw = [tf * idf[t] for tf, t in zip(self.tf(text), self.content(text), strict=True)]
        normalised = [w / np.mean(raw) for w in raw]
        weights, content_index = [], 0
        for t in ids:
            if t == self.tokenizer.cls_token_id:
                weights.append(max(1.0, max(normalised)))
            elif t == self.tokenizer.sep_token_id:
                weights.append(min(1.0, min(normalised)))
            else:
                weights.append(normalised[content_index])
                content_index += 1
        return weights

    def embedding(self, text, idf):
        ids = self.ids(text)
        scaled = self.embeddings[ids] * np.array(self.weights(text, idf))[:, None]
        with torch.no_grad():
            output = (
                self.model[0]
                .auto_model(
                    inputs_embeds=torch.tensor(scaled[None], dtype=torch.float32),
                    attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                )
                .last_hidden_state[0]
                .numpy()
            )
        pooled = output.astype(np.float64).mean(axis=0)
        return pooled / np.linalg.norm(pooled)


def _mecat_reference_items(shared_dir) -> tuple[dict, list[str], list[list[str]]]:
    """The reference file and, in its order, each item's candidate (the machine caption of the clip's HM pair)
    and the clip's five references, read from Clotho-Eval itself."""
    reference = json.loads((shared_dir / "checks" / "date_reference_clotho_hm.json").read_text())
    clips = {item["raw_name"]: item for item in json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text())}
    candidates, references = [], []
    for entry in reference["items"]:
        first, second, first_label, _, _ = clips[entry["key"]]["HM"][:5]
        machine = second if first_label.startswith("human") else first
        assert machine == entry["candidate"], entry["key"]
        candidates.append(machine)
        references.append(clips[entry["key"]]["references"])
    return reference, candidates, references


def test_date_equals_mecat_released_algorithm_per_item_and_for_the_set(shared_dir):
    """Figures from MECAT's DATE.py (packaged MiniLM, no error checker): every item within 1e-3, the set within 2e-4."""
    reference, candidates, references = _mecat_reference_items(shared_dir)
    computed = date_computation(candidates, references, delta=DELTA)
    assert len(reference["items"]) == len(candidates) == 250
    worst = {"sim": 0.0, "dis": 0.0, "date": 0.0}
    for row, entry in enumerate(reference["items"]):
        got = {"sim": computed.similarity[row], "dis": computed.discriminability[row], "date": computed.date[row]}
        for key, value in got.items():
            worst[key] = max(worst[key], abs(float(value) - entry[key]))
    assert max(worst.values()) <= 1e-3, f"largest per-item difference from MECAT's algorithm: {worst}"

    # The set score is the mean over the items (MECAT; system_level._date_set_score, checked against the items'
    # mean in tests/metrics_bridge/test_leaderboard.py), so the set figures follow from the same computation.
    expected = reference["system"]
    assert float(np.mean(computed.date)) == pytest.approx(expected["date"], abs=2e-4)
    assert float(np.mean(computed.similarity)) == pytest.approx(expected["similarity"], abs=2e-4)
    assert float(np.mean(computed.discriminability)) == pytest.approx(expected["discrimination"], abs=2e-4)


def test_date_by_hand_every_intermediate(model):
    hand = ByHand(model)
    computed = date_computation(CANDIDATES, REFERENCES, delta=DELTA)

    reference_corpus = [text for item in REFERENCES for text in item]
    reference_idf = hand.idf(reference_corpus)
    candidate_idf = hand.idf(CANDIDATES)
    assert computed.references.size == 6 and computed.candidates.size == 3
    assert computed.references.idf.keys() == reference_idf.keys()
    for token, value in reference_idf.items():
        assert computed.references.idf[token] == pytest.approx(value, abs=1e-9)
    for token, value in candidate_idf.items():
        assert computed.candidates.idf[token] == pytest.approx(value, abs=1e-9)
    # "a" is in 5 of the 6 reference sentences: a soft df of at least 5 gives it the lowest idf
    a_id = hand.ids("a")[1]
    assert reference_idf[a_id] == min(reference_idf.values())

    for corpus, idf, texts in (
        (computed.references, reference_idf, reference_corpus),
        (computed.candidates, candidate_idf, CANDIDATES),
    ):
        for text in texts:
            assert corpus.token_ids[text] == hand.ids(text)
            np.testing.assert_allclose(corpus.tf[text], hand.tf(text), atol=1e-9)
            np.testing.assert_allclose(corpus.weights[text], hand.weights(text, idf), atol=1e-9)
            weights = corpus.weights[text]
            assert np.mean(weights[1:-1]) == pytest.approx(1.0)  # normalised over the content word-pieces
            np.testing.assert_allclose(corpus.embeddings[text], hand.embedding(text, idf), atol=2e-5)

    vectors_c = [hand.embedding(text, candidate_idf) for text in CANDIDATES]
    vectors_r = [[hand.embedding(text, reference_idf) for text in item] for item in REFERENCES]
    matrix = np.array([[np.mean([c @ r for r in refs]) for refs in vectors_r] for c in vectors_c])
    np.testing.assert_allclose(computed.matrix, matrix, atol=5e-5)
    for i in range(3):
        above = sum(1 for j in range(3) if matrix[i, j] > matrix[i, i] + DELTA / 2)
        band = sum(1 for j in range(3) if abs(matrix[i, j] - matrix[i, i]) <= DELTA / 2)
        s_sim, s_dis = matrix[i, i], 1 - (above + band) / 3
        assert computed.similarity[i] == pytest.approx(s_sim, abs=5e-5)
        assert computed.discriminability[i] == pytest.approx(s_dis)
        assert computed.date[i] == pytest.approx(2 * s_sim * s_dis / (s_sim + s_dis), abs=5e-5)
    # the dog caption of the cat clip fits the dog clip better than its own: one clip above, itself in the band
    assert computed.matrix[2, 0] > computed.matrix[2, 2] + DELTA / 2
    assert list(computed.discriminability) == pytest.approx([2 / 3, 2 / 3, 1 / 3])
    assert computed.date[2] < 0.5 * min(computed.date[0], computed.date[1])

    items = date_item_scores(CANDIDATES, REFERENCES)
    assert [set(item) for item in items] == [{"date", "similarity", "discriminability"}] * 3
    assert [item["date"] for item in items] == pytest.approx(list(computed.date))
    penalised = date_item_scores(CANDIDATES, REFERENCES, error_penalties=[1.0, 0.1, 1.0])
    assert penalised[1]["similarity"] == pytest.approx(0.1 * items[1]["similarity"])


def test_one_generic_caption_for_every_clip_scores_far_below_specific_captions(shared_dir):
    items = json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text())[:40]
    references = [item["references"][1:] for item in items]
    specific = [item["references"][0] for item in items]
    generic = ["a sound is heard in the background"] * len(items)
    specific_scores = date_item_scores(specific, references)
    generic_scores = date_item_scores(generic, references)
    specific_date = np.mean([item["date"] for item in specific_scores])
    generic_date = np.mean([item["date"] for item in generic_scores])
    assert generic_date < 0.5 * specific_date
    # every clip's band holds the generic caption: its discriminability is near zero
    assert np.mean([item["discriminability"] for item in generic_scores]) < 0.35
    assert np.mean([item["discriminability"] for item in specific_scores]) > 0.8


def test_the_scorer_scores_each_caption_within_its_authors_set():
    clips = {f"c{k}": item for k, item in enumerate(REFERENCES)}
    system = ["a dog is barking", "rain is falling", "a cat meows"]
    requests = [
        ScoringRequest(text, tuple(refs), candidate_id=f"h{k}", clip_key=clip, author="human")
        for k, (clip, refs, text) in enumerate(zip(clips, REFERENCES, CANDIDATES, strict=True))
    ]
    requests += [
        ScoringRequest(text, tuple(refs), candidate_id=f"s{k}", clip_key=clip, author="sys")
        for k, (clip, refs, text) in enumerate(zip(clips, REFERENCES, system, strict=True))
    ]
    context = ScoringContext(clip_references={clip: tuple(refs) for clip, refs in clips.items()})
    results = DateScorer().score_batch(requests, context)["DATE"]
    for author_texts, scored in ((CANDIDATES, results[:3]), (system, results[3:])):
        alone = date_item_scores(author_texts, REFERENCES)
        assert [r.value for r in scored] == pytest.approx([item["date"] for item in alone], abs=1e-6)
    assert results[0].details["author_set"] == "human" and results[0].details["clips"] == 3

    # the pairwise protocol: the own clip with the shortened list, every other clip with its full list
    shortened = ScoringRequest(CANDIDATES[0], (REFERENCES[0][1],), candidate_id="h0", clip_key="c0", author="human")
    protocol = DateScorer().score_batch([shortened, *requests[1:3]], context)["DATE"]
    assert protocol[0].details["clips"] == 3
    assert protocol[0].details["similarity"] != pytest.approx(results[0].details["similarity"], abs=1e-4)
    assert protocol[1].value == pytest.approx(results[1].value, abs=1e-6)  # other captions unchanged


def test_delta_is_a_dataset_setting_in_the_version():
    scorer = DateScorer()
    default = scorer.version_for(ScoringContext())
    wider = scorer.version_for(ScoringContext(dataset=DatasetSettings(date_delta=0.25)))
    assert "delta0.1703" in default and "delta0.25" in wider
    assert "detector-none" in default and "all-MiniLM-L6-v2" in default and "transformers-" in default
    with pytest.raises(ValueError, match="date_delta"):
        DatasetSettings(date_delta=-1)
