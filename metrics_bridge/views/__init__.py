"""metrics_bridge's pages by concept: metric runs (runs.py), dashboards (dashboards.py), the pairs behind an agreement
cell (agreement_pairs.py), the benchmark table (benchmark.py), annotation agreement (annotation.py), model captioning
(captioning.py) and system submissions (submissions.py); computation.py is what the dashboard pages share."""
