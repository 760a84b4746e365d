"""metrics_bridge's business rules by concept: metric runs and their workers (runs/), what the evaluation pages and
reports show (evaluation/), and model captioning through provider APIs (captioning/). evaluation/ and captioning/
build on runs/; captioning/ also on evaluation/ (its confirmation campaign asks for the leaderboard's best system)."""
