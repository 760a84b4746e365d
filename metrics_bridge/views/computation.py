"""How a stored dashboard part's computation by the workers is going, as the pages that show such parts render it."""

from metrics_bridge.services.evaluation.dashboard_cache import MAX_ATTEMPTS


def computation_context(state, run_active: bool = False) -> dict:
    """How a part's computation is going, for templates/metrics_bridge/_computation.html."""
    computation = state.computation
    if state.fresh:
        return {"fresh": True, "computed_at": state.computed_at}
    waiting = "after the run" if run_active and state.payload is not None else "asking"
    return {
        "fresh": False,
        "computed_at": state.computed_at,
        "phase": computation.phase if computation else waiting,
        "requested_at": computation.requested_at if computation else None,
        "started_at": computation.started_at if computation else None,
        "attempts": computation.attempts if computation else 0,
        "max_attempts": MAX_ATTEMPTS,
        "error": computation.error if computation else "",
        "given_up": bool(computation and computation.given_up),
    }
