"""Metric runs: planning them into chunks, scoring and storing the chunks, the workers that take them, and the
system-level scores a run stores."""
