"""What the evaluation pages and reports show from stored scores and human judgements: agreement, calibration and
transfer, the benchmark, the leaderboard, THumBS, sensitivity, annotation agreement, the dashboards' cache, and the
run of a dataset that stores all of it."""
