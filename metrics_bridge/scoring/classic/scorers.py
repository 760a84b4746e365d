"""BLEU_1..BLEU_4, METEOR, ROUGE_L and CIDEr_D with pycocoevalcap 1.2's own code, faster.

Values equal what pycocoevalcap returns per sentence when its PTBTokenizer tokenizes the batch and
Bleu(4) / Meteor() / Rouge() / Cider() score it (the test suite checks |delta| <= 1e-6). Speed comes
from doing less, not from other formulas:
- every distinct text is tokenized once per process, all new texts in one JVM call (ptb_tokenizer);
- BLEU and ROUGE-L score each distinct (candidate, references) once with pycocoevalcap's
  BleuScorer (reference lists cooked once) / Rouge.calc_score's steps (the LCS length from a
  bit-parallel algorithm, lcs.py: the same integer); sentence values don't depend on the rest of the batch;
- METEOR goes to one long-lived JVM (meteor_process);
- CIDEr-D is corpus-level: pycocoevalcap's CiderScorer over exactly the batch (duplicates included,
  they count in the document frequencies), with repeated work done once inside the corpus (cider.py).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from ..base import ScoreResult, ScoringContext, ScoringRequest, installed_version, warm_up
from . import meteor_process, ptb_tokenizer
from .cider import cider_d
from .lcs import lcs_length

#: bump when our code around pycocoevalcap changes in a way that could change values
IMPLEMENTATION_REVISION = 1

Tokenized = tuple[str, tuple[str, ...]]


def classic_version(metric: str) -> str:
    library = installed_version("pycocoevalcap")
    return f"pycocoevalcap-{library}-{metric}-ptb3.4.1+metrics_bridge-{IMPLEMENTATION_REVISION}"


def tokenize_batches(
    batches: Sequence[Sequence[ScoringRequest]], *, corpus_texts: Sequence[str] = ()
) -> list[list[Tokenized]]:
    """(candidate, references) tokenized like pycocoevalcap, every new text in one JVM call.

    `corpus_texts` (every text of the dataset) go into that call too when it has to be made, so the
    next chunks of a run find their texts tokenized instead of starting the JVM again.
    """
    texts = []
    for batch in batches:
        for request in batch:
            if not request.references:
                raise ValueError(f"candidate {request.candidate_id!r} has no references")
            texts.append(request.candidate)
            texts.extend(request.references)
    tokens = dict(zip(texts, ptb_tokenizer.tokenize_texts(texts, prefetch=corpus_texts), strict=True))
    return [
        [(tokens[request.candidate], tuple(tokens[reference] for reference in request.references)) for request in batch]
        for batch in batches
    ]


class _ClassicScorer:
    """Shared plumbing: tokenization, Java check, score_batch via score_batches."""

    metric_names: tuple[str, ...] = ()
    version = ""
    # corpus_texts: the dataset's texts, tokenized in the first JVM call of a run (see tokenize_batches)
    needs = frozenset({"references", "corpus_texts"})
    uses_clip_data = False  # no gold annotations, no other clips' references: only the requests' texts
    corpus_level = False
    protocol_kind = "ngram"

    def unavailable_reason(self, context: ScoringContext | None = None) -> str | None:
        return ptb_tokenizer.java_unavailable_reason()

    def score_batch(self, requests: Sequence[ScoringRequest], context: ScoringContext) -> dict[str, list[ScoreResult]]:
        return self.score_batches([requests], context)[0]

    def score_batches(
        self, batches: Sequence[Sequence[ScoringRequest]], context: ScoringContext | None = None
    ) -> list[dict[str, list[ScoreResult]]]:
        warm_up(self)  # METEOR's JVM loads while the texts are tokenized
        tokenized = tokenize_batches(batches, corpus_texts=context.corpus_texts if context else ())
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
        from pycocoevalcap.bleu.bleu_scorer import cook_refs, cook_test

        # BleuScorer += (candidate, references) does cook_refs + cook_test; cooking each distinct
        # reference list once gives the same structures (they are only read afterwards).
        scorer = CocoBleuScorer(n=4)
        cooked: dict[tuple[str, ...], tuple] = {}
        for candidate, references in pairs:
            if references not in cooked:
                cooked[references] = cook_refs(list(references))
            scorer.crefs.append(cooked[references])
            scorer.ctest.append(cook_test(candidate, cooked[references]))
        _, per_sentence = scorer.compute_score(option="closest", verbose=0)
        return list(zip(*per_sentence, strict=True))


class MeteorScorer(_ClassicScorer):
    """METEOR 1.5 (pycocoevalcap's jar and arguments) through one long-lived JVM."""

    metric_names = ("METEOR",)
    version = classic_version("meteor1.5")
    # Chunks 8x the usual size: a METEOR chunk holds its worker thread while the JVM (a process of its
    # own) scores it, and the JVM scores one chunk at a time. Few large chunks leave a two-thread worker's
    # other thread to the other scorers; many small ones had both threads queueing for the JVM.
    chunk_size_factor = 8

    def warm_up(self) -> None:
        meteor_process.shared_process().start()

    def _score_distinct(self, pairs: list[Tokenized]) -> list[tuple[float, ...]]:
        return [(value,) for value in meteor_process.shared_process().score(pairs)]


class RougeScorer(_ClassicScorer):
    """ROUGE-L (beta 1.2), pycocoevalcap's Rouge.calc_score (its LCS table replaced by a bit-parallel LCS)."""

    metric_names = ("ROUGE_L",)
    version = classic_version("rouge")

    def _score_distinct(self, pairs: list[Tokenized]) -> list[tuple[float, ...]]:
        from pycocoevalcap.rouge.rouge import Rouge

        beta = Rouge().beta
        tokens: dict[str, list[str]] = {}

        def split(text: str) -> list[str]:
            if text not in tokens:
                tokens[text] = text.split(" ")
            return tokens[text]

        def calc_score(candidate: str, references: tuple[str, ...]) -> float:
            # Rouge.calc_score, with the LCS length from lcs_length (the same integer as its my_lcs)
            prec = []
            rec = []
            token_c = split(candidate)
            for reference in references:
                token_r = split(reference)
                lcs = lcs_length(token_r, token_c)
                prec.append(lcs / float(len(token_c)))
                rec.append(lcs / float(len(token_r)))
            prec_max = max(prec)
            rec_max = max(rec)
            if prec_max != 0 and rec_max != 0:
                return ((1 + beta**2) * prec_max * rec_max) / float(rec_max + beta**2 * prec_max)
            return 0.0

        return [(calc_score(candidate, references),) for candidate, references in pairs]


class CiderScorer(_ClassicScorer):
    """CIDEr-D (pycocoevalcap's Cider: n=4, sigma=6, clipping, length penalty, x10) over the batch as corpus."""

    metric_names = ("CIDEr_D",)
    version = classic_version("cider-d")
    corpus_level = True

    def _score_corpus(self, pairs: list[Tokenized]) -> list[tuple[float, ...]]:
        return [(value,) for value in cider_d(pairs)]


def score_classic_suite(
    batches: Sequence[Sequence[ScoringRequest]], context: ScoringContext | None = None
) -> list[dict[str, list[ScoreResult]]]:
    """All seven classic metrics for several batches at once, one dict {metric name: results} per batch.

    Same values as the four scorers one after the other; faster because METEOR's JVM loads while the
    texts are tokenized and scores in a background thread while BLEU, ROUGE-L and CIDEr-D run here.
    """
    meteor = MeteorScorer()
    meteor.warm_up()
    tokenize_batches(batches)  # one JVM call; the scorers below read the cache
    meteor_results: list = []
    failures: list[BaseException] = []

    def run_meteor() -> None:
        try:
            meteor_results.extend(meteor.score_batches(batches, context))
        except BaseException as error:  # re-raised in the caller's thread
            failures.append(error)

    thread = threading.Thread(target=run_meteor, name="meteor-scoring", daemon=True)
    thread.start()
    merged: list[dict[str, list[ScoreResult]]] = [{} for _ in batches]
    for scorer in (BleuScorer(), RougeScorer(), CiderScorer()):
        for into, result in zip(merged, scorer.score_batches(batches, context), strict=True):
            into.update(result)
    thread.join()
    if failures:
        raise failures[0]
    for into, result in zip(merged, meteor_results, strict=True):
        into.update(result)
    return merged
