"""The plain-Python metric library (no Django import anywhere below): scorers, the registry, system values.

`evaluate(candidates, references, metrics=[...])` scores captions on their own, as in a notebook (evaluation.py).
"""

from .evaluation import Evaluation, evaluate

__all__ = ["Evaluation", "evaluate"]
