"""``ucs cluster``: discretise a saved embedding matrix into latent cluster ids."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ucs import defaults as D
from ucs.commands._inputs import default_note as _d
from ucs.commands._inputs import renamed_option, set_options


def cluster_cmd(
    embeddings: Path = typer.Argument(
        ..., exists=True, dir_okay=False, help="Embedding matrix (.npy, n × d)."
    ),
    out: Path = typer.Argument(..., file_okay=False, help="Directory for the fitted clusterer and labels."),
    method: str = typer.Option(
        D.DEFAULT_COVERAGE["clusterer"]["method"],
        help="kmeans | dict_dbscan (the paper's) | dbscan | dict_argmax | dict_kmeans | dict_hdbscan | auto.",
    ),
    n_clusters: Optional[int] = typer.Option(
        None, "--n-clusters", help="k of the k-means methods (default ⌈√N⌉)."
    ),
    labels: Optional[Path] = typer.Option(
        None,
        "--labels",
        exists=True,
        dir_okay=False,
        help="Gold labels (.npy, one per row) to score the clusters (AMI, purity).",
    ),
    dbscan_q: Optional[float] = typer.Option(
        None, "--dbscan-q", help=f"Quantile of k-NN distances used as DBSCAN eps{_d('DBSCAN_Q')}."
    ),
    dbscan_k: Optional[int] = typer.Option(
        None, "--dbscan-k", help=f"k of the k-NN distances{_d('DBSCAN_K')}."
    ),
    old_q: Optional[float] = typer.Option(None, "--q", hidden=True, help="Deprecated: --dbscan-q."),
    old_k: Optional[int] = typer.Option(None, "--k", hidden=True, help="Deprecated: --dbscan-k."),
    min_samples: Optional[int] = typer.Option(None, help=f"DBSCAN min_samples{_d('MIN_SAMPLES')}."),
    pca_dim: Optional[int] = typer.Option(None, help=f"PCA dimension, 0 disables PCA{_d('PCA_DIM')}."),
    n_atoms: Optional[int] = typer.Option(None, help=f"Dictionary atoms{_d('N_ATOMS')}."),
    coding: Optional[str] = typer.Option(None, help=f"ridge | omp{_d('CODING')}."),
    standardize: bool = typer.Option(False, help="Standardise features before PCA."),
    backend: str = typer.Option(D.BACKEND, help="fast | sklearn"),
    seed: Optional[int] = typer.Option(0, help="Random seed."),
) -> None:
    """Fit a LatentClusterer on EMBEDDINGS and save it (npz + json) with a cluster report."""
    from ucs.clustering import LatentClusterer
    from ucs.commands._inputs import read_matrix
    from ucs.utils.io import atomic_write_text, load_npy

    dbscan_q = renamed_option(dbscan_q, old_q, "--q", "--dbscan-q")
    dbscan_k = renamed_option(dbscan_k, old_k, "--k", "--dbscan-k")
    E = read_matrix(embeddings, "EMBEDDINGS", min_rows=2)
    y = None if labels is None else load_npy(labels)
    if y is not None and y.shape != (E.shape[0],):
        raise ValueError(
            f"--labels has shape {y.shape}; give one label per row of EMBEDDINGS, shape ({E.shape[0]},)"
        )
    settings = set_options(
        method=method,
        dbscan_q=dbscan_q,
        dbscan_k=dbscan_k,
        min_samples=min_samples,
        pca_dim=pca_dim,
        n_atoms=n_atoms,
        coding=coding,
    )
    if settings.get("pca_dim") == 0:
        settings["pca_dim"] = None
    c = LatentClusterer(
        **settings,
        standardize=standardize,
        backend=backend,
        n_clusters=n_clusters,
        random_state=seed,
    )
    c.fit(E)  # a ValueError names the setting; the CLI's error policy prints it with its option
    c.save(out)
    health = c.health(y)
    md = f"- health: {health.line()}\n" + c.report(y=y).to_markdown()
    atomic_write_text(out / "report.md", md + "\n")
    chosen = f", chosen by auto: {c.auto_choice_.chosen}" if c.auto_choice_ is not None else ""
    typer.echo(
        f"{c.n_clusters_} clusters over {E.shape[0]} items ({c.chosen_method_}, eps={c.eps_}{chosen}); saved "
        f"to {out}"
    )
    typer.echo(md)
    if health.warning():
        typer.echo(f"warning: {health.warning()}", err=True)


def register(app: typer.Typer) -> None:
    app.command("cluster")(cluster_cmd)
