"""``ucs distributed …``: the heavy stages (embed, cluster, select) on a local process or a Ray cluster."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from ucs import defaults as D
from ucs.commands._inputs import default_note as _d
from ucs.commands._inputs import executor_from_options, renamed_option, set_options
from ucs.selectors.factory import BASE_SELECTORS, NO_UCS_FORM, selector_class

#: Selectors run with the UCS prior over query batches (MDL scores with the driver's LM, which is not
#: shipped).
_SELECT_METHODS = tuple(
    b for b in BASE_SELECTORS if b not in NO_UCS_FORM and not selector_class(b).needs_scorer
)

_EXECUTOR_HELP = "local (default, in-process) or ray"
_ADDRESS_HELP = (
    "Ray cluster: 'auto' (ray start on this machine), 'ray://host:10001', or empty for a private local one."
)


def _pool(path: Path, param: str, pool_cls, lazy: bool = False):
    """Pool embeddings from a ``.npy`` matrix or a pool manifest ``.json`` (``lazy``: the manifest's
    shards)."""
    from ucs.commands._inputs import read_json, read_matrix

    if path.suffix != ".json":
        return read_matrix(path, param, min_rows=2)
    read_json(path, param)  # a clear error for a damaged manifest
    try:
        pool = pool_cls.from_manifest(path)
    except (KeyError, TypeError) as exc:
        raise ValueError(
            f"{param}: {path} is not a pool manifest written by 'ucs distributed embed' (missing {exc})"
        ) from None
    return pool if lazy else pool.load()


def embed_cmd(
    texts: Path = typer.Argument(
        ..., exists=True, dir_okay=False, help="UTF-8 file, one pool text per line."
    ),
    out_dir: Path = typer.Option(
        ..., help="Cache directory for the shards (shared storage on a multi-node cluster)."
    ),
    model: str = typer.Option("all-minilm-l6-v2", help="Sentence-transformers retrieval embedder to load."),
    shard_size: int = typer.Option(D.TEXT_SHARD_SIZE, help="Texts per shard."),
    executor: str = typer.Option("local", help=_EXECUTOR_HELP),
    address: Optional[str] = typer.Option(None, help=_ADDRESS_HELP),
    num_cpus: Optional[int] = typer.Option(None, help="CPUs of a private local Ray cluster."),
    num_gpus: float = typer.Option(0.0, help="GPUs per embedder replica (1 = one replica per GPU)."),
) -> None:
    """Embed TEXTS shard by shard (resumable) and print the pool manifest path."""
    import functools

    from ucs.distributed import embed_pool
    from ucs.embedding import load_retrieval_embedder

    lines = texts.read_text(encoding="utf-8").splitlines()
    with executor_from_options(executor, address, num_cpus) as ex:
        pool = embed_pool(
            functools.partial(load_retrieval_embedder, model),
            lines,
            ex,
            shard_size,
            out_dir,
            num_gpus=num_gpus,
        )
    typer.echo(
        f"{pool.n} texts in {pool.n_shards} shards ({pool.n_embedded} embedded, {pool.n_skipped} reused); "
        f"manifest: {pool.manifest}"
    )


def cluster_cmd(
    embeddings: Path = typer.Argument(
        ...,
        exists=True,
        dir_okay=False,
        help="Embeddings: a .npy (n × d) or a pool manifest .json from 'embed'.",
    ),
    out: Path = typer.Argument(..., file_okay=False, help="Directory for labels.npy and summary.json."),
    dbscan_q: Optional[float] = typer.Option(
        None, "--dbscan-q", help=f"Quantile of k-NN distances used as DBSCAN eps{_d('DBSCAN_Q')}."
    ),
    dbscan_k: Optional[int] = typer.Option(
        None, "--dbscan-k", help=f"k of the k-NN distances{_d('DBSCAN_K')}."
    ),
    old_q: Optional[float] = typer.Option(None, "--q", hidden=True, help="Deprecated: --dbscan-q."),
    old_k: Optional[int] = typer.Option(None, "--k", hidden=True, help="Deprecated: --dbscan-k."),
    pca_dim: Optional[int] = typer.Option(None, help=f"PCA dimension, 0 disables PCA{_d('PCA_DIM')}."),
    n_atoms: Optional[int] = typer.Option(None, help=f"Dictionary atoms{_d('N_ATOMS')}."),
    coding: Optional[str] = typer.Option(None, help=f"ridge | omp{_d('CODING')}."),
    method: Optional[str] = typer.Option(
        None, help=f"dict_dbscan | dbscan | dict_argmax{_d('PAPER_CLUSTERING_METHOD')}."
    ),
    knn: str = typer.Option(D.KNN, help="exact | hnsw | ivf (approximate ones need faiss)."),
    shard_size: int = typer.Option(D.ROW_SHARD_SIZE, help="Rows per shard for a .npy input."),
    fit_sample: int = typer.Option(D.FIT_SAMPLE_SIZE, help="Rows the PCA and dictionary are fitted on."),
    seed: int = typer.Option(0, help="Random seed."),
    executor: str = typer.Option("local", help=_EXECUTOR_HELP),
    address: Optional[str] = typer.Option(None, help=_ADDRESS_HELP),
    num_cpus: Optional[int] = typer.Option(None, help="CPUs of a private local Ray cluster."),
) -> None:
    """Cluster a (sharded) pool; writes labels.npy and summary.json to OUT."""
    from ucs.distributed import PoolEmbeddings, cluster_pool
    from ucs.utils.io import atomic_save_npy, atomic_write_json

    dbscan_q = renamed_option(dbscan_q, old_q, "--q", "--dbscan-q")
    dbscan_k = renamed_option(dbscan_k, old_k, "--k", "--dbscan-k")
    source = _pool(embeddings, "EMBEDDINGS", PoolEmbeddings, lazy=True)
    settings = set_options(
        method=method, dbscan_q=dbscan_q, dbscan_k=dbscan_k, pca_dim=pca_dim, n_atoms=n_atoms, coding=coding
    )
    if settings.get("pca_dim") == 0:
        settings["pca_dim"] = None
    with executor_from_options(executor, address, num_cpus) as ex:
        res = cluster_pool(
            source,
            None,
            ex,
            shard_size=shard_size,
            fit_sample_size=fit_sample,
            knn=knn,
            random_state=seed,
            **settings,
        )
    atomic_save_npy(out / "labels.npy", res.labels_)
    summary = {
        "n": int(res.labels_.size),
        "n_clusters": res.n_clusters_,
        "eps": res.eps_,
        "knn_exact": res.knn_exact_,
        "timings": res.timings_,
        "executor": executor,
        "params": dict(res.params),
    }
    atomic_write_json(out / "summary.json", summary)
    typer.echo(json.dumps({k: summary[k] for k in ("n", "n_clusters", "eps")}))


def select_cmd(
    pool_embeddings: Path = typer.Option(
        ..., "--pool", exists=True, help="Pool embeddings .npy (N, d) or pool manifest .json."
    ),
    query_embeddings: Path = typer.Option(
        ..., "--queries", exists=True, help="Query embeddings .npy (Q, d)."
    ),
    cluster_ids: Path = typer.Option(..., exists=True, help="Cluster ids .npy (N,)."),
    method: str = typer.Option(D.METHOD, help=" | ".join(_SELECT_METHODS)),
    lam: Optional[float] = typer.Option(None, help=f"UCS weight λ, 0 = the base selector{_d('LAM')}."),
    estimator: str = typer.Option(
        D.DEFAULT_COVERAGE["prior"]["estimator"], help="Unseen estimator of the UCS prior."
    ),
    budget: int = typer.Option(10, help="Demonstrations per query."),
    batch_size: int = typer.Option(1024, help="Queries per task."),
    out: Path = typer.Option(Path("selection.json"), help="Output .json or .csv."),
    executor: str = typer.Option("local", help=_EXECUTOR_HELP),
    address: Optional[str] = typer.Option(None, help=_ADDRESS_HELP),
    num_cpus: Optional[int] = typer.Option(None, help="CPUs of a private local Ray cluster."),
) -> None:
    """Select demonstrations for every query, query batches in parallel."""
    from ucs.commands._inputs import check_out_suffix, read_ids, read_matrix
    from ucs.distributed import PoolEmbeddings, select_queries
    from ucs.selectors import UCSPrior
    from ucs.selectors.factory import make_selector

    if method not in _SELECT_METHODS:
        raise typer.BadParameter(
            f"must be one of {', '.join(_SELECT_METHODS)}; got {method!r}", param_hint="--method"
        )
    check_out_suffix(out, "--out", (".json", ".csv"))
    E = _pool(pool_embeddings, "--pool", PoolEmbeddings)
    ids = read_ids(cluster_ids, "--cluster-ids", n=E.shape[0])
    Q = read_matrix(query_embeddings, "--queries", dim=E.shape[1])
    prior = UCSPrior.build(ids, estimator=estimator, **set_options(lam=lam))
    sel = make_selector(method, prior=prior).fit(E, cluster_ids=ids)
    with executor_from_options(executor, address, num_cpus) as ex:
        selection = select_queries(sel, Q, ex, batch_size, budget=budget)
    if out.suffix == ".csv":
        selection.to_csv(str(out))
    else:
        selection.to_json(str(out))
    typer.echo(f"{type(sel).__name__}: {selection.n_queries} queries × {selection.budget} → {out}")


def register(app: typer.Typer) -> None:
    sub = typer.Typer(
        help="Run embedding, clustering and selection on an executor (local or Ray).", no_args_is_help=True
    )
    app.add_typer(sub, name="distributed")
    sub.command("embed")(embed_cmd)
    sub.command("cluster")(cluster_cmd)
    sub.command("select")(select_cmd)
