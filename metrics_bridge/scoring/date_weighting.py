"""DATE's weighted sentence embeddings (protocols.md §4 steps 2-6, the MECAT authors' DATE.py).

For one corpus of sentences:
- token vectors are the model's *input word embeddings* (embedding-layer rows, unit-normalised);
- soft tf of a content word-piece t in sentence T: sum over T's content word-pieces u of cos(t, u)^2;
- soft idf over the corpus of n sentences: df(t) = sum over sentences of min(1, sum_u cos(t, u)^2),
  idf(t) = ln((n + 1) / (df(t) + 1)) + 1;
- weights w = tf * idf divided by their mean over the sentence's content word-pieces; [CLS] gets
  max(1, max w) and [SEP] min(1, min w);
- the sentence embedding: every position's (raw) input word embedding times its weight, fed to the
  Sentence-BERT model as `inputs_embeds` (it adds position and type embeddings), mean-pooled and
  L2-normalised by the model's own pooling and normalisation modules.
"Content" word-pieces are all but [CLS], [SEP] and padding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from . import sbert

#: rows of the (tokens x corpus positions) similarity matrix computed at once (bounds memory)
DF_ROWS_PER_STEP = 512
FORWARD_BATCH_SIZE = 64


class DateEncoder:
    """The Sentence-BERT model's tokenizer, input word embeddings and weighted forward pass.

    `model`: a SentenceTransformer whose first module is a Hugging Face transformer (default: the
    shared all-MiniLM-L6-v2 of sbert.load_model()).
    """

    def __init__(self, model=None) -> None:
        self.is_shared_model = model is None
        self.model = model if model is not None else sbert.load_model()
        self.tokenizer = self.model.tokenizer
        self.transformer = self.model[0].auto_model
        self.max_length = int(self.model.max_seq_length)
        self.word_embeddings = self.transformer.get_input_embeddings().weight.detach().cpu().numpy().astype(np.float64)
        norms = np.linalg.norm(self.word_embeddings, axis=1, keepdims=True)
        self.unit_embeddings = self.word_embeddings / np.maximum(norms, 1e-12)
        self.special_ids = {self.tokenizer.cls_token_id, self.tokenizer.sep_token_id, self.tokenizer.pad_token_id}

    @property
    def name(self) -> str:
        return sbert.model_version() if self.is_shared_model else type(self.model).__name__

    def token_ids(self, text: str) -> list[int]:
        """Word-piece ids with [CLS] and [SEP], truncated like the model truncates."""
        # The shared tokenizer is used by other threads too (see sbert.tokenizer_lock).
        with sbert.tokenizer_lock:
            return list(self.tokenizer(text, truncation=True, max_length=self.max_length)["input_ids"])

    def content_positions(self, ids: Sequence[int]) -> list[int]:
        return [position for position, token in enumerate(ids) if token not in self.special_ids]

    def embed_weighted(self, token_id_lists: Sequence[Sequence[int]], weight_lists: Sequence[np.ndarray]) -> np.ndarray:
        """Sentence embeddings (n, dim) float64 of weighted input embeddings, through the model's own modules
        (in eval mode: no dropout). Sentences go in batches of similar length, as SentenceTransformer.encode does."""
        import torch

        self.model.eval()
        dimension = self.word_embeddings.shape[1]
        result = np.zeros((len(token_id_lists), dimension))
        order = np.argsort([-len(ids) for ids in token_id_lists], kind="stable")
        for start in range(0, len(order), FORWARD_BATCH_SIZE):
            rows = order[start : start + FORWARD_BATCH_SIZE]
            length = max(len(token_id_lists[row]) for row in rows)
            inputs = np.zeros((len(rows), length, dimension), dtype=np.float32)
            mask = np.zeros((len(rows), length), dtype=np.int64)
            for slot, row in enumerate(rows):
                ids = list(token_id_lists[row])
                inputs[slot, : len(ids)] = self.word_embeddings[ids] * np.asarray(weight_lists[row])[:, None]
                mask[slot, : len(ids)] = 1
            features = {
                "inputs_embeds": torch.from_numpy(inputs),
                "attention_mask": torch.from_numpy(mask),
                "token_type_ids": torch.zeros_like(torch.from_numpy(mask)),
            }
            with torch.no_grad():
                embeddings = self.model(features)["sentence_embedding"]
            result[rows] = embeddings.detach().cpu().numpy().astype(np.float64)
        return result


@dataclass
class WeightedCorpus:
    """A corpus weighted on its own, and the embeddings of the texts asked for (intermediates kept for checks)."""

    size: int  # n: sentences in the corpus, duplicates counted
    idf: dict[int, float]  # word-piece id -> soft idf over the corpus
    token_ids: dict[str, list[int]] = field(default_factory=dict)  # text -> ids with [CLS]/[SEP]
    tf: dict[str, np.ndarray] = field(default_factory=dict)  # text -> soft tf per content position
    weights: dict[str, np.ndarray] = field(default_factory=dict)  # text -> weight per position ([CLS] ... [SEP])
    embeddings: dict[str, np.ndarray] = field(default_factory=dict)  # text -> unit-length sentence embedding


def soft_idf(encoder: DateEncoder, corpus_token_ids: Sequence[Sequence[int]]) -> dict[int, float]:
    """idf(t) = ln((n + 1) / (df(t) + 1)) + 1 with df(t) = sum over sentences of min(1, sum_u cos(t, u)^2)."""
    contents = [[token for token in ids if token not in encoder.special_ids] for ids in corpus_token_ids]
    distinct = sorted({token for content in contents for token in content})
    if not distinct:
        return {}
    flat = np.array([token for content in contents for token in content])
    sentence_of = np.repeat(np.arange(len(contents)), [len(content) for content in contents])
    nonempty_starts = np.flatnonzero(np.diff(np.concatenate([[-1], sentence_of])))
    positions = encoder.unit_embeddings[flat]
    document_frequency = np.zeros(len(distinct))
    for start in range(0, len(distinct), DF_ROWS_PER_STEP):
        rows = encoder.unit_embeddings[distinct[start : start + DF_ROWS_PER_STEP]]
        squared = (rows @ positions.T) ** 2
        per_sentence = np.add.reduceat(squared, nonempty_starts, axis=1)
        document_frequency[start : start + DF_ROWS_PER_STEP] = np.minimum(1.0, per_sentence).sum(axis=1)
    count = len(corpus_token_ids)
    return {
        token: float(np.log((count + 1) / (df + 1)) + 1) for token, df in zip(distinct, document_frequency, strict=True)
    }


def sentence_weights(encoder: DateEncoder, ids: Sequence[int], idf: dict[int, float]) -> tuple[np.ndarray, np.ndarray]:
    """(soft tf per content position, weight per position) of one sentence of the corpus behind `idf`."""
    content = encoder.content_positions(ids)
    weights = np.ones(len(ids))
    if not content:
        return np.zeros(0), weights
    vectors = encoder.unit_embeddings[[ids[p] for p in content]]
    tf = ((vectors @ vectors.T) ** 2).sum(axis=1)
    raw = tf * np.array([idf[ids[p]] for p in content])
    normalised = raw / raw.mean()
    weights[content] = normalised
    for position, token in enumerate(ids):
        if token == encoder.tokenizer.cls_token_id:
            weights[position] = max(1.0, float(normalised.max()))
        elif token == encoder.tokenizer.sep_token_id:
            weights[position] = min(1.0, float(normalised.min()))
    return tf, weights


def weighted_corpus(
    encoder: DateEncoder, corpus: Sequence[str], texts: Sequence[str] | None = None, *, embed: bool = True
) -> WeightedCorpus:
    """Weight `corpus` (duplicates count in df) and embed `texts` (default: the corpus' distinct texts).

    Every text to embed must be a corpus member: its word-pieces need the corpus idf. With embed=False
    only the weights are computed; `embed_corpora` then embeds several corpora in one pass of the model.
    """
    token_ids = {text: encoder.token_ids(text) for text in dict.fromkeys(corpus)}
    idf = soft_idf(encoder, [token_ids[text] for text in corpus])
    result = WeightedCorpus(size=len(corpus), idf=idf)
    wanted = list(dict.fromkeys(texts if texts is not None else corpus))
    missing = [text for text in wanted if text not in token_ids]
    if missing:
        raise ValueError(f"DATE: {len(missing)} text(s) to embed are not in the corpus, e.g. {missing[0]!r}")
    for text in wanted:
        result.token_ids[text] = token_ids[text]
        result.tf[text], result.weights[text] = sentence_weights(encoder, token_ids[text], idf)
    if embed:
        embed_corpora(encoder, [result])
    return result


def embed_corpora(encoder: DateEncoder, corpora: Sequence[WeightedCorpus]) -> None:
    """Fill each corpus' embeddings (its weighted texts) with one pass of the model over all of them."""
    rows = [(corpus, text) for corpus in corpora for text in corpus.weights]
    vectors = encoder.embed_weighted(
        [corpus.token_ids[text] for corpus, text in rows], [corpus.weights[text] for corpus, text in rows]
    )
    for (corpus, text), vector in zip(rows, vectors, strict=True):
        corpus.embeddings[text] = vector
