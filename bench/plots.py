"""Plots of `outcomes bench` results files, as PNG images (docs/benchmarks.md shows them).

    .venv/bin/python -m outcomes.bench.plots bench/results/AFTER.json \
        --before bench/results/BEFORE.json \
        --out docs/img

Three images, each drawn from the results files alone (nothing is measured here):
- `bench-throughput.png`: end-to-end events/s against run size (the per-event-cost
  phases), the mixed throughput phase marked at its mean run size;
- `bench-latency.png`: latency percentiles at half load, in all and split into the
  worker's and the sink's parts;
- `bench-cpu-per-revision.png`: CPU per account revision by process and thread, in the
  throughput and half-load phases, the pure fold's CPU per revision beside them.
With `--before`, each image puts the earlier run beside the later one.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display

import matplotlib.pyplot as plt  # after choosing the backend

Results = Mapping[str, Any]


def load(path: Path) -> Results:
    data: Results = json.loads(path.read_text())
    return data


def label(results: Results, name: str) -> str:
    return f"{name} ({results['started_at'][:16].replace('T', ' ')} UTC)"


def throughput_by_size(runs: Sequence[tuple[str, Results]], out: Path) -> Path:
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, results in runs:
        sizes = [
            (int(size), float(phase["events_per_s"]))
            for size, phase in results["per_event_cost"].items()
            if phase["complete"]
        ]
        line = ax.plot(*zip(*sizes, strict=True), marker="o", label=label(results, name))
        tput = results["throughput"]
        ax.scatter(
            [tput["events"] / tput["runs"]],
            [tput["events_per_s"]],
            marker="*",
            s=150,
            color=line[0].get_color(),
            label=f"{name}: mixed runs (throughput phase)",
        )
    ax.set_xscale("log")
    ax.set_xlabel("events per run")
    ax.set_ylabel("end-to-end events/s")
    ax.set_title("Throughput against run size (outcomes bench)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return save(fig, out / "bench-throughput.png")


def latency_percentiles(runs: Sequence[tuple[str, Results]], out: Path) -> Path:
    quantiles = ("p50", "p90", "p99", "max")
    series: list[tuple[str, list[float]]] = []
    for name, results in runs:
        lat = results["latency"]
        series.append((f"{name}: all", [float(lat["latency_s"][q]) for q in quantiles]))
        for part, figures in lat.get("latency_parts_s", {}).items():
            series.append((f"{name}: {part}", [float(figures[q]) for q in quantiles]))
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / max(1, len(series))
    for index, (name, values) in enumerate(series):
        xs = [q + index * width for q in range(len(quantiles))]
        ax.bar(xs, values, width=width, label=name)
    ax.set_xticks([q + 0.4 - width / 2 for q in range(len(quantiles))], list(quantiles))
    ax.axhline(1.0, color="black", linestyle="--", linewidth=1, label="target: p99 < 1 s")
    ax.set_ylabel("seconds")
    ax.set_title("Latency at half load: sent -> queryable in ClickHouse")
    ax.legend(fontsize=7, ncol=2)
    ax.grid(True, axis="y", alpha=0.3)
    return save(fig, out / "bench-latency.png")


def cpu_per_revision(runs: Sequence[tuple[str, Results]], out: Path) -> Path:
    """Stacked bars: one per run and phase, one segment per process and thread name."""
    bars: list[tuple[str, dict[str, float]]] = []
    for name, results in runs:
        fold = results.get("pure_fold")
        for phase in ("throughput", "latency"):
            data = results[phase]
            revisions = max(1, int(data["revisions"]))
            segments = {
                f"{process} {thread}": seconds * 1e6 / revisions
                for process, threads in data.get("cpu_seconds_by_thread", {}).items()
                for thread, seconds in threads.items()
                if seconds * 1e6 / revisions >= 5.0
            }
            if not segments:  # a results file from before per-thread seconds were kept
                segments = {
                    f"{process} (all)": float(us) * data["events"] / revisions
                    for process, us in data["cpu_us_per_event"].items()
                }
            bars.append((f"{name}\n{phase}", segments))
        if fold is not None and fold.get("revisions"):
            per_revision = float(fold["cpu_seconds"]) * 1e6 / int(fold["revisions"])
            bars.append((f"{name}\npure fold", {"pure fold (replay's work)": per_revision}))
    names = sorted({segment for _, segments in bars for segment in segments})
    fig, ax = plt.subplots(figsize=(max(7, 1.4 * len(bars)), 5))
    bottoms = [0.0] * len(bars)
    for segment in names:
        values = [segments.get(segment, 0.0) for _, segments in bars]
        ax.bar(range(len(bars)), values, bottom=bottoms, label=segment)
        bottoms = [b + v for b, v in zip(bottoms, values, strict=True)]
    ax.set_xticks(range(len(bars)), [title for title, _ in bars], fontsize=8)
    ax.set_ylabel("CPU microseconds per account revision")
    ax.set_title("CPU per revision by process and thread")
    ax.legend(fontsize=7)
    ax.grid(True, axis="y", alpha=0.3)
    return save(fig, out / "bench-cpu-per-revision.png")


def save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="an `outcomes bench` results file")
    parser.add_argument("--before", type=Path, help="an earlier results file to compare")
    parser.add_argument("--out", type=Path, default=Path("docs/img"), help="image directory")
    args = parser.parse_args(argv)
    runs: list[tuple[str, Results]] = []
    if args.before is not None:
        runs.append(("before", load(args.before)))
    runs.append(("after" if args.before is not None else "run", load(args.results)))
    args.out.mkdir(parents=True, exist_ok=True)
    for path in (
        throughput_by_size(runs, args.out),
        latency_percentiles(runs, args.out),
        cpu_per_revision(runs, args.out),
    ):
        print(path)


if __name__ == "__main__":
    main()
