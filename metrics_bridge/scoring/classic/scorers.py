"""BLEU_1..BLEU_4, METEOR, ROUGE_L and CIDEr_D with pycocoevalcap 1.2's own code, faster.

Values equal what pycocoevalcap returns per sentence when its PTBTokenizer tokenizes the batch and
Bleu(4) / Meteor() / Rouge() / Cider() score it (the test suite checks |delta| <= 1e-6). Speed comes
from doing less, not from other formulas:
- every distinct text is tokenized once per process, all new texts in one JVM call (ptb_tokenizer);
- BLEU and ROUGE-L score each distinct (candidate, references) once with pycocoevalcap's
  BleuScorer / Rouge.calc_score (sentence values don't depend on the rest of the batch);
- METEOR goes to one long-lived JVM (meteor_process);
- CIDEr-D is corpus-level: pycocoevalcap's CiderScorer over exactly the batch (duplicates included,
  they count in the document frequencies), with its per-text vectors and per-(candidate, reference)
  similarities memoized inside the corpus.
"""
from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

import numpy as np

from ..base import ScoreResult, ScoringContext, ScoringRequest
from . import meteor_process, ptb_tokenizer

#: bump when our code around pycocoevalcap changes in a way that could change values
IMPLEMENTATION_REVISION = 1

Tokenized = tuple[str, tuple[str, ...]]


def _pycocoevalcap_version() -> str:
    try:
        return version("pycocoevalcap")
    except PackageNotFoundError:
        return "unknown"


def classic_version(metric: str) -> str:
    return f"pycocoevalcap-{_pycocoevalcap_version()}-{metric}-ptb3.4.1+metrics_bridge-{IMPLEMENTATION_REVISION}"


def tokenize_batches(batches: Sequence[Sequence[ScoringRequest]]) -> list[list[Tokenized]]:
    """(candidate, references) tokenized like pycocoevalcap, every new text in one JVM call."""
    texts = []
    for batch in batches:
        for request in batch:
            if not request.references:
                raise ValueError(f"candidate {request.candidate_id!r} has no references")
            texts.append(request.candidate)
            texts.extend(request.references)
    tokens = dict(zip(texts, ptb_tokenizer.tokenize_texts(texts), strict=True))
    return [
        [(tokens[request.candidate], tuple(tokens[reference] for reference in request.references)) for request in batch]
        for batch in batches
    ]


class _ClassicScorer:
    """Shared plumbing: tokenization, Java check, score_batch via score_batches."""

    metric_names: tuple[str, ...] = ()
    version = ""
    needs = frozenset({"references"})
    corpus_level = False
    protocol_kind = "ngram"

    def unavailable_reason(self, context: ScoringContext | None = None) -> str | None:
        return ptb_tokenizer.java_unavailable_reason()

    def score_batch(self, requests: Sequence[ScoringRequest], context: ScoringContext) -> dict[str, list[ScoreResult]]:
        return self.score_batches([requests], context)[0]

    def score_batches(
        self, batches: Sequence[Sequence[ScoringRequest]], context: ScoringContext | None = None
    ) -> list[dict[str, list[ScoreResult]]]:
        self.warm_up()
        tokenized = tokenize_batches(batches)
        if self.corpus_level:
            values = [self._score_corpus(batch) for batch in tokenized]
        else:
            distinct = list(dict.fromkeys(pair for batch in tokenized for pair in batch))
            by_pair = dict(zip(distinct, self._score_distinct(distinct), strict=True))
            values = [[by_pair[pair] for pair in batch] for batch in tokenized]
        return [
            {name: [ScoreResult(float(row[k])) for row in batch_values] for k, name in enumerate(self.metric_names)}
            for batch_values in values
        ]

    def warm_up(self) -> None:
        """Nothing slow to start by default."""

    def _score_distinct(self, pairs: list[Tokenized]) -> list[tuple[float, ...]]:
        raise NotImplementedError

    def _score_corpus(self, pairs: list[Tokenized]) -> list[tuple[float, ...]]:
        raise NotImplementedError


class BleuScorer(_ClassicScorer):
    """Sentence BLEU-1..4, option 'closest', exactly pycocoevalcap's Bleu(4).compute_score per sentence."""

    metric_names = ("BLEU_1", "BLEU_2", "BLEU_3", "BLEU_4")
    version = classic_version("bleu")

    def _score_distinct(self, pairs: list[Tokenized]) -> list[tuple[float, ...]]:
        from pycocoevalcap.bleu.bleu_scorer import BleuScorer as CocoBleuScorer

        scorer = CocoBleuScorer(n=4)
        for candidate, references in pairs:
            scorer += (candidate, list(references))
        _, per_sentence = scorer.compute_score(option="closest", verbose=0)
        return list(zip(*per_sentence, strict=True))


class MeteorScorer(_ClassicScorer):
    """METEOR 1.5 (pycocoevalcap's jar and arguments) through one long-lived JVM."""

    metric_names = ("METEOR",)
    version = classic_version("meteor1.5")

    def warm_up(self) -> None:
        meteor_process.shared_process().start()

    def _score_distinct(self, pairs: list[Tokenized]) -> list[tuple[float, ...]]:
        return [(value,) for value in meteor_process.shared_process().score(pairs)]


class RougeScorer(_ClassicScorer):
    """ROUGE-L (beta 1.2), pycocoevalcap's Rouge.calc_score."""

    metric_names = ("ROUGE_L",)
    version = classic_version("rouge")

    def _score_distinct(self, pairs: list[Tokenized]) -> list[tuple[float, ...]]:
        from pycocoevalcap.rouge.rouge import Rouge

        rouge = Rouge()
        return [(rouge.calc_score([candidate], list(references)),) for candidate, references in pairs]


class CiderScorer(_ClassicScorer):
    """CIDEr-D (pycocoevalcap's Cider: n=4, sigma=6, clipping, length penalty, x10) over the batch as corpus."""

    metric_names = ("CIDEr_D",)
    version = classic_version("cider-d")
    corpus_level = True

    def _score_corpus(self, pairs: list[Tokenized]) -> list[tuple[float, ...]]:
        if not pairs:
            return []
        corpus = corpus_cider_scorer(pairs)
        _, scores = corpus.compute_score()
        return [(float(value),) for value in scores]


def corpus_cider_scorer(pairs: list[Tokenized]):
    """pycocoevalcap's CiderScorer for these (candidate, references), memoizing work within the corpus."""
    from pycocoevalcap.cider.cider_scorer import CiderScorer as CocoCiderScorer
    from pycocoevalcap.cider.cider_scorer import precook

    class MemoizedCiderScorer(CocoCiderScorer):
        # compute_cider below is pycocoevalcap 1.2's, line for line, with the n-gram vector of each text
        # and the similarity of each (candidate, reference) computed once: the document frequencies are
        # fixed for the corpus, so repeated work gives identical floats.
        def __init__(self) -> None:
            super().__init__(n=4, sigma=6.0)
            self.texts: list[Tokenized] = []
            self.cooked: dict[str, dict] = {}

        def cook(self, text: str):
            if text not in self.cooked:
                self.cooked[text] = precook(text, self.n)
            return self.cooked[text]

        def add(self, candidate: str, references: tuple[str, ...]) -> None:
            self.crefs.append([self.cook(reference) for reference in references])
            self.ctest.append(self.cook(candidate))
            self.texts.append((candidate, references))

        def compute_cider(self):
            def counts2vec(cnts):
                vec = [defaultdict(float) for _ in range(self.n)]
                length = 0
                norm = [0.0 for _ in range(self.n)]
                for ngram, term_freq in cnts.items():
                    df = np.log(max(1.0, self.document_frequency[ngram]))
                    n = len(ngram) - 1
                    vec[n][ngram] = float(term_freq) * (self.ref_len - df)
                    norm[n] += pow(vec[n][ngram], 2)
                    if n == 1:
                        length += term_freq
                norm = [np.sqrt(n) for n in norm]
                return vec, norm, length

            def sim(vec_hyp, vec_ref, norm_hyp, norm_ref, length_hyp, length_ref):
                delta = float(length_hyp - length_ref)
                val = np.array([0.0 for _ in range(self.n)])
                for n in range(self.n):
                    for ngram, _count in vec_hyp[n].items():
                        val[n] += min(vec_hyp[n][ngram], vec_ref[n].get(ngram, 0.0)) * vec_ref[n].get(ngram, 0.0)
                    if (norm_hyp[n] != 0) and (norm_ref[n] != 0):
                        val[n] /= norm_hyp[n] * norm_ref[n]
                    assert not math.isnan(val[n])
                    val[n] *= np.e ** (-(delta**2) / (2 * self.sigma**2))
                return val

            self.ref_len = np.log(float(len(self.crefs)))
            vectors: dict[str, tuple] = {}
            similarities: dict[tuple[str, str], np.ndarray] = {}

            def vector(text: str):
                if text not in vectors:
                    vectors[text] = counts2vec(self.cooked[text])
                return vectors[text]

            scores = []
            for candidate, references in self.texts:
                vec, norm, length = vector(candidate)
                score = np.array([0.0 for _ in range(self.n)])
                for reference in references:
                    key = (candidate, reference)
                    if key not in similarities:
                        vec_ref, norm_ref, length_ref = vector(reference)
                        similarities[key] = sim(vec, vec_ref, norm, norm_ref, length, length_ref)
                    score += similarities[key]
                score_avg = np.mean(score)
                score_avg /= len(references)
                score_avg *= 10.0
                scores.append(score_avg)
            return scores

    corpus = MemoizedCiderScorer()
    for candidate, references in pairs:
        corpus.add(candidate, references)
    return corpus
