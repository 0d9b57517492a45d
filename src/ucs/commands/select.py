"""``ucs select``: choose demonstrations from saved embeddings and write what each query got."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ucs import defaults as D
from ucs.commands._inputs import default_note as _d, set_options
from ucs.selectors.factory import BASE_SELECTORS, selector_class

#: Every base selector but those that score subsets with a language model (MDL; the Python API takes one).
METHODS = tuple(b for b in BASE_SELECTORS if not selector_class(b).needs_scorer)


def select_cmd(
    pool_embeddings: Path = typer.Option(..., "--pool", help="Pool embeddings, .npy of shape (N, d)."),
    query_embeddings: Optional[Path] = typer.Option(None, "--queries", help="Query embeddings, .npy (Q, d)."),
    method: str = typer.Option(
        D.METHOD, help=f"One of {', '.join(METHODS)} (MDL needs an LM: use the Python API)."
    ),
    budget: int = typer.Option(10, help="Demonstrations per query (0 = zero-shot)."),
    cluster_ids: Optional[Path] = typer.Option(
        None,
        help="Cluster ids, .npy (N,): adds the UCS prior (weight --lam) to every method but random and "
        "cover; cover needs them.",
    ),
    lam: Optional[float] = typer.Option(None, help=f"UCS weight λ, 0 = the base selector{_d('LAM')}."),
    estimator: str = typer.Option(
        D.DEFAULT_COVERAGE["prior"]["estimator"], help="Unseen estimator of the UCS prior."
    ),
    design: Optional[str] = typer.Option(
        None, help=f"Score design: full, seen_only, unseen_only, ratio{_d('DESIGN')}."
    ),
    corpus_prior: Optional[str] = typer.Option(
        None, help=f"VoteK prior: good_turing, inverse_size, spectrum_rarity{_d('CORPUS_PRIOR')}."
    ),
    seed: int = typer.Option(0, help="Random seed (Random selector, VoteK fill)."),
    pool_texts: Optional[Path] = typer.Option(
        None, help="UTF-8 file with one pool text per line (for exports)."
    ),
    out: Path = typer.Option(Path("selection.json"), help="Output: .json or .csv."),
) -> None:
    """Select demonstrations for every query and write them (with pool texts when given)."""
    from ucs.commands._inputs import check_out_suffix, read_ids, read_lines, read_matrix
    from ucs.selectors import UCSPrior
    from ucs.selectors.factory import has_ucs_form, make_selector

    if method not in METHODS:
        raise typer.BadParameter(
            f"must be one of {', '.join(METHODS)}; got {method!r}", param_hint="--method"
        )
    check_out_suffix(out, "--out", (".json", ".csv"))
    pool = read_matrix(pool_embeddings, "--pool")
    queries = (
        None if query_embeddings is None else read_matrix(query_embeddings, "--queries", dim=pool.shape[1])
    )
    ids = None if cluster_ids is None else read_ids(cluster_ids, "--cluster-ids", n=pool.shape[0])
    if ids is None and lam not in (None, 0.0):
        raise typer.BadParameter("--lam needs --cluster-ids")
    if ids is None and selector_class(method).needs_cluster_ids:
        raise typer.BadParameter(
            f"{method} picks among the pool's latent clusters: pass --cluster-ids", param_hint="--cluster-ids"
        )
    prior = None
    if ids is not None and has_ucs_form(method):  # the same λ as 'ucs distributed select' when unset
        prior = UCSPrior.build(
            ids, estimator=estimator, **set_options(lam=lam, design=design, corpus_prior=corpus_prior)
        )
    sel = make_selector(method, prior=prior, random_state=seed)
    texts = None
    if pool_texts is not None:
        texts = read_lines(pool_texts, "--pool-texts", n=pool.shape[0])
    selection = sel.fit(pool, cluster_ids=ids).select(queries, budget)
    if out.suffix == ".csv":
        selection.to_csv(str(out), pool_texts=texts)
    else:
        selection.to_json(str(out), pool_texts=texts)
    typer.echo(f"{type(sel).__name__}: {selection.indices.shape[0]} row(s) × {selection.budget} → {out}")


def register(app: typer.Typer) -> None:
    app.command("select")(select_cmd)
