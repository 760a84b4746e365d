"""The phrase store behind review matching: vectors are stored under the model's version string and read back
without encoding again (a store keyed by anything else re-encodes every time, and on PostgreSQL overflows)."""

import numpy as np
import pytest

from metrics_bridge.models import PhraseVector
from metrics_bridge.scoring import sbert
from metrics_bridge.services.evaluation.phrase_vectors import cached_phrase_vectors

pytestmark = pytest.mark.skipif(sbert.model_unavailable_reason() is not None, reason="needs the packaged model")


@pytest.mark.django_db
def test_phrases_are_stored_under_the_model_version_and_read_back_without_encoding(monkeypatch):
    texts = ["dog barking", "cicadas chirring", "dog barking"]
    first = cached_phrase_vectors(texts)

    assert first.shape == (3, sbert.EMBEDDING_SIZE)
    stored = list(PhraseVector.objects.values_list("model", "text"))
    assert sorted(stored) == [(sbert.model_version(), "cicadas chirring"), (sbert.model_version(), "dog barking")]
    # the same vectors as the process-wide encoder gives
    np.testing.assert_allclose(first, sbert.encode_texts(texts), atol=1e-6)

    def no_encoding():
        raise AssertionError("the stored phrases were encoded again")

    monkeypatch.setattr(sbert, "load_model", no_encoding)
    again = cached_phrase_vectors(texts)
    np.testing.assert_array_equal(again, first)
    assert PhraseVector.objects.count() == 2
