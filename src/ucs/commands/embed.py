"""``ucs embed``: embed a file of texts with a backbone or a retrieval model, through the cache."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Optional

import typer

from ucs.commands._inputs import default_note as _d
from ucs.commands._inputs import set_options


def embed_cmd(
    input: Path = typer.Argument(
        ..., exists=True, dir_okay=False, help="Text file (one text per line) or CSV."
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Output .npy file (float32, n × d)."),
    model: str = typer.Option(
        "smollm2",
        help="Backbone (smollm2, gemma3-270m, .gguf, HF id) or, with "
        "--retrieval, a sentence-transformers name/path.",
    ),
    engine: Optional[str] = typer.Option(None, help="Backbone engine: llama or transformers; default llama."),
    retrieval: bool = typer.Option(False, "--retrieval", help="Use a sentence-transformers model."),
    column: Optional[str] = typer.Option(None, help="CSV column holding the texts (input is CSV when set)."),
    layer: Optional[str] = typer.Option(
        None, help=f"last, mid or an integer index (transformers engine){_d('LAYER')}."
    ),
    pooling: Optional[str] = typer.Option(None, help=f"mean, last or first{_d('POOLING')}."),
    l2: bool = typer.Option(False, "--l2", help="L2-normalise the backbone embeddings."),
    max_length: Optional[int] = typer.Option(
        None, help=f"Truncate texts to this many tokens{_d('MAX_LENGTH')}."
    ),
    cache_dir: Optional[Path] = typer.Option(None, help="Embedding cache directory (default: ~/.cache/ucs)."),
) -> None:
    """Embed texts and save them as a .npy matrix (cached: a second run does not load the model)."""
    from ucs.embedding import EmbeddingCache, load_retrieval_embedder
    from ucs.models import load_backbone
    from ucs.utils.io import atomic_save_npy

    if column is not None:
        with open(input, newline="", encoding="utf-8", errors="replace") as fh:
            reader = csv.DictReader(fh)
            if column not in (reader.fieldnames or []):
                raise typer.BadParameter(
                    f"{input} has no column {column!r}; its header is {reader.fieldnames}",
                    param_hint="--column",
                )
            texts = [row[column] for row in reader]
    else:
        texts = input.read_text(encoding="utf-8", errors="replace").splitlines()
    if retrieval:
        embedder = load_retrieval_embedder(model)
    else:
        lay = int(layer) if layer is not None and layer.lstrip("-").isdigit() else layer
        embedder = load_backbone(
            model,
            normalize=l2,
            **set_options(engine=engine, layer=lay, pooling=pooling, max_length=max_length),
        )
    cache = EmbeddingCache(cache_dir / "embeddings" if cache_dir else None)
    x = cache.embed(embedder, texts)
    atomic_save_npy(out, x)
    typer.echo(f"{x.shape[0]} × {x.shape[1]} embeddings → {out} (cache {'hit' if cache.hits else 'miss'})")


def register(app: typer.Typer) -> None:
    app.command("embed")(embed_cmd)
