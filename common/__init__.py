"""The lowest layer: plain Python that every app (and the plain-Python metric code) may import.

It imports no app and no project module (`lint-imports` checks it): structured logs (`structured_log`),
the temporal-relation rules of annotation graphs (`graph_rules`), the broker names (`broker`).
"""
