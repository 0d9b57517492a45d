"""An HTML report of a run folder: what was selected for each query, and what happened.

>>> from ucs.report import write_report          # doctest: +SKIP
>>> write_report("runs/b77")                     # doctest: +SKIP
PosixPath('runs/b77/report.html')

:func:`build_report` reads only the folder (:func:`load_run`: the runner's records, manifest and results, the
pipeline's run files) and returns one self-contained HTML document: run summary, accuracy with intervals and
each UCS form's paired Δ, the cluster explorer (2-D projection, size spectrum, health figures), coverage of
each method's prompts, and a per-query browser with filters and search. Needs the ``report`` extra
(jinja2, plotly). See docs/report.md.
"""

from ucs.report.data import Demonstration, RunData, load_run
from ucs.report.figures import MAX_SCATTER_POINTS
from ucs.report.page import REPORT_NAME, build_report, write_report

__all__ = [
    "build_report",
    "write_report",
    "load_run",
    "RunData",
    "Demonstration",
    "MAX_SCATTER_POINTS",
    "REPORT_NAME",
]
