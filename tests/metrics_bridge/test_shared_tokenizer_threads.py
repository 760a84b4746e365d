"""The shared Sentence-BERT tokenizer under the worker's thread pool: two tasks in one process use it at once
(Sentence-BERT or DATE scores in one, FENSE's fluency detector in the other, which truncates at another length).
A Hugging Face fast tokenizer refuses a second borrower while its truncation is being changed ("RuntimeError:
Already borrowed") unless every use holds `sbert.tokenizer_lock`. Without the lock this test fails within a
second or two; with it both loops run to the end of the window."""

import threading
import time

import pytest

from metrics_bridge.scoring import sbert
from metrics_bridge.scoring.date_weighting import DateEncoder
from metrics_bridge.scoring.fluency.model import frozen_states

pytestmark = pytest.mark.skipif(sbert.model_unavailable_reason() is not None, reason="needs the packaged model")

WINDOW_SECONDS = 6.0


def _loop_together(*jobs) -> tuple[list[str], list[int]]:
    """Run each job repeatedly in its own thread until the window closes or one fails; (errors, rounds per job)."""
    errors: list[str] = []
    rounds = [0] * len(jobs)
    start = threading.Barrier(len(jobs))

    def run(slot, job):
        start.wait()
        deadline = time.monotonic() + WINDOW_SECONDS
        try:
            while time.monotonic() < deadline and not errors:
                job(rounds[slot])
                rounds[slot] += 1
        except Exception as error:  # the failure under test: collected, not lost in a thread
            errors.append(repr(error))

    threads = [threading.Thread(target=run, args=(slot, job)) for slot, job in enumerate(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors, rounds


def _fluency_batch(round_: int) -> None:
    for _states in frozen_states([f"rain falls on a tin roof {round_} {k}" for k in range(4)], frozen_layers=0):
        pass


def test_sentence_encoding_and_the_fluency_detector_share_the_tokenizer_across_threads():
    sbert.load_model()

    def encode(round_: int) -> None:
        sbert.encode_texts([f"a dog barks {round_} {index}" for index in range(8)])

    errors, rounds = _loop_together(encode, _fluency_batch)
    assert errors == []
    assert min(rounds) > 0
    # What a thread encoded is what a lone call encodes.
    together = sbert.encode_texts(["a dog barks 0 7"])
    sbert.clear_cache()
    alone = sbert.encode_texts(["a dog barks 0 7"])
    assert abs(float(together[0] @ alone[0]) - 1.0) < 1e-5


def test_date_word_pieces_and_the_fluency_detector_share_the_tokenizer_across_threads():
    encoder = DateEncoder()

    def word_pieces(round_: int) -> None:
        for index in range(20):
            encoder.token_ids(f"a car passes by {round_} {index}")

    errors, rounds = _loop_together(word_pieces, _fluency_batch)
    assert errors == []
    assert min(rounds) > 0
    assert encoder.token_ids("rain falls") == list(sbert.load_model().tokenizer("rain falls")["input_ids"])
