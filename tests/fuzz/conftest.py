"""Hypothesis budgets for the fuzz tests: a bounded, deterministic one in CI and a longer one for local runs.

    .venv/bin/python -m pytest tests/fuzz                               # CI budget ("ci" profile)
    HYPOTHESIS_PROFILE=long .venv/bin/python -m pytest tests/fuzz -q    # local: 20x the examples, random seeds

The "ci" profile is derandomized (the same examples every run, so CI cannot flake on a lucky draw) and
keeps no example database; "long" draws new examples each time and reports the seed of a failure.
"""

import os

from hypothesis import HealthCheck, settings

# Each example runs inside a savepoint that is rolled back (see fuzz_helpers.rolled_back), so the
# function-scoped database fixture is safe to share between examples.
SHARED = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
    "database": None,
}
settings.register_profile("ci", max_examples=40, derandomize=True, print_blob=True, **SHARED)
settings.register_profile("long", max_examples=800, derandomize=False, print_blob=True, **SHARED)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
