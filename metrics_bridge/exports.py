"""The dashboards' downloads: CSV and XLSX writers of the agreement table, the leaderboard and the benchmark table.

The pages' downloads and the report commands (`leaderboard`, `metric_benchmark`) write the same files with them.
"""

import csv
import io

from metrics_bridge.services.evaluation import transfer
from metrics_bridge.services.evaluation.dashboards import COLUMNS


def is_marked_best(intervals: dict, name: str, column: str) -> bool:
    """Bold only where the best value's interval separates it from the next (agreement/intervals.py)."""
    separation = intervals["best"].get(column)
    return bool(separation and separation["best"] == name and separation["separable"])


def _interval_columns(columns) -> list[str]:
    return [f"{column} 95% {end}" for column in columns for end in ("low", "high")]


def _interval_cells(intervals: dict, name: str, columns) -> list:
    return [bound for column in columns for bound in intervals["intervals"][name].get(column, (None, None))]


def agreement_csv(table: dict, headline: dict | None = None) -> str:
    """The table, then each figure's 95 % bootstrap interval (over clips) in columns of their own; led by CALIBRATED
    trained elsewhere and in-study (`headline`), or a row saying why a figure is missing."""
    columns = table.get("columns", COLUMNS)
    intervals = table["intervals"]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["metric", *columns, *_interval_columns(columns)])
    writer.writerow(["pairs (denominator)", *(table["pairs"].get(c, "") for c in columns), *[""] * 2 * len(columns)])
    for row in transfer.headline_rows(headline, columns) if headline else []:
        writer.writerow(["" if value is None else value for value in row])
    for name, row in table["metrics"].items():
        cells = [*(row.get(c) for c in columns), *_interval_cells(intervals, name, columns)]
        writer.writerow([name, *("" if value is None else value for value in cells)])
    return out.getvalue()


def agreement_xlsx(table: dict) -> bytes:
    from openpyxl import Workbook
    from openpyxl.styles import Font

    workbook = Workbook()
    sheet = workbook.active
    sheet.title = "Agreement"
    sheet.append([f"Agreement with human judgements: {table['dataset']} (% of pairs with a human preference)"])
    columns = table.get("columns", COLUMNS)
    sheet.append(["metric", *columns])
    sheet.append(["pairs (denominator)", *(table["pairs"].get(c) for c in columns)])
    for name, row in table["metrics"].items():
        sheet.append([name, *(row.get(c) for c in columns)])
        for index, column in enumerate(columns, start=2):
            if is_marked_best(table["intervals"], name, column):
                sheet.cell(row=sheet.max_row, column=index).font = Font(bold=True)
    intervals = workbook.create_sheet("95% intervals")
    intervals.append(
        [
            f"95% percentile bootstrap over clips ({table['intervals']['resamples']} resamples, seed "
            f"{table['intervals']['seed']}); a best value is in bold only when separable from the next"
        ]
    )
    intervals.append(["metric", *_interval_columns(columns)])
    for name in table["metrics"]:
        intervals.append([name, *_interval_cells(table["intervals"], name, columns)])
    for cell in sheet[2]:
        cell.font = Font(bold=True)
    if table.get("unavailable"):
        unavailable = workbook.create_sheet("Unavailable")
        unavailable.append(["metric", "reason"])
        for name, reason in table["unavailable"].items():
            unavailable.append([name, reason])
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


HUMAN_COLUMNS = ("pairwise_win_rate", "pairwise_votes", "thumbs_overall", "thumbs_ratings")


def leaderboard_csv(report: dict) -> str:
    """One row per system: system, captions, each metric, the human columns; then one kendall_tau row."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    metrics = list(report["rank_agreement"])
    writer.writerow(["system", "captions", *metrics, *HUMAN_COLUMNS])
    for row in report["systems"]:
        writer.writerow(
            [
                row["system"],
                row["captions"],
                *(_cell(row["metrics"][m]) for m in metrics),
                *(_cell(row["human"][c]) for c in HUMAN_COLUMNS),
            ]
        )
    writer.writerow(
        ["kendall_tau_vs_win_rate", "", *(_cell(report["rank_agreement"][m]["kendall_tau"]) for m in metrics)]
    )
    return out.getvalue()


def _cell(value) -> str:
    if value is None:
        return ""
    return repr(value) if isinstance(value, float) else str(value)


def published_records(cell: dict | None) -> list[dict]:
    """The published records shown beside one of our benchmark figures."""
    return (cell or {}).get("published", [])


def benchmark_csv(table: dict) -> str:
    """One line per (metric, dataset) with our figures and each published record."""
    columns = ["HC", "HI", "HM", "MM", "HALLU", "total", "f1"]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(
        [
            "metric",
            "dataset",
            "protocol",
            "pairs",
            *columns,
            "interval_low",
            "interval_high",
            "published_metric",
            "published_total",
            "published_source",
        ]
    )
    protocols = {d["name"]: d for d in table["datasets"]}
    for name in [*table["metrics"], *table["records_only"]]:
        for dataset_name, cell in table["cells"].get(name, {}).items():
            ours = cell.get("ours", {})
            counted = ours.get("pairs", protocols[dataset_name]["pairs"]["total"])
            base = [name, dataset_name, protocols[dataset_name]["protocol"], counted]
            figures = ["" if ours.get(c) is None else ours[c] for c in columns]
            figures += list(ours.get("interval") or ["", ""])
            published = published_records(cell) or [{}]
            for record in published:
                writer.writerow(
                    [
                        *base,
                        *figures,
                        record.get("metric", ""),
                        (record.get("figures") or {}).get("total", ""),
                        record.get("source", ""),
                    ]
                )
    return out.getvalue()
