"""Markdown rendering of experiment results (one function per experiment kind)."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ucs.evaluation.summary import paired_delta
from ucs.experiments.spec import Cell, Experiment
from ucs.experiments.verdict import PairVerdict, verdict_section
from ucs.pipeline.diagnostics import coverage_markdown
from ucs.utils.redact import redact

__all__ = ["render", "accuracy_cell_text", "delta_verdict"]


def _answered_on(results: Sequence[Dict[str, Any]]) -> Dict[str, int]:
    """Answers per CPU kind over every shown method of every cell, most first; ``{}`` when no answer records
    its machine (pages of runs made before provenance existed stay as they were)."""
    total: Dict[str, int] = {}
    for r in results:
        for v in (r.get("methods") or {}).values():
            for m, n in ((v or {}).get("answered_on") or {}).items():
                total[m] = total.get(m, 0) + int(n)
    if set(total) <= {"not recorded"}:
        return {}
    return dict(sorted(total.items(), key=lambda kv: (-kv[1], kv[0])))


def _header(
    exp: Experiment, cells: Sequence[Cell], preset: str, results: Sequence[Dict[str, Any]]
) -> List[str]:
    c0 = cells[0].config if cells else None
    lines = [
        f"# {exp.title}",
        "",
        f"- paper: {exp.paper_ref}",
        f"- varies: {exp.varies}",
        f"- size preset: `{preset}`; configuration file: `{exp.config_file}`",
    ]
    if c0 is not None:
        nq = sorted({r.get("n_queries") for r in results if r.get("n_queries") is not None})
        drawn = f"drawn once, seed {c0.test_seed}"
        full = max((r.get("n_drawn") or 0 for r in results), default=0)
        if nq and max(nq) < full:  # a --limit run: say so, and what the full one is
            drawn = (
                f"the first of {full} {drawn}: a `--limit` run, which the same command without "
                "`--limit` extends to the full size"
            )
        lines.append(
            f"- protocol: {'/'.join(str(n) for n in nq) or '—'} test queries ({drawn}), "
            f"{c0.n_runs} run(s) (seeds {', '.join(map(str, c0.run_seeds))}), mode `{c0.mode}`, "
            f"backbone(s) {', '.join(dict.fromkeys(c.backbone for c in cells))}, retrieval "
            f"`{c0.retrieval_embedder}`, budget {c0.budget} unless varied"
        )
    machines = _answered_on(results)
    if machines:
        lines.append("- answers computed on: " + "; ".join(f"{m} ({n:,})" for m, n in machines.items()))
    note = exp.presets.get(preset, {}).get("note")
    if note:
        lines.append(f"- preset note: {note}")
    if exp.description:
        lines += ["", exp.description]
    lines += [
        "",
        f"Each cell's configuration, data hashes and package versions: `{exp.name}.manifest.json`.",
        "",
    ]
    several = len({c.backbone for c in cells}) > 1
    pending = [
        f"{c.dataset} / {c.backbone + ' / ' if several else ''}{c.variant.name}: {', '.join(r['pending'])}"
        for c, r in zip(cells, results)
        if r.get("pending")
    ]
    if pending:
        lines += [
            '**Under way.** Not every method has answered every query yet; these show as "—" (the '
            "manifest's command without `--render-only` resumes them): " + "; ".join(pending) + ".",
            "",
        ]
    return lines


PAIRED_NOTE = (
    "[95% paired bootstrap CI of Δ over queries]; * marks a Δ whose paired interval excludes 0 — "
    "differences inside their interval are not evidence either way"
)


def _fmt_acc(m: Optional[Dict[str, Any]]) -> Tuple[str, Optional[float]]:
    if not m or m.get("mean") is None:
        return "—", None
    s = f"{100 * m['mean']:.1f} ± {100 * (m.get('std') or 0.0):.1f}"
    if m.get("ci"):
        s += f" [{100 * m['ci'][0]:.1f}, {100 * m['ci'][1]:.1f}]"
    if not m.get("complete", True):
        s += " (incomplete)"
    return s, float(m["mean"])


def accuracy_cell_text(m: Optional[Dict[str, Any]], ref: Optional[Dict[str, Any]] = None) -> str:
    """``mean ± std [CI] (Δ [paired CI])`` in percent; Δ against ``ref`` (another method's summary) when
    given.

    The paired CI of Δ (same queries resampled for both methods) is shown when both summaries carry per-query
    accuracies; a Δ whose interval excludes 0 is marked ``*``.
    """
    s, mean = _fmt_acc(m)
    if mean is not None and ref is not None and ref.get("mean") is not None:
        d = paired_delta(m, ref)
        if d is None:
            s += f" ({100 * (mean - ref['mean']):+.1f})"
        else:
            lo, hi = d["ci"]
            star = "*" if lo > 0 or hi < 0 else ""
            s += f" ({100 * (mean - ref['mean']):+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}]{star})"
    return s


def delta_verdict(m: Optional[Dict[str, Any]], ref: Optional[Dict[str, Any]]) -> Optional[str]:
    """``"better"`` / ``"worse"`` when the paired 95 % interval of ``m − ref`` lies above / below 0,
    ``"noise"`` when it contains 0, ``None`` when either side is missing or has no per-query accuracies."""
    if not m or not ref or m.get("mean") is None or ref.get("mean") is None:
        return None
    d = paired_delta(m, ref)
    if d is None:
        return None
    lo, hi = d["ci"]
    return "better" if lo > 0 else "worse" if hi < 0 else "noise"


def _significance_table(verdicts: Dict[Tuple[str, str], List[Optional[str]]], n_datasets: int) -> List[str]:
    """Per setting and compared method: on how many datasets its paired interval lies above 0, below 0, or
    contains it; ``None`` (not measured yet) counts apart."""
    lines = [
        f"On how many of the {n_datasets} datasets each compared method's paired 95 % interval of Δ lies "
        "above 0 (better), below 0 (worse) or contains 0 (within noise); datasets not yet answered count as "
        "not measured.",
        "",
        "| setting | method | better | worse | within noise | not measured |",
        "|---|---|---|---|---|---|",
    ]
    for (setting, method), vs in verdicts.items():
        counts = [sum(v == k for v in vs) for k in ("better", "worse", "noise", None)]
        lines.append(f"| {setting} | {method} | " + " | ".join(map(str, counts)) + " |")
    return lines + [""]


class _Summaries:
    """Method summaries of an accuracy experiment by (dataset, backbone, variant, method), and the reference
    each Δ is taken against: the same method in ``delta_vs_variant``, else the base selector of a UCS form (or
    the ``delta_vs_method`` partner of a base selector) in the same variant, else in any variant that ran
    it."""

    def __init__(
        self,
        exp: Experiment,
        cells: Sequence[Cell],
        results: Sequence[Dict[str, Any]],
        variants: Sequence[Any],
        key: str = "methods",
    ) -> None:
        self.by = {(c.dataset, c.backbone, c.variant.name): r for c, r in zip(cells, results)}
        self.key = key
        self.ref_variant = exp.options.get("delta_vs_variant")
        self.vs_method = exp.options.get("delta_vs_method", {})
        self.vs_cell = exp.options.get("delta_vs_cell")  # {"variant", "method"}: one reference for every row
        self.variants = variants
        self.specs = {m.name: m for c in cells for m in c.method_specs}  # the cells' methods by name

    def get(self, ds: str, bb: str, vname: str, method: str) -> Optional[Dict[str, Any]]:
        r = self.by.get((ds, bb, vname))
        return None if r is None else (r.get(self.key) or {}).get(method)

    def compared(self, method: str) -> bool:
        """Whether ``method``'s rows carry a Δ at all."""
        return bool(self.ref_variant or self.vs_cell or self.specs[method].ucs or method in self.vs_method)

    def reference(self, ds: str, bb: str, vname: str, method: str) -> Optional[Dict[str, Any]]:
        if self.vs_cell:
            ref_v, ref_m = self.vs_cell["variant"], self.vs_cell["method"]
            return None if (vname, method) == (ref_v, ref_m) else self.get(ds, bb, ref_v, ref_m)
        if self.ref_variant:
            return None if vname == self.ref_variant else self.get(ds, bb, self.ref_variant, method)
        spec = self.specs[method]
        base, ucs = spec.base, spec.ucs
        if not ucs:
            base = self.vs_method.get(method)
            if base is None:
                return None
        hit = self.get(ds, bb, vname, base)
        for v in self.variants:
            hit = hit or self.get(ds, bb, v.name, base)
        return hit


def _accuracy(exp: Experiment, cells: Sequence[Cell], results: Sequence[Dict[str, Any]]) -> List[str]:
    datasets = list(dict.fromkeys(c.dataset for c in cells))
    backbones = list(dict.fromkeys(c.backbone for c in cells))
    variants = [v for v in exp.variants if any(c.variant.name == v.name for c in cells)]
    summaries = _Summaries(exp, cells, results, variants)
    single = len(variants) == 1
    ref_variant = summaries.ref_variant
    vs_cell = summaries.vs_cell
    delta = (
        f"Δ vs `{ref_variant}` {PAIRED_NOTE}"
        if ref_variant
        else f"Δ vs `{vs_cell['method']}` ({vs_cell['variant']}), same queries and runs {PAIRED_NOTE}"
        if vs_cell
        else f"Δ = UCS form minus its base selector, same queries and runs {PAIRED_NOTE}"
    )
    lines = [f"Cells: accuracy %, mean ± std over runs [95% bootstrap CI over queries] ({delta}).", ""]
    for bb in backbones:
        lines += [f"## Backbone `{bb}`", ""]
        head = ([] if single else ["setting"]) + ["method"] + datasets
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        verdicts: Dict[Tuple[str, str], List[Optional[str]]] = {}
        for v in variants:
            for m in _variant_methods(cells, v.name, bb):
                pairs = [
                    (summaries.get(ds, bb, v.name, m), summaries.reference(ds, bb, v.name, m))
                    for ds in datasets
                ]
                row = (
                    ([] if single else [v.label or v.name])
                    + [m]
                    + [accuracy_cell_text(a, b) for a, b in pairs]
                )
                lines.append("| " + " | ".join(row) + " |")
                is_reference = bool(vs_cell) and (v.name, m) == (vs_cell["variant"], vs_cell["method"])
                if summaries.compared(m) and not is_reference:
                    verdicts[(v.label or v.name, m)] = [delta_verdict(a, b) for a, b in pairs]
        lines.append("")
        if exp.options.get("significance_summary"):
            lines += _significance_table(verdicts, len(datasets))
        lines += _dropped_side_table(cells, results, bb, variants, datasets, single)
        if any(r.get("strict_matcher") for r in results):
            lines += _strict_matcher_table(
                _Summaries(exp, cells, results, variants, key="strict_matcher"),
                cells,
                bb,
                variants,
                datasets,
                single,
            )
        if exp.options.get("show_vote") and any(r.get("vote") for r in results):
            lines += _vote_table(exp, cells, results, bb, variants, datasets, single)
        if exp.options.get("show_coverage"):
            lines += _coverage_side_table(cells, results, bb, variants, datasets, single)
            if any(r.get("label_agreement") for r in results):
                lines += _label_agreement_table(
                    _Summaries(exp, cells, results, variants, key="label_agreement"),
                    cells,
                    bb,
                    variants,
                    datasets,
                    single,
                )
    if vs_cell and exp.options.get("verdict"):
        ref = exp.options["verdict"].get("reference", vs_cell["method"])
        lines += verdict_section(_verdict_rows(exp, cells, results, variants), ref)
    return lines


def _verdict_rows(
    exp: Experiment, cells: Sequence[Cell], results: Sequence[Dict[str, Any]], variants: Sequence[Any]
) -> Dict[Tuple[str, str], List[PairVerdict]]:
    """Every row compared with the page's reference cell: its verdicts on each (dataset, backbone) pair, the
    model against the no-LM vote counted ``"better"`` only when it is above both the row's own vote and the
    reference's k-NN vote (:mod:`ucs.experiments.verdict`)."""
    accs = _Summaries(exp, cells, results, variants)
    votes = _Summaries(exp, cells, results, variants, key="vote")
    ref_v, ref_m = accs.vs_cell["variant"], accs.vs_cell["method"]
    datasets = list(dict.fromkeys(c.dataset for c in cells))
    rows: Dict[Tuple[str, str], List[PairVerdict]] = {}
    for bb in dict.fromkeys(c.backbone for c in cells):
        for v in variants:
            for m in _variant_methods(cells, v.name, bb):
                if (v.name, m) == (ref_v, ref_m):
                    continue
                for ds in datasets:
                    acc = accs.get(ds, bb, v.name, m)
                    own, knn = votes.get(ds, bb, v.name, m), votes.get(ds, bb, ref_v, ref_m)
                    vs = [delta_verdict(acc, x) for x in (own, knn) if x]
                    vote = (
                        None
                        if not vs or None in vs
                        else "better"
                        if set(vs) == {"better"}
                        else "worse"
                        if "worse" in vs
                        else "noise"
                    )
                    rows.setdefault((v.label or v.name, m), []).append(
                        PairVerdict(ds, bb, delta_verdict(acc, accs.reference(ds, bb, v.name, m)), vote)
                    )
    return rows


def _strict_matcher_table(
    summaries: _Summaries,
    cells: Sequence[Cell],
    bb: str,
    variants: Sequence[Any],
    datasets: Sequence[str],
    single: bool,
) -> List[str]:
    """The same generated outputs matched by the strict matcher, with the same Δs as the accuracy table."""
    intro = (
        "The same outputs matched by the strict matcher (after the answer marker, the first line must equal "
        "a label up to case, `_`, quotes and a final period; the paper's rule above also accepts a label "
        'found inside the answer, so "cannot be determined" counts as "No"): accuracy %, mean ± std over '
        "runs [95% bootstrap CI over queries] (Δ against the same reference [paired 95% CI])."
    )

    def text(ds: str, vname: str, m: str) -> str:
        return accuracy_cell_text(summaries.get(ds, bb, vname, m), summaries.reference(ds, bb, vname, m))

    return _side_table(intro, text, cells, bb, variants, datasets, single)


def _label_agreement_table(
    summaries: _Summaries,
    cells: Sequence[Cell],
    bb: str,
    variants: Sequence[Any],
    datasets: Sequence[str],
    single: bool,
) -> List[str]:
    """Share of each prompt's demonstrations that carry the query's own label (relevance of the selections),
    with the paired Δ against the same reference as the accuracy table."""
    intro = (
        "Relevance of the same prompts: share of the demonstrations whose label is the query's own, % (mean "
        "over queries and runs; Δ against the same reference as accuracy, with its paired 95 % interval over "
        "queries). A prior that pulls in other intents lowers it."
    )

    def text(ds: str, vname: str, m: str) -> str:
        return _share_text(summaries.get(ds, bb, vname, m), summaries.reference(ds, bb, vname, m))

    return _side_table(intro, text, cells, bb, variants, datasets, single)


def _side_table(
    intro: str,
    text: Callable[[str, str, str], str],
    cells: Sequence[Cell],
    bb: str,
    variants: Sequence[Any],
    datasets: Sequence[str],
    single: bool,
) -> List[str]:
    """A table under the accuracy table: one row per (variant, method) of backbone ``bb``, one column per
    dataset, each entry ``text(dataset, variant name, method)``."""
    head = ([] if single else ["setting"]) + ["method"] + list(datasets)
    lines = [intro, "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for v in variants:
        for m in _variant_methods(cells, v.name, bb):
            row = ([] if single else [v.label or v.name]) + [m] + [text(ds, v.name, m) for ds in datasets]
            lines.append("| " + " | ".join(row) + " |")
    return lines + [""]


def _vote_table(
    exp: Experiment,
    cells: Sequence[Cell],
    results: Sequence[Dict[str, Any]],
    bb: str,
    variants: Sequence[Any],
    datasets: Sequence[str],
    single: bool,
) -> List[str]:
    """The no-LM baseline beside every row: the majority label of the prompt's own demonstrations (for TopK,
    the k-NN classifier of the retrieval space), and the model's accuracy minus it on the same queries."""
    votes = _Summaries(exp, cells, results, variants, key="vote")
    accs = _Summaries(exp, cells, results, variants)
    intro = (
        "The no-LM baseline of the same prompts: accuracy % of the majority label of each prompt's own "
        "demonstrations, no language model (ties: the first shown; for TopK this is the k-nearest-neighbour "
        "classifier), and (in brackets) the model's accuracy minus that vote on the same queries with its "
        "paired 95 % interval. A negative gain means the model reading the prompt does worse than counting "
        "its labels."
    )

    def text(ds: str, vname: str, m: str) -> str:
        v, a = votes.get(ds, bb, vname, m), accs.get(ds, bb, vname, m)
        if not v or v.get("mean") is None:
            return "—"
        d = paired_delta(a, v) if a else None
        if d is None:
            return f"{100 * v['mean']:.1f}"
        lo, hi = d["ci"]
        star = "*" if lo > 0 or hi < 0 else ""
        return (
            f"{100 * v['mean']:.1f} (model {100 * d['delta']:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}]{star})"
        )

    return _side_table(intro, text, cells, bb, variants, datasets, single)


def _share_text(a: Optional[Dict[str, Any]], ref: Optional[Dict[str, Any]]) -> str:
    if not a or a.get("mean") is None:
        return "—"
    text = f"{100 * a['mean']:.1f}"
    d = paired_delta(a, ref, field="share") if ref else None
    if d is not None:
        lo, hi = d["ci"]
        text += (
            f" ({100 * d['delta']:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}]{'*' if lo > 0 or hi < 0 else ''})"
        )
    return text


def _variant_methods(cells: Sequence[Cell], variant: str, bb: str) -> List[str]:
    """The methods of one variant and backbone over all its cells, in first-seen order."""
    methods: List[str] = []
    for c in cells:
        if c.variant.name == variant and c.backbone == bb:
            methods += [m for m in c.methods if m not in methods]
    return methods


def _dropped_side_table(
    cells: Sequence[Cell],
    results: Sequence[Dict[str, Any]],
    bb: str,
    variants: Sequence[Any],
    datasets: Sequence[str],
    single: bool,
) -> List[str]:
    """Demonstrations dropped per prompt to fit the model's prompt budget; nothing where none was dropped."""
    by = {(c.dataset, c.variant.name): r for c, r in zip(cells, results) if c.backbone == bb}

    def dropped(ds: str, vname: str, m: str) -> Optional[float]:
        runs = ((((by.get((ds, vname)) or {}).get("methods") or {}).get(m) or {}).get("runs") or {}).values()
        n = sum(int(r.get("n", 0)) for r in runs)
        return sum(int(r.get("demos_dropped", 0)) for r in runs) / n if n else None

    keys = [(ds, v.name, m) for v in variants for m in _variant_methods(cells, v.name, bb) for ds in datasets]
    if not any((dropped(*k) or 0) > 0 for k in keys):
        return []
    intro = (
        "Demonstrations dropped per prompt to fit the model's prompt budget (mean over queries and runs): "
        "the last ones of each selection are removed, so where most are dropped two selectors can send "
        "nearly the same prompt and their accuracies say little about selection."
    )

    def text(ds: str, vname: str, m: str) -> str:
        d = dropped(ds, vname, m)
        return "—" if d is None else f"{d:.1f}"

    return _side_table(intro, text, cells, bb, variants, datasets, single)


def _coverage_side_table(
    cells: Sequence[Cell],
    results: Sequence[Dict[str, Any]],
    bb: str,
    variants: Sequence[Any],
    datasets: Sequence[str],
    single: bool,
) -> List[str]:
    """Distinct clusters per prompt and mean cluster size of the same selections (did the prior change
    them?)."""
    by = {(c.dataset, c.variant.name): r for c, r in zip(cells, results) if c.backbone == bb}
    intro = (
        "Coverage of the same prompts: distinct latent clusters / mean pool size of the demonstrations' "
        "clusters (mean over queries and runs). Each row counts in the clustering of its own cell, so a "
        "setting that clusters differently (the paper's) is compared with the base rows by accuracy, "
        "not by these counts."
    )

    def text(ds: str, vname: str, m: str) -> str:
        runs = list((by.get((ds, vname)) or {}).get("coverage", {}).get(m, {}).values())
        if not runs:
            return "—"
        u = np.mean([r["unique_clusters"] for r in runs])
        sz = np.mean([r["mean_cluster_size"] for r in runs])
        return f"{u:.2f} / {sz:.3g}"

    return _side_table(intro, text, cells, bb, variants, datasets, single)


def _coverage(exp: Experiment, cells: Sequence[Cell], results: Sequence[Dict[str, Any]]) -> List[str]:
    lines = [
        "Per prompt: distinct latent clusters, mean pool size of the demonstrations' clusters, mean inverse "
        "size, and Φ under the configured estimator; averaged over test queries, then mean ± std over runs.",
        "",
    ]
    for c, r in zip(cells, results):
        lines += [
            f"## {c.dataset} × `{c.backbone}` ({r.get('n_queries')} queries)",
            "",
            coverage_markdown(r.get("coverage", {})),
            "",
        ]
    return lines


def _clusters(
    exp: Experiment, cells: Sequence[Cell], results: Sequence[Dict[str, Any]], png: Optional[str]
) -> List[str]:
    lines: List[str] = []
    if png:
        lines += [f"![cluster-size distributions]({png})", ""]
    lines += [
        "| dataset | backbone | pool | clusters | singletons | purity | items in clusters of size 1..8 | "
        "larger | 8 largest sizes |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c, r in zip(cells, results):
        seeds = list(r["per_seed"])
        s0 = r["per_seed"][seeds[0]]

        def ms(key: str) -> str:
            v = np.asarray([r["per_seed"][s][key] for s in seeds], dtype=float)
            return f"{v.mean():.0f}" + (f" ± {v.std():.0f}" if v.size > 1 else "")

        pur = np.mean([r["per_seed"][s]["purity"] for s in seeds])
        by = ", ".join(str(s0["items_by_size"].get(str(k), 0)) for k in range(1, 9))
        lines.append(
            f"| {c.dataset} | {c.backbone} | {r['n_pool']} | {ms('n_clusters')} | {ms('n_singletons')} | "
            f"{pur:.3f} | {by} | {s0['items_by_size'].get('0', 0)} | {s0['largest_sizes']} |"
        )
    lines += [
        "",
        "Counts are mean ± std over run seeds; the size columns are for the first run seed. Purity: "
        "fraction of pool items carrying their cluster's majority label.",
        "",
    ]
    for c, r in zip(cells, results):
        s0 = r["per_seed"][next(iter(r["per_seed"]))]
        if s0.get("health"):  # cells computed before health existed have none
            h = s0["health"]
            lines.append(
                f"- health, {c.dataset} × `{c.backbone}` (first run seed): largest "
                f"{h['largest_fraction']:.3f} of the pool, singletons {h['singleton_fraction']:.3f}, "
                f"effective clusters {h['effective_clusters']:.1f}, label AMI {h['ami']:.3f}"
                + (
                    "  **(one cluster holds over a quarter of the pool)**"
                    if h["largest_fraction"] > 0.25
                    else ""
                )
            )
    lines.append("")
    for c, r in zip(cells, results):
        a = r["audit"]
        lines += [f"## Audit: {c.dataset} × `{c.backbone}` (run seed {a['seed']})", ""]
        for title, entries in (
            ("largest clusters", a["largest"]),
            (f"clusters of size {a['size_range'][0]}–{a['size_range'][1]} (random)", a["small"]),
        ):
            lines += [f"### {title}", ""]
            if not entries:
                lines += ["none", ""]
            for e in entries:
                comp = ", ".join(f"{lab} ({n})" for lab, n in e["composition"][:5])
                lines.append(
                    f"- **cluster {e['cluster']}** — size {e['size']}, purity {e['purity']:.2f}; "
                    f"labels: {comp}"
                )
                for text, lab in e["members"]:
                    lines.append(f"  - {text.replace('|', '/')} — *{lab}*")
            lines.append("")
    return lines


def _health(
    exp: Experiment, cells: Sequence[Cell], results: Sequence[Dict[str, Any]], png: Optional[str]
) -> List[str]:
    """Cluster health of every (dataset, backbone, clustering) cell, mean over run seeds."""
    lines = [
        "Per clustering (mean over run seeds): clusters, largest cluster as a fraction of the pool, "
        "singleton fraction, effective number of clusters exp(H), and agreement with the gold intents "
        "(AMI; purity). A coverage prior can only act on clusters that are neither one giant nor all "
        "singletons; AMI says how much of the task's structure they carry.",
        "",
    ]
    if png:
        lines += [f"![{exp.name}]({png})", ""]
    lines += [
        "| dataset | backbone | clustering | clusters | largest | singletons | effective | AMI | purity | "
        "fit s |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for c, r in zip(cells, results):
        seeds = list(r["per_seed"].values())

        def mean(key: str) -> float:
            return float(np.mean([s[key] for s in seeds]))

        chosen = [s.get("chosen") for s in seeds if s.get("chosen")]
        label = c.variant.label or c.variant.name
        if chosen:
            label += " → " + ", ".join(sorted({_chosen_text(x) for x in chosen}))
        lines.append(
            f"| {c.dataset} | {c.backbone} | {label} | {mean('n_clusters'):.0f} | "
            f"{mean('largest_fraction'):.3f} | {mean('singleton_fraction'):.3f} | "
            f"{mean('effective_clusters'):.1f} | {mean('ami'):.3f} | {mean('purity'):.3f} | "
            f"{mean('seconds'):.1f} |"
        )
    return lines + [""]


def _chosen_text(chosen: Dict[str, Any]) -> str:
    extra = ", ".join(f"{k}={v}" for k, v in chosen.items() if k != "method")
    return f"{chosen['method']}" + (f" ({extra})" if extra else "")


def _runtime(exp: Experiment, cells: Sequence[Cell], results: Sequence[Dict[str, Any]]) -> List[str]:
    lines = [
        "Times in seconds on the machine that ran it (see the manifest for its platform). Embedding: "
        "measured on the first `embed texts` pool items without the cache, extrapolated to the pool.",
        "",
        "## Offline (one-time per dataset × backbone)",
        "",
        "| dataset | backbone | pool | embed texts | embedding (measured) | embedding (pool, est.) | PCA | "
        "dictionary fit | dictionary transform | k-NN | DBSCAN | clustering total |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c, r in zip(cells, results):
        o = r["offline"]
        st = o["stages"]
        g = lambda k: f"{st[k]:.2f}" if k in st else "—"  # noqa: E731
        lines.append(
            f"| {c.dataset} | {c.backbone} | {o['n_pool']} | {o['embed_texts']} | {o['embed_s']:.2f} | "
            f"{o['embed_pool_s']:.1f} | {g('pca')} | {g('dictionary_fit')} | {g('dictionary_transform')} | "
            f"{g('knn')} | {g('dbscan')} | {o['cluster_fit_s']:.2f} |"
        )
    lines += [
        "",
        "## Online (selection + ICL evaluation, all runs)",
        "",
        "| dataset | backbone | method | selection | evaluation | total | Δ total vs base | prompts | "
        "answered by the model | load, start → end |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c, r in zip(cells, results):
        on = r["online"]
        specs = {m.name: m for m in c.method_specs}  # the keys of "online": the cell's methods
        for m, t in on.items():
            spec = specs[m]
            base, ucs = spec.base, spec.ucs
            d = f"{t['total_s'] - on[base]['total_s']:+.2f}" if ucs and base in on else ""
            lines.append(
                f"| {c.dataset} | {c.backbone} | {m} | {t['selection_s']:.2f} | {t['evaluation_s']:.2f} | "
                f"{t['total_s']:.2f} | {d} | {t['records']} | {t.get('answered', '—')} | "
                f"{_load_text(t.get('load_1min'))} |"
            )
    lines += [
        "",
        "Each method is evaluated in its own runner folder without the shared answer store, so its "
        "evaluation time pays for every prompt it sends; a prompt repeated within the method (another run "
        "seed of a seed-independent selector) is answered once, as in a user's run. An interrupted "
        "method is timed again from the start. Load: the system's 1-minute load average when the method "
        "started and when it ended — about the number of cores the run uses when it had the machine to "
        "itself, more when something else competed for it (— where it was not recorded).",
        "",
    ]
    return lines


def _load_text(load: Any) -> str:
    """``"start → end"`` of a timing's recorded ``load_1min`` pair; ``"—"`` when it was not recorded."""
    if not load or any(v is None for v in load):
        return "—"
    return f"{load[0]:.2f} → {load[1]:.2f}"


def render(
    exp: Experiment,
    cells: Sequence[Cell],
    results: Sequence[Dict[str, Any]],
    preset: str,
    png: Optional[str] = None,
) -> str:
    """The markdown of ``exp`` from its cells' results (``png``: file name of its figure, if any)."""
    lines = _header(exp, cells, preset, results)
    if exp.kind == "accuracy":
        if png:
            lines += [f"![{exp.name}]({png})", ""]
        lines += _accuracy(exp, cells, results)
    elif exp.kind == "coverage":
        lines += _coverage(exp, cells, results)
    elif exp.kind == "clusters":
        lines += _clusters(exp, cells, results, png)
    elif exp.kind == "health":
        lines += _health(exp, cells, results, png)
    elif exp.kind == "runtime":
        lines += _runtime(exp, cells, results)
    return redact("\n".join(lines).rstrip() + "\n")  # a backbone URL's password never reaches the page
