"""What a reproduction experiment is: a named spec read from a JSON file, expanded into cells.

An :class:`Experiment` names one table or figure of the paper (or the project's estimator study) and says
what it varies. :meth:`Experiment.plan` expands it for a size preset (``paper`` or ``cpu``) into
:class:`Cell` s — one (dataset, backbone, variant) each, carrying the complete
:class:`~ucs.pipeline.PipelineConfig` and the methods it evaluates. Settings are layered, later wins:

1. the pipeline preset the size preset names (:mod:`ucs.pipeline.presets`: ``paper`` or ``cpu``);
2. the experiment's ``settings``; 3. the size preset's ``settings``;
4. the caller's overrides (``--test-size``, ``--runs``, ``--mode``, ``--set PATH=VALUE``, ``--data-dir``);
5. the variant's ``settings`` (what the experiment varies);
6. the cell's dataset and backbone.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ucs.pipeline.config import FLAT_NAMES, LATE_DEFAULTS, PipelineConfig, parse_method_specs, parse_methods
from ucs.selectors.method import MethodSpec
from ucs.pipeline.presets import COVERAGE

__all__ = ["KINDS", "SIZE_PRESETS", "Variant", "Experiment", "Cell"]

#: What a cell computes: ICL accuracy, coverage of selections, cluster statistics, cluster health, or timings.
KINDS = ("accuracy", "coverage", "clusters", "health", "runtime")
#: Size presets every experiment file defines.
SIZE_PRESETS = ("paper", "cpu")
_TOP_KEYS = (
    "name",
    "title",
    "paper_ref",
    "varies",
    "kind",
    "outputs",
    "description",
    "datasets",
    "selectors",
    "settings",
    "options",
    "variants",
    "presets",
)
_PRESET_KEYS = ("pipeline_preset", "settings", "options", "datasets", "backbones", "selectors", "note")


#: The settings added after results were first published, at the values that leave them out of the results'
#: key, by path: a named coverage setting starts from them.
_LATE_DEFAULT_PATHS = {p: v for k, v in LATE_DEFAULTS.items() for p in FLAT_NAMES.get(k, (k,))}


def _coverage_settings(settings: Dict[str, Any]) -> Dict[str, Any]:
    """Expand ``"coverage": "default" | "paper"`` into that coverage setting's values by path
    (:data:`ucs.pipeline.presets.COVERAGE`); the variant's other keys win."""
    name = settings.pop("coverage", None)
    if name is None:
        return settings

    if name not in COVERAGE:
        raise ValueError(f"a variant's coverage must be one of {sorted(COVERAGE)}; got {name!r}")

    return {**_LATE_DEFAULT_PATHS, **COVERAGE[name], **settings}


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", str(text)).strip("_") or "x"


@dataclass(frozen=True)
class Variant:
    """One setting of what an experiment varies.

    ``selectors``: ``None`` (all the experiment's methods), ``"base"`` / ``"ucs"`` (only the base / UCS
    forms among them) or an explicit list (kept in the order of ``selectors``, so that ``--selectors`` narrows
    it too). ``settings["coverage"]`` (``"default"`` or ``"paper"``) stands for
    that coverage setting's values. A settings value ``"@joint_with"`` is replaced by the other
    backbones of the experiment's joint set (the joint-dictionary experiment).
    """

    name: str
    label: str = ""
    settings: Mapping[str, Any] = field(default_factory=dict)
    selectors: Any = None

    def methods(self, selectors: Sequence[MethodSpec]) -> Tuple[MethodSpec, ...]:
        """The methods of ``selectors`` this variant evaluates, in their order."""
        if self.selectors is None:
            return tuple(selectors)
        if self.selectors in ("base", "ucs"):
            want = self.selectors == "ucs"
            return tuple(m for m in selectors if m.ucs == want)
        own = set(parse_method_specs(self.selectors))  # the variant's list in the experiment's file
        return tuple(m for m in selectors if m in own)


@dataclass(frozen=True)
class Cell:
    """One unit of work: an experiment's variant on one dataset with one backbone."""

    experiment: str
    id: str
    dataset: str
    backbone: str
    variant: Variant
    config: Any  # PipelineConfig
    methods: Tuple[str, ...]  # canonical names: the keys of the cell's results
    options: Mapping[str, Any]

    @property
    def method_specs(self) -> Tuple[MethodSpec, ...]:
        """The :class:`~ucs.selectors.MethodSpec` of each of :attr:`methods`, in order (the configuration's,
        parsed when it was made)."""
        return self.config.method_specs

    def describe(self) -> Dict[str, Any]:
        c = self.config
        return {
            "cell": self.id,
            "dataset": self.dataset,
            "backbone": c.public_dict()["backbone"],
            "variant": self.variant.name,
            "methods": list(self.methods),
            "test_size": c.test_size,
            "runs": c.n_runs,
            "mode": c.mode,
        }


@dataclass(frozen=True)
class Experiment:
    """A reproduction experiment (one paper table or figure); see the module docstring for the layering."""

    name: str
    title: str
    paper_ref: str
    varies: str
    kind: str
    outputs: Tuple[str, ...]
    description: str
    datasets: Tuple[str, ...]
    selectors: Tuple[str, ...]
    settings: Mapping[str, Any]
    options: Mapping[str, Any]
    variants: Tuple[Variant, ...]
    presets: Mapping[str, Mapping[str, Any]]
    config_file: Optional[str] = None

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_dict(cls, data: Mapping[str, Any], config_file: Optional[str] = None) -> "Experiment":
        """Validate and build from the JSON form (the files under ``ucs/resources/experiments``)."""
        where = f" in {config_file}" if config_file else ""
        unknown = sorted(set(data) - set(_TOP_KEYS))
        if unknown:
            raise ValueError(f"unknown experiment key(s) {unknown}{where}; valid keys: {list(_TOP_KEYS)}")
        for k in ("name", "title", "paper_ref", "kind", "datasets", "selectors", "presets"):
            if k not in data:
                raise ValueError(f"experiment{where} lacks the required key {k!r}")
        if data["kind"] not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}{where}; got {data['kind']!r}")
        presets = dict(data["presets"])
        missing = [p for p in SIZE_PRESETS if p not in presets]
        if missing:
            raise ValueError(f"experiment {data['name']!r}{where} must define the size presets {missing}")
        for pname, p in presets.items():
            bad = sorted(set(p) - set(_PRESET_KEYS))
            if bad:
                raise ValueError(
                    f"preset {pname!r} of {data['name']!r}{where} has unknown key(s) {bad}; "
                    f"valid: {list(_PRESET_KEYS)}"
                )
        variants = tuple(
            Variant(v["name"], v.get("label", ""), dict(v.get("settings", {})), v.get("selectors"))
            for v in data.get("variants") or [{"name": "default"}]
        )
        names = [v.name for v in variants]
        if len(set(names)) != len(names):
            raise ValueError(f"variant names of {data['name']!r} must be distinct; got {names}")

        exp = cls(
            name=str(data["name"]),
            title=str(data["title"]),
            paper_ref=str(data["paper_ref"]),
            varies=str(data.get("varies", "")),
            kind=str(data["kind"]),
            outputs=tuple(data.get("outputs", ["md"])),
            description=str(data.get("description", "")),
            datasets=tuple(data["datasets"]),
            selectors=parse_methods(data["selectors"]),
            settings=dict(data.get("settings", {})),
            options=dict(data.get("options", {})),
            variants=variants,
            presets=presets,
            config_file=config_file,
        )
        for p in presets:  # fail at load time, not in the middle of a run
            exp.plan(p, check_only=True)
        return exp

    def to_dict(self) -> Dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "paper_ref": self.paper_ref,
            "varies": self.varies,
            "kind": self.kind,
            "outputs": list(self.outputs),
            "description": self.description,
            "datasets": list(self.datasets),
            "selectors": list(self.selectors),
            "settings": dict(self.settings),
            "options": dict(self.options),
            "variants": [
                {
                    "name": v.name,
                    "label": v.label,
                    "settings": dict(v.settings),
                    **({"selectors": v.selectors} if v.selectors is not None else {}),
                }
                for v in self.variants
            ],
            "presets": json.loads(json.dumps(self.presets)),
        }

    # ------------------------------------------------------------------ planning
    def preset(self, name: str) -> Mapping[str, Any]:
        if name not in self.presets:
            raise ValueError(f"preset must be one of {sorted(self.presets)} for {self.name!r}; got {name!r}")
        return self.presets[name]

    def resolved_options(self, preset: str, backbones: Optional[Sequence[str]] = None) -> Dict[str, Any]:
        p = self.preset(preset)
        opts = {**self.options, **dict(p.get("options", {}))}
        if backbones is not None or "joint_with" not in opts:
            opts["joint_with"] = list(backbones if backbones is not None else p.get("backbones", ["smollm2"]))
        return opts

    def plan(
        self,
        preset: str = "paper",
        *,
        datasets: Optional[Sequence[str]] = None,
        backbones: Optional[Sequence[str]] = None,
        selectors: Optional[Sequence[str]] = None,
        overrides: Optional[Mapping[str, Any]] = None,
        check_only: bool = False,
        variants: Optional[Sequence[str]] = None,
    ) -> List[Cell]:
        """The cells of this experiment under size ``preset`` (``paper`` or ``cpu``).

        ``datasets`` / ``backbones`` / ``selectors`` replace the experiment's (and preset's) lists;
        ``variants`` keeps only the named variants (a long experiment run a part at a time); ``overrides`` are
        :class:`~ucs.pipeline.PipelineConfig` settings by path (layer 4 of the module docstring).
        Raises ``ValueError`` naming the setting when a cell's configuration is invalid.
        """
        p = self.preset(preset)
        ds_list = list(datasets if datasets is not None else p.get("datasets", self.datasets))
        bb_list = list(backbones if backbones is not None else p.get("backbones", ["smollm2"]))
        methods_all = parse_method_specs(
            selectors if selectors is not None else p.get("selectors", self.selectors)
        )
        if check_only:
            ds_list, bb_list = ds_list[:1], bb_list[:1]
        chosen = self.variants
        if variants is not None:
            names = [v.name for v in self.variants]
            unknown = [v for v in variants if v not in names]
            if unknown or not variants:
                raise ValueError(f"{self.name}: variants must name some of {names}; got {list(variants)}")
            chosen = tuple(v for v in self.variants if v.name in set(variants))
        opts = self.resolved_options(preset, backbones)
        base = PipelineConfig.resolve(p.get("pipeline_preset", preset))
        layers = [_coverage_settings(dict(self.settings)), dict(p.get("settings", {})), dict(overrides or {})]
        cells: List[Cell] = []
        for ds in ds_list:
            for bb in bb_list:
                for v in chosen:
                    specs = v.methods(methods_all)
                    if not specs:
                        continue
                    settings = _coverage_settings(dict(v.settings))
                    if settings.get("joint_backbones") == "@joint_with":
                        others = [b for b in opts["joint_with"] if b != bb]
                        if not others:
                            if check_only:
                                others = ["dummy-1"]
                            else:
                                raise ValueError(
                                    f"{self.name}: the joint dictionary of backbone {bb!r} needs another "
                                    "backbone; give two or more with --backbones (joint set now "
                                    f"{opts['joint_with']})"
                                )
                        settings["joint_backbones"] = others
                    cell = {**settings, "dataset": ds, "backbone": bb, "selector.method": list(specs)}
                    try:
                        cfg = base
                        for layer in (*layers, cell):
                            cfg = cfg.with_settings(layer)
                    except (TypeError, ValueError) as exc:
                        raise ValueError(f"{self.name} / {v.name}: {exc}") from None
                    shown = cfg.key_dict()["backbone"]  # a model URL without credentials or client options
                    cid = "__".join(_safe(x) for x in (ds, shown, v.name))
                    cells.append(Cell(self.name, cid, ds, bb, v, cfg, tuple(m.name for m in specs), opts))
        return cells
