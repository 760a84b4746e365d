"""metrics_bridge's read-only queries: corpus and judgement rows as the plain data scoring code takes
(scoring_inputs.py), stored results the evaluation pages show (evaluation.py), and what the run page says about
a metric run (runs.py)."""
