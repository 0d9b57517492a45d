"""Load the intent benchmarks from the Hugging Face hub through the optional ``datasets`` package.

Install with ``pip install -e '.[data]'`` in the repository. The hub copies are not byte-identical to the
original files:

- ``PolyAI/banking77``: train 10,003 / test 3,080, ``text`` + ``label`` (ClassLabel) — same as the files.
- ``DeepPavlov/clinc150``: ``utterance`` + ``label``; out-of-scope rows (label ``oos`` / missing / −1) are
  dropped here as for the files.
- ``DeepPavlov/hwu64``: the DialoGLUE split, which carves a 1,076-example validation set out of train
  (8,954 / 1,076 / 1,076); the pool is ``train`` unless ``merge_validation=True``.

Column names and label encodings are discovered, not assumed: the text column is the first of ``text``,
``utterance``, ``sentence``; the label column the first of ``label``, ``intent``, ``category``; label names
come from a ``ClassLabel`` feature, from string labels, or from the repository's ``intents`` configuration.
"""

from __future__ import annotations

from typing import Any, Callable

from ucs.data.dataset import Dataset, DatasetError, Split, encode_labels, validate

__all__ = ["load_from_hub", "HUB_IDS"]

#: Registry name → hub dataset id.
HUB_IDS = {"banking77": "PolyAI/banking77", "clinc150": "DeepPavlov/clinc150", "hwu64": "DeepPavlov/hwu64"}
TEXT_COLUMNS = ("text", "utterance", "sentence")
LABEL_COLUMNS = ("label", "intent", "category")
OOS_NAMES = {"oos", "out_of_scope", "out-of-scope"}


def _default_loader() -> Callable[..., Any]:
    try:
        import datasets  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            "source='hub' needs the optional 'datasets' package: pip install -e '.[data]' (in the ucs "
            "repository) "
            "(or use source='files' with data_dir pointing at the original public files)"
        ) from exc
    from datasets import load_dataset

    return load_dataset


def _pick(columns: list[str], options: tuple[str, ...], what: str, repo: str) -> str:
    for c in options:
        if c in columns:
            return c
    raise DatasetError(f"hub dataset {repo}: no {what} column among {list(options)}; columns are {columns}")


def _label_names(split: Any, label_col: str, repo: str, loader: Callable[..., Any]) -> list[str] | None:
    feature = getattr(split, "features", {}).get(label_col) if hasattr(split, "features") else None
    names = getattr(feature, "names", None)
    if names:
        return [str(n) for n in names]
    try:
        intents = loader(repo, "intents")
    except Exception:  # the repository may have no such configuration
        return None
    table = next(iter(intents.values())) if hasattr(intents, "values") else intents
    cols = list(getattr(table, "column_names", []))
    if "id" in cols and "name" in cols:
        mapping = dict(zip(table["id"], table["name"]))
        return [str(mapping[k]) for k in sorted(mapping)]
    return None


def load_from_hub(
    name: str,
    *,
    merge_validation: bool = False,
    revision: str | None = None,
    loader: Callable[..., Any] | None = None,
) -> Dataset:
    """One of ``banking77``, ``clinc150``, ``hwu64`` from the hub (needs network and ``datasets``).

    Parameters
    ----------
    merge_validation : bool
        Add the hub's ``validation`` split (if any) to the pool.
    revision : str, optional
        Hub revision (commit) to pin; recorded in ``source``.
    loader : callable, optional
        ``loader(repo_id, config=None, revision=...)`` returning a mapping of split name → table; default
        :func:`datasets.load_dataset`. Lets an already-downloaded ``DatasetDict`` be used.
    """
    if name not in HUB_IDS:
        raise ValueError(f"no hub copy is registered for {name!r}; hub datasets are {sorted(HUB_IDS)}")
    repo = HUB_IDS[name]
    load = loader if loader is not None else _default_loader()
    kwargs = {"revision": revision} if revision else {}
    try:
        dd = load(repo, **kwargs)
    except (ImportError, DatasetError):
        raise
    except Exception as exc:  # network errors, missing repositories, ...
        raise DatasetError(
            f"could not load {repo} from the Hugging Face hub ({type(exc).__name__}: {exc}). Without network "
            "access, use source='files' with data_dir pointing at the original public files."
        ) from exc
    splits = list(dd.keys())
    if "train" not in splits or "test" not in splits:
        raise DatasetError(f"hub dataset {repo} has splits {splits}; 'train' and 'test' are required")
    parts = {
        "pool": [dd["train"]] + ([dd["validation"]] if merge_validation and "validation" in splits else []),
        "test": [dd["test"]],
    }
    columns = list(dd["train"].column_names)
    text_col = _pick(columns, TEXT_COLUMNS, "text", repo)
    label_col = _pick(columns, LABEL_COLUMNS, "label", repo)
    names = _label_names(dd["train"], label_col, repo, load)
    raw: dict[str, tuple[list[str], list[str]]] = {}
    dropped = 0
    for key, tables in parts.items():
        texts, labels = [], []
        for table in tables:
            for text, lab in zip(table[text_col], table[label_col]):
                if lab is None or (isinstance(lab, int) and lab < 0):
                    dropped += 1
                    continue
                lab_name = names[lab] if (names is not None and isinstance(lab, int)) else str(lab)
                if lab_name.lower() in OOS_NAMES:
                    dropped += 1
                    continue
                texts.append(str(text))
                labels.append(lab_name)
        raw[key] = (texts, labels)
    used = sorted(set(raw["pool"][1]) | set(raw["test"][1]))
    label_names = [n for n in names if n.lower() not in OOS_NAMES] if names is not None else used
    pool_ids, label_names = encode_labels(raw["pool"][1], label_names, where=f"{repo} (train)")
    test_ids, _ = encode_labels(raw["test"][1], label_names, where=f"{repo} (test)")
    ds = Dataset(
        name=name,
        task="intent",
        label_names=label_names,
        pool=Split(tuple(raw["pool"][0]), pool_ids),
        test=Split(tuple(raw["test"][0]), test_ids),
        source={f"hf://{repo}": revision or "unpinned"},
        info={"hub_id": repo, "dropped_out_of_scope": dropped, "merge_validation": merge_validation},
    )
    return validate(ds)
