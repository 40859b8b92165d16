"""The Points of `harness history` per commit, with pandas.  Pure: values in, a DataFrame out.

    aggregate(points, metrics, order, ordered_by=, source=) -> History

Comparable points only: those measured on the gold set of the newest point (a metric on another
gold set is another quantity); the others are left out and counted in the notes.  Per commit:

- a metric, from run records: each query's value averaged over the commit's records (each
  already a mean over its repeats), then the mean over queries, with the Student t interval
  over queries (mean +- t(0.975, n - 1) * sd / sqrt(n)); queries vary far more than repeats,
  and a query's repeats are inside its value.  From comparisons: the mean of the sides' means,
  no interval (their per-query values are not saved).
- latency: the mean over boots of each boot's p50 (ms), with the t interval over boots: boot
  to boot variance is inside it.  One boot: no interval.
- commit order: `order` (git's, oldest first) when given, commits git does not list after them;
  else the time of the first measurement.  `when` breaks ties.
- the commit graph: with `parents` (git's), each row's nearest measured ancestors and its lane
  (`harness.history.graph`), so that the page draws siblings as a fork, not one line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.history.graph import measured_graph
from harness.history.points import Point
from harness.verdict.distributions import t_quantile

CONFIDENCE = 0.95
LATENCY = "latency p50 ms"


@dataclass(frozen=True)
class Drawn:
    """A change `harness watch` found, drawn on its series' panel of the page: the span from the
    commit `before` to `after` (shas), its words, and whether it was confirmed and bad."""

    series: str
    before: str
    after: str
    label: str
    confirmed: bool
    regression: bool


@dataclass(frozen=True, eq=False)
class History:
    """One row per commit, in commit order: `commit` (sha8), `sha`, `refs`, `records`,
    `repeats`, `queries`, then per metric (and LATENCY) its value, `<name> low` and
    `<name> high` (NaN where no interval is known)."""

    table: pd.DataFrame
    metrics: tuple[str, ...]
    source: str
    ordered_by: str
    notes: tuple[str, ...]
    # The commit graph of the rows (`harness.history.graph`), when git gave the parents: per
    # row, the rows it descends from and its lane.  Empty: the rows are one sequence.
    links: tuple[tuple[int, ...], ...] = ()
    lanes: tuple[int, ...] = ()
    changes: tuple[Drawn, ...] = ()  # `harness watch`'s findings, drawn on the page


def _interval(grouped: pd.DataFrame, name: str) -> pd.DataFrame:
    """mean, low, high from a frame with mean, sd and n columns."""
    n = grouped["n"].to_numpy(dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        q = np.array([t_quantile(0.5 + CONFIDENCE / 2, int(k) - 1) if k > 1 else np.nan for k in n])
        half = q * grouped["sd"].to_numpy(dtype=np.float64) / np.sqrt(n)
    mean = grouped["mean"].to_numpy(dtype=np.float64)
    return pd.DataFrame(
        {name: mean, f"{name} low": mean - half, f"{name} high": mean + half},
        index=grouped.index,
    )


def _stats(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    out = frame.groupby(keys)["value"].agg(["mean", "std", "count"])
    return out.rename(columns={"std": "sd", "count": "n"})


def aggregate(
    points: Sequence[Point],
    metrics: Sequence[str],
    order: Sequence[str] | None = None,
    *,
    ordered_by: str = "time of the first measurement",
    source: str = "run records",
    parents: Mapping[str, Sequence[str]] | None = None,
) -> History:
    """Per commit, each metric and latency with their intervals (see the module docstring)."""
    if not points:
        raise ValueError("no points to aggregate")
    newest = max(points, key=lambda p: p.when)
    kept = [p for p in points if p.gold_hash == newest.gold_hash]
    notes = []
    if len(kept) < len(points):
        notes.append(
            f"{len(points) - len(kept)} measurements on another gold set than the newest "
            f"({newest.gold_hash[:12]}) left out"
        )
    meta = pd.DataFrame(
        [{"sha": p.sha, "ref": p.ref, "when": p.when, "repeats": p.repeats} for p in kept]
    )
    table = meta.groupby("sha").agg(
        refs=("ref", lambda refs: ", ".join(sorted(set(refs)))),
        records=("ref", "size"),
        repeats=("repeats", "sum"),
        first=("when", "min"),
    )
    per_query = pd.DataFrame(
        [
            {"sha": p.sha, "metric": m, "query": q, "value": v}
            for p in kept
            for m, values in p.per_query.items()
            for q, v in values.items()
        ],
        columns=["sha", "metric", "query", "value"],
    )
    means = pd.DataFrame(
        [{"sha": p.sha, "metric": m, "value": v} for p in kept for m, v in p.means.items()],
        columns=["sha", "metric", "value"],
    )
    queries = (
        per_query.groupby("sha")["query"].nunique()
        if not per_query.empty
        else pd.Series(dtype="int64")
    )
    table["queries"] = queries.reindex(table.index).fillna(0).astype(int)
    for metric in metrics:
        scored = per_query[per_query["metric"] == metric]
        if not scored.empty:
            by_query = scored.groupby(["sha", "query"])["value"].mean().reset_index()
            table = table.join(_interval(_stats(by_query, ["sha"]), metric))
        else:
            said = means[means["metric"] == metric]
            values = said.groupby("sha")["value"].mean().rename(metric)
            table = table.join(values)
            table[f"{metric} low"] = np.nan
            table[f"{metric} high"] = np.nan
    latency = pd.DataFrame(
        [{"sha": p.sha, "value": v} for p in kept for v in p.latency_p50s],
        columns=["sha", "value"],
    )
    if not latency.empty:
        table = table.join(_interval(_stats(latency, ["sha"]), LATENCY))
    else:
        table[LATENCY] = table[f"{LATENCY} low"] = table[f"{LATENCY} high"] = np.nan
    position = {sha: i for i, sha in enumerate(order or ())}
    table["_known"] = [0 if sha in position else 1 for sha in table.index]
    table["_position"] = [position.get(sha, 0) for sha in table.index]
    table = table.sort_values(["_known", "_position", "first"])
    table = table.drop(columns=["_known", "_position"])
    unknown = sum(sha not in position for sha in table.index) if order is not None else 0
    if unknown:
        notes.append(f"{unknown} commits git does not list here come last, by time measured")
    table = table.reset_index()
    table.insert(0, "commit", table["sha"].str[:8])
    links, lanes = measured_graph(parents, table["sha"].to_list()) if parents else ((), ())
    return History(
        table=table.drop(columns=["first"]),
        metrics=tuple(metrics),
        source=source,
        ordered_by=ordered_by,
        notes=tuple(notes),
        links=links,
        lanes=lanes,
    )
