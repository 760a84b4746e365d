"""CIDEr-D over one corpus: pycocoevalcap 1.2's CiderScorer with its repeated work done once.

pycocoevalcap recomputes, for every request, the n-gram counts and tf-idf vector of each of its
references, the similarity of the candidate with each reference, and the union of the references'
n-grams for the document frequencies. Within one corpus those only depend on the texts, so they are
computed once per distinct text / (candidate, reference) / reference list / request here. The
arithmetic is pycocoevalcap's, operation for operation and in the same order (Python floats and
numpy float64 scalars are the same IEEE doubles, and pow/log/sqrt are the same calls), so values
are bit-identical -- the tests and bench/metrics_bench.py compare.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np
from pycocoevalcap.cider.cider_scorer import CiderScorer, precook

Tokenized = tuple[str, tuple[str, ...]]


class CorpusCider(CiderScorer):
    """CIDEr-D (n=4, sigma=6) of each (tokenized candidate, tokenized references); the list is the corpus."""

    def __init__(self, pairs: Sequence[Tokenized]) -> None:
        super().__init__(n=4, sigma=6.0)
        self.pairs = list(pairs)
        self.cooked: dict[str, dict] = {}
        for candidate, references in self.pairs:
            self.crefs.append([self._cook(reference) for reference in references])
            self.ctest.append(self._cook(candidate))

    def _cook(self, text: str) -> dict:
        if text not in self.cooked:
            self.cooked[text] = precook(text, self.n)
        return self.cooked[text]

    def compute_doc_freq(self) -> None:
        # pycocoevalcap adds 1 per request for each n-gram of the union of its references; adding the
        # number of requests sharing a reference list at once gives the same (integer) counts.
        for references, requests in Counter(references for _, references in self.pairs).items():
            for ngram in {ngram for reference in references for ngram in self.cooked[reference]}:
                self.document_frequency[ngram] += requests

    def compute_cider(self) -> list[float]:
        self.ref_len = np.log(float(len(self.crefs)))
        weights: dict[tuple, float] = {}
        vectors: dict[str, tuple] = {}
        similarities: dict[tuple[str, str], np.ndarray] = {}
        scores_by_request: dict[Tokenized, float] = {}

        def vector(text: str) -> tuple:
            """counts2vec: per n-gram order {ngram: tf * idf}, the norms, the 'length'."""
            if text in vectors:
                return vectors[text]
            vec = [{} for _ in range(self.n)]
            norm = [0.0 for _ in range(self.n)]
            length = 0
            for ngram, term_freq in self.cooked[text].items():
                weight = weights.get(ngram)
                if weight is None:
                    df = np.log(max(1.0, self.document_frequency.get(ngram, 0.0)))
                    weight = weights[ngram] = float(self.ref_len - df)
                n = len(ngram) - 1
                value = float(term_freq) * weight
                vec[n][ngram] = value
                norm[n] += pow(value, 2)
                if n == 1:  # sic: pycocoevalcap counts bigrams as the length
                    length += term_freq
            vectors[text] = (vec, [np.sqrt(n) for n in norm], length)
            return vectors[text]

        def similarity(candidate: str, reference: str) -> np.ndarray:
            """sim(): clipped cosine per n-gram order times the Gaussian length penalty."""
            vec_hyp, norm_hyp, length_hyp = vector(candidate)
            vec_ref, norm_ref, length_ref = vector(reference)
            delta = float(length_hyp - length_ref)
            penalty = np.e ** (-(delta**2) / (2 * self.sigma**2))
            val = []
            for n in range(self.n):
                total = 0.0
                reference_values = vec_ref[n]
                # pycocoevalcap adds min(h, r) * r for every n-gram of the hypothesis, in its order; an n-gram
                # the reference lacks adds min(h, 0.0) * 0.0 = 0.0 (tf-idf values are >= 0: df <= the number
                # of requests), which leaves the sum as it is, so only shared n-grams are added, in that order.
                for ngram, hypothesis_value in vec_hyp[n].items():
                    reference_value = reference_values.get(ngram)
                    if reference_value is not None:
                        total += min(hypothesis_value, reference_value) * reference_value
                if (norm_hyp[n] != 0) and (norm_ref[n] != 0):
                    total /= norm_hyp[n] * norm_ref[n]
                assert not math.isnan(total)
                val.append(total * penalty)
            return np.array(val)

        scores = []
        for request in self.pairs:
            if request not in scores_by_request:
                candidate, references = request
                score = np.array([0.0 for _ in range(self.n)])
                for reference in references:
                    key = (candidate, reference)
                    if key not in similarities:
                        similarities[key] = similarity(candidate, reference)
                    score += similarities[key]
                score_avg = np.mean(score)
                score_avg /= len(references)
                score_avg *= 10.0
                scores_by_request[request] = score_avg
            scores.append(scores_by_request[request])
        return scores


def cider_d(pairs: Sequence[Tokenized]) -> list[float]:
    """CIDEr-D of each request with `pairs` as the corpus (empty in, empty out)."""
    if not pairs:
        return []
    _, scores = CorpusCider(pairs).compute_score()
    return [float(value) for value in scores]
