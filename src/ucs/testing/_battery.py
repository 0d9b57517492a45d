"""Running a battery: a dict of named checks, each a function of the object under test."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence


def run_battery(
    battery: Dict[str, Callable[[Any], None]], obj: Any, checks: Optional[Sequence[str]]
) -> List[str]:
    """Run the named ``checks`` of ``battery`` (all by default) on ``obj``; returns the names run.

    An unknown name raises ``ValueError`` listing the valid ones; a failing check raises its
    ``AssertionError``.
    """
    names = list(battery) if checks is None else list(checks)
    for nm in names:
        if nm not in battery:
            raise ValueError(f"unknown check {nm!r}; valid: {sorted(battery)}")
    for nm in names:
        battery[nm](obj)
    return names
