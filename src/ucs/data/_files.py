"""Small file helpers shared by the loaders: path resolution, hashing, CSV/JSON reading with clear errors."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any, Iterator

from ucs.data.dataset import DatasetError, MissingDataError
from ucs.utils.io import hash_file

#: Environment variable naming the default data directory.
DATA_DIR_ENV = "UCS_DATA_DIR"


def resolve_data_dir(data_dir: str | os.PathLike[str] | None) -> Path:
    """``data_dir`` if given, else ``$UCS_DATA_DIR``, else ``./data``."""
    if data_dir is not None:
        return Path(data_dir)
    env = os.environ.get(DATA_DIR_ENV)
    return Path(env) if env else Path("data")


def require_file(path: Path, what: str) -> Path:
    """``path`` if it is a file, else :class:`MissingDataError` saying what was expected there."""
    if not path.is_file():
        raise MissingDataError(
            f"{what}: expected the file {path} but it does not exist. Point data_dir (or ${DATA_DIR_ENV}) "
            "at a directory holding the dataset's original public files, or use source='hub'."
        )
    return path


def read_json(path: Path) -> Any:
    try:
        with open(path, encoding="utf-8-sig") as fh:
            return json.load(fh)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path} is not valid JSON: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path} is not UTF-8 text: {exc}") from exc


#: The largest CSV field read (2 GiB − 1, the most every platform's csv module accepts).
_FIELD_LIMIT = 2**31 - 1


def read_csv_rows(path: Path, required: tuple[str, ...], delimiter: str = ",") -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, row)`` of a quoted CSV file; quoted fields may span lines.

    Raises :class:`DatasetError` naming the file when a required column is missing or a row is ragged. A UTF-8
    byte-order mark is skipped, and a field may be as long as the file (not only Python's default 128 KiB).
    """
    csv.field_size_limit(max(csv.field_size_limit(), _FIELD_LIMIT))
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh, delimiter=delimiter, strict=True)
            header = reader.fieldnames or []
            missing = [c for c in required if c not in header]
            if missing:
                raise DatasetError(
                    f"{path}: missing column(s) {missing}; the header is {header} (delimiter {delimiter!r})"
                )
            for row in reader:
                if None in row or any(v is None for v in row.values()):
                    raise DatasetError(
                        f"{path}, line {reader.line_num}: row has {len(row) + len(row.get(None, []))} "
                        f"fields, the header has {len(header)}"
                    )
                yield reader.line_num, row
    except csv.Error as exc:
        raise DatasetError(f"{path}: malformed CSV: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path} is not UTF-8 text: {exc}") from exc


def file_hashes(root: Path, paths: list[Path]) -> dict[str, str]:
    """``{path relative to root (posix): sha256}``."""
    out = {}
    for p in paths:
        try:
            key = p.relative_to(root).as_posix()
        except ValueError:
            key = p.as_posix()
        out[key] = hash_file(p)
    return out
