"""``ucs coverage``: the coverage report of a subset under every estimator, side by side."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import numpy as np
import typer

from ucs import defaults as D

#: Worked examples of SPEC §3: ten demonstrations, cluster multiplicities as given.
DEMO_SUBSETS: dict[str, list[int]] = {
    "ten singletons": [1] * 10,
    "one pair + eight singletons": [2] + [1] * 8,
    "one triple + seven singletons": [3] + [1] * 7,
    "five of a kind + five singletons": [5] + [1] * 5,
    "nine of one cluster + one other": [9, 1],
    "eight of one cluster + two others": [8, 1, 1],
}


def read_cluster_ids(path: Path) -> np.ndarray:
    """Read cluster ids from ``.npy`` or a text file with one id per line."""
    from ucs.estimators import validate_cluster_ids

    if not path.exists():
        raise typer.BadParameter(f"file {path} does not exist", param_hint="--clusters")
    try:
        if path.suffix == ".npy":
            arr = np.load(path, allow_pickle=False)
        else:
            lines = [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines()]
            arr = np.array([float(x) for x in lines if x], dtype=np.float64)
    except ValueError as exc:
        raise typer.BadParameter(
            f"{path} is not a .npy array or a file of one integer id per line: {exc}", param_hint="--clusters"
        )
    try:
        return validate_cluster_ids(arr.reshape(-1) if arr.ndim == 0 else arr, name="--clusters")
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--clusters")


def parse_subset(text: str, n_items: int) -> np.ndarray:
    """Parse ``"i,j,k"`` into validated pool indices."""
    from ucs.estimators import validate_subset

    try:
        values = [int(tok) for tok in text.replace(" ", "").split(",") if tok]
    except ValueError:
        raise typer.BadParameter(
            f"expected comma-separated integers such as 0,5,9; got {text!r}", param_hint="--subset"
        )
    try:
        return validate_subset(values, n_items, name="--subset", allow_empty=False)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--subset")


def coverage_table(
    cluster_ids: np.ndarray,
    subset: np.ndarray,
    estimators: list[str],
    design: str,
    t: float,
    bin_size: int,
    alpha: float,
    integer: bool,
) -> list[dict]:
    """One report row per estimator for ``subset``."""
    from ucs.estimators import UnseenCoverage

    rows = []
    for name in estimators:
        params: dict = {"t": t}
        if name == "paper":
            params.update(bin_size=bin_size, alpha=alpha, integer=integer)
        rep = UnseenCoverage(name, design=design, **params).fit(cluster_ids).report(subset)
        rows.append(rep.to_dict())
    return rows


def _print_table(title: str, rows: list[dict]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for col in ("estimator", "n", "K_seen", "Û", "Φ"):
        table.add_column(col, justify="right" if col != "estimator" else "left")
    for r in rows:
        table.add_row(r["estimator"], str(r["n"]), str(r["k_seen"]), f"{r['unseen']:.4g}", f"{r['phi']:.4g}")
    console = Console()
    console.print(table)
    spec = rows[0]["spectrum"] if rows else []
    console.print(
        "spectrum f_s (s = 1, 2, …): " + ", ".join(f"f_{s}={v}" for s, v in enumerate(spec) if s and v)
    )


def coverage_cmd(
    cluster_ids: Optional[Path] = typer.Option(
        None, "--clusters", help="Cluster ids: .npy, or a text file with one id per line."
    ),
    subset: Optional[str] = typer.Option(None, "--subset", help="Comma-separated pool indices, e.g. 0,5,9."),
    estimator: str = typer.Option("all", "--estimator", help="Estimator name(s), comma-separated, or 'all'."),
    design: Optional[str] = typer.Option(
        None, "--design", help="full (default) | seen_only | unseen_only | ratio."
    ),
    t: float = typer.Option(D.T, "--t", help="Expansion factor t = m/|S|."),
    bin_size: int = typer.Option(D.BIN_SIZE, "--bin-size", "-M", help="Truncation M of the paper estimator."),
    alpha: float = typer.Option(D.ALPHA, "--alpha", help="Offset α in [1, 2] of the paper estimator."),
    integer: bool = typer.Option(
        False, "--integer", help="Floor the paper estimator (authors' code parity)."
    ),
    demo: bool = typer.Option(False, "--demo", help="Show the worked ten-demonstration examples of SPEC §3."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of tables."),
) -> None:
    """Print K_seen, Û, Φ and the spectrum of a subset under every estimator side by side."""
    from ucs import defaults
    from ucs.estimators import DESIGNS, ESTIMATORS, resolve_estimator_name

    design = defaults.DESIGN if design is None else design
    if design not in DESIGNS:
        raise typer.BadParameter(f"must be one of {', '.join(DESIGNS)}", param_hint="--design")
    try:
        names = (
            list(ESTIMATORS)
            if estimator == "all"
            else [resolve_estimator_name(x) for x in estimator.split(",")]
        )
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--estimator")
    cases: list[tuple[str, np.ndarray, np.ndarray]] = []
    if demo:
        if cluster_ids is not None or subset is not None:
            raise typer.BadParameter("--demo takes no --clusters/--subset", param_hint="--demo")
        for title, mult in DEMO_SUBSETS.items():
            ids = np.repeat(np.arange(len(mult)), mult)
            cases.append((title, ids, np.arange(ids.size)))
    else:
        if cluster_ids is None or subset is None:
            raise typer.BadParameter(
                "give --clusters FILE and --subset i,j,k (or --demo)", param_hint="--clusters"
            )
        ids = read_cluster_ids(cluster_ids)
        cases.append((f"subset of {cluster_ids.name}", ids, parse_subset(subset, ids.size)))
    try:
        results = [
            (title, coverage_table(ids, sub, names, design, t, bin_size, alpha, integer))
            for title, ids, sub in cases
        ]
    except ValueError as exc:
        raise typer.BadParameter(str(exc))
    if as_json:
        typer.echo(json.dumps([{"case": title, "rows": rows} for title, rows in results], indent=2))
        return
    for title, rows in results:
        _print_table(title, rows)


def register(app: typer.Typer) -> None:
    app.command("coverage")(coverage_cmd)
