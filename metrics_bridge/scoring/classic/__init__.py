"""The classic caption metrics, identical to pycocoevalcap 1.2 with its PTB tokenizer.

Scorers (see metrics_bridge.scoring.base for the Scorer contract):
- BleuScorer    -> BLEU_1, BLEU_2, BLEU_3, BLEU_4 (sentence level)
- MeteorScorer  -> METEOR (METEOR 1.5 jar, one long-lived JVM per process; `warm_up()` starts it)
- RougeScorer   -> ROUGE_L
- CiderScorer   -> CIDEr_D (corpus_level: the batch is the corpus for document frequencies)
All are protocol_kind "ngram", need Java 17+ on PATH, and offer
`score_batches(batches, context)` to tokenize all texts of several batches in one JVM call.

`score_classic_suite(batches, context)` computes all seven names for several batches at once
(METEOR in a background thread while the Python metrics run).

Helpers: `ptb_tokenizer.tokenize_texts(texts)` (cached PTB tokenization),
`meteor_process.shared_process()` (the METEOR JVM), `cider.cider_d(pairs)` (CIDEr-D of one corpus).
"""

from .scorers import BleuScorer, CiderScorer, MeteorScorer, RougeScorer, score_classic_suite, tokenize_batches

__all__ = ["BleuScorer", "CiderScorer", "MeteorScorer", "RougeScorer", "score_classic_suite", "tokenize_batches"]
