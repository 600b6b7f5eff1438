"""Named evaluation configurations: what is stored (the collection) and how it is searched.

Each preset adds one stage to the one before, so that the evaluation can state each stage's
gain or loss:

    chunks512 / chunks256   naive baseline: fixed-size token chunks, dense top-k, no windows
    window_nomerge          naive baseline: dense top-k sentences, each sent as its window of 3
                            (clamped at the section), overlapping windows NOT merged (LlamaIndex
                            SentenceWindowNodeParser + MetadataReplacementPostProcessor)
    (the baselines and sentence … rse embed sentences alone, as the peers and the earlier report did)
    sentence                sentences, dense top-k, no windows
    window                  + sentence windows (3 each side, clamped at the section), merged
    hybrid                  + BM25 fused with dense by Reciprocal Rank Fusion
    rerank                  + cross-encoder over the top 20 windows
    rse                     + Relevant Segment Extraction (trims windows to their relevant core)
    windows                 the library defaults with fixed merged windows (selection="windows")
    rse_off                 sentence values, ±3 windows around the best sentences (selection="value_windows")
    full_no_abstain         the library defaults without abstention (min_relevance null)
    full_no_headers         the library defaults over sentences embedded without contextual headers
    full                    the library defaults: PipelineOptions() field by field

Every preset takes a token budget (``token_budget``; ``windowrag eval --token-budget N`` or
``--budgets ...`` sets it for any preset). The baselines without sentences to trim (chunks,
no-merge windows) keep whole contexts in rank order while they fit and cut the next one at a
token boundary of the embedder's tokenizer (evaluation/budget.py).

A configuration can also be read from a JSON file: ``{"name": ..., "collection": {"unit":
"sentence" | "chunk", "chunk_tokens": 512, "contextual_headers": false}, "k": 5, "window": 3,
"mode": "hybrid", "rerank": true, "rse": "balanced" | null | {"preset": "balanced",
"irrelevant_sentence_penalty": 0.2, ...}, "selection": "segments" | "windows" | "value_windows", ...}``; keys
left out take the defaults below, and ``"base": "NAME"`` starts from a preset instead.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..embed import DEFAULT_EMBEDDER_MODEL_ID
from ..pipeline import SELECTIONS, PipelineOptions
from ..segment.rse import RSEParams, get_params
from ..store.collections import DEFAULT_CONTEXTUAL_HEADERS

UNITS = ("sentence", "chunk")
# EvalConfig fields that are Pipeline options (the rest say what is stored or which searcher runs)
PIPELINE_FIELDS = ("k", "window", "mode", "candidates", "rrf_k", "rerank", "rerank_candidates", "rerank_tokens",
                   "rerank_token_budget", "max_sentences", "rse", "token_budget", "clamp", "order", "selection",
                   "min_relevance", "verify_below", "verify_min_score", "sentence_floor", "radius")


class ConfigError(ValueError):
    """A configuration that cannot be used; the message says which field and why."""


@dataclass(frozen=True, slots=True)
class CollectionSettings:
    """How documents are stored: the retrieval unit and what is embedded with it."""

    unit: str = "sentence"
    chunk_tokens: int | None = None
    contextual_headers: bool = DEFAULT_CONTEXTUAL_HEADERS

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise ConfigError(f"collection.unit must be one of {', '.join(UNITS)}, not {self.unit!r}")
        if self.unit == "chunk":
            if not isinstance(self.chunk_tokens, int) or not 8 <= self.chunk_tokens <= 512:
                raise ConfigError(f"collection.chunk_tokens must be an integer in 8..512 for chunks, "
                                  f"not {self.chunk_tokens!r}")
        elif self.chunk_tokens is not None:
            raise ConfigError("collection.chunk_tokens is only for unit 'chunk'")

    @property
    def tag(self) -> str:
        """Short name of the unit settings: "sentence", "chunks512", "sentence_headers"."""
        base = f"chunks{self.chunk_tokens}" if self.unit == "chunk" else "sentence"
        return f"{base}_headers" if self.contextual_headers else base

    def collection_name(self, dataset: str, model_id: str | None = None) -> str:
        """The collection a dataset is ingested into with these settings: eval_<dataset>_<tag>, and
        _<model> for another embedder than the default (a collection holds one model's vectors)."""
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", dataset).strip("-") or "data"
        name = f"eval_{safe}_{self.tag}"
        if model_id is None or model_id == DEFAULT_EMBEDDER_MODEL_ID:
            return name
        # the end of the name (a path's last folders) and a hash of all of it: short, one per model
        model = re.sub(r"[^A-Za-z0-9_.-]+", "-", model_id.removeprefix("st:"))[-40:].strip("-")
        return f"{name}_{model}-{hashlib.sha1(model_id.encode()).hexdigest()[:8]}"


@dataclass(frozen=True, slots=True)
class EvalConfig:
    """One evaluated configuration: collection settings plus Pipeline options."""

    name: str
    description: str = ""
    collection: CollectionSettings = field(default_factory=CollectionSettings)
    k: int = 5
    window: int = 3
    mode: str = "hybrid"
    candidates: int = 50
    rrf_k: int = 60
    rerank: bool = False
    rerank_candidates: int = 20
    rerank_tokens: int | None = 384
    rerank_token_budget: int | None = 1500
    max_sentences: int | None = None
    rse: str | RSEParams | None = None
    token_budget: int | None = None
    clamp: str = "section"
    order: str = "score"
    # "windows": fixed ±window merged windows (the ablation presets); "segments": value-based
    # selection under the token budget (the library default once it exists)
    selection: str = "windows"
    min_relevance: float | None = None
    # from min_relevance up to verify_below the cross-encoder checks the best sentences (PipelineOptions)
    verify_below: float | None = PipelineOptions().verify_below
    verify_min_score: float = PipelineOptions().verify_min_score
    # selection "segments" only: the price of a sentence, and how far from a hit it may be sent
    sentence_floor: float = 0.0
    radius: int = 6
    # False: the no-merge sentence-window baseline (each hit's window its own context)
    merge_windows: bool = True

    def __post_init__(self) -> None:
        budget = self.token_budget
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
            raise ConfigError(f"config {self.name!r}: token_budget must be a positive integer or null, not {budget!r}")
        for name in ("verify_below", "verify_min_score"):
            value = getattr(self, name)
            if (value is not None or name == "verify_min_score") and (
                    isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1):
                raise ConfigError(f"config {self.name!r}: {name} must be a number in [0, 1]"
                                  f"{' or null' if name == 'verify_below' else ''}, not {value!r}")
        if self.selection not in SELECTIONS:
            raise ConfigError(f"config {self.name!r}: selection must be one of {', '.join(SELECTIONS)}, "
                              f"not {self.selection!r}")
        relevance = self.min_relevance
        if relevance is not None:
            if isinstance(relevance, bool) or not isinstance(relevance, (int, float)) or not 0 <= relevance <= 1:
                raise ConfigError(f"config {self.name!r}: min_relevance must be a number in [0, 1] or null, "
                                  f"not {relevance!r}")
            if self.collection.unit == "chunk" or not self.merge_windows:
                raise ConfigError(f"config {self.name!r}: min_relevance needs the pipeline (the chunk and "
                                  "no-merge baselines never abstain)")
        if self.collection.unit == "chunk":
            if self.window != 0:
                raise ConfigError(f"config {self.name!r}: a chunk collection needs window 0 "
                                  "(the chunk is the unit; no neighbours are added)")
            if self.rerank or self.rse is not None:
                raise ConfigError(f"config {self.name!r}: chunk collections are the naive baseline: "
                                  "top-k chunks only (no rerank or RSE)")
        if not self.merge_windows:
            if self.collection.unit != "sentence" or self.window < 1 or self.rerank or self.rse is not None:
                raise ConfigError(f"config {self.name!r}: merge_windows false is the no-merge sentence-window "
                                  "baseline: sentence collection, window >= 1, no rerank or RSE")
        if self.rse is not None:
            get_params(self.rse)  # raises on an unknown preset name

    @property
    def searcher(self) -> str:
        """Who searches: "chunks" and "window_nomerge" (evaluation/baselines.py) or "pipeline"."""
        if self.collection.unit == "chunk":
            return "chunks"
        return "pipeline" if self.merge_windows else "window_nomerge"

    def pipeline_options(self) -> dict[str, Any]:
        """Keyword arguments of Pipeline.search (besides query and filters)."""
        return {name: getattr(self, name) for name in PIPELINE_FIELDS}

    def replace(self, **changes: Any) -> EvalConfig:
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        data["collection"] = dataclasses.asdict(self.collection)
        if isinstance(self.rse, RSEParams):
            data["rse"] = dataclasses.asdict(self.rse)
        return data


# Sentences embedded alone: what the peers embed (the baselines), and the earlier report's presets.
BARE_SENTENCES = CollectionSettings(contextual_headers=False)


def library_defaults() -> dict[str, Any]:
    """PipelineOptions() as EvalConfig fields: what windowrag_pg.search does when told nothing."""
    defaults = PipelineOptions()
    return {name: getattr(defaults, name) for name in PIPELINE_FIELDS}


PRESETS: dict[str, EvalConfig] = {
    "chunks512": EvalConfig(
        "chunks512", "fixed 512-token chunks, dense top-k (naive baseline)",
        collection=CollectionSettings(unit="chunk", chunk_tokens=512, contextual_headers=False), window=0,
        mode="dense"),
    "chunks256": EvalConfig(
        "chunks256", "fixed 256-token chunks, dense top-k (naive baseline)",
        collection=CollectionSettings(unit="chunk", chunk_tokens=256, contextual_headers=False), window=0,
        mode="dense"),
    "window_nomerge": EvalConfig(
        "window_nomerge", "dense top-k sentences, each as its window of 3, not merged (LlamaIndex-style baseline)",
        collection=BARE_SENTENCES, window=3, mode="dense", merge_windows=False),
    "sentence": EvalConfig("sentence", "sentences, dense top-k, no window", collection=BARE_SENTENCES, window=0,
                           mode="dense"),
    "window": EvalConfig("window", "sentences, dense, window 3", collection=BARE_SENTENCES, window=3, mode="dense"),
    "hybrid": EvalConfig("hybrid", "sentences, BM25 + dense (RRF), window 3", collection=BARE_SENTENCES, window=3,
                         mode="hybrid"),
    "rerank": EvalConfig("rerank", "hybrid + cross-encoder over the top 20 windows", collection=BARE_SENTENCES,
                         window=3, mode="hybrid", rerank=True),
    "rse": EvalConfig("rse", "rerank + RSE (balanced)", collection=BARE_SENTENCES, window=3, mode="hybrid",
                      rerank=True, rse="balanced"),
    # Today's fixed windows at the library's other defaults (its token budget included), so that
    # `windows` against `full` is the value-based selection's gain at equal tokens.
    "windows": EvalConfig("windows", "library defaults with fixed merged windows: hybrid, window 3, 20 candidates",
                          **{**library_defaults(), "selection": "windows", "window": 3, "mode": "hybrid",
                             "candidates": 20, "rerank": False, "rse": None, "min_relevance": None}),
    # RSE off: the same sentence values, but ±3 windows around the best sentences (merged) instead
    # of the best runs; without abstention, so `windows` → `rse_off` is what the sentence values
    # add and `rse_off` → `full_no_abstain` what RSE adds, at equal tokens.
    "rse_off": EvalConfig("rse_off", "sentence values with fixed ±3 windows around the best sentences (RSE off)",
                          **{**library_defaults(), "selection": "value_windows", "window": 3, "min_relevance": None}),
    # The defaults without abstention: `full_no_abstain` against `full` is what abstaining costs
    # in-corpus, and its rows let any min_relevance be simulated (benchmarks/budget_report.py).
    "full_no_abstain": EvalConfig("full_no_abstain", "the library defaults without abstention (min_relevance null)",
                                  **{**library_defaults(), "min_relevance": None}),
    # The defaults over sentences embedded alone: `full_no_headers` against `full` is what the
    # contextual headers (embed/headers.py) add at equal tokens.
    "full_no_headers": EvalConfig("full_no_headers", "the library defaults, sentences embedded without their headers",
                                  collection=BARE_SENTENCES, **library_defaults()),
    # Whatever windowrag_pg.search does by default (a test holds them equal field by field).
    "full": EvalConfig("full", "the library defaults (PipelineOptions())", **library_defaults()),
}

ORDER = tuple(PRESETS)


def get_config(name_or_path: str | Path | EvalConfig) -> EvalConfig:
    """A preset by name, or a configuration read from a JSON file."""
    if isinstance(name_or_path, EvalConfig):
        return name_or_path
    key = str(name_or_path)
    if key in PRESETS:
        return PRESETS[key]
    path = Path(key)
    if path.suffix.lower() == ".json" or path.is_file():
        return load_config(path)
    raise ConfigError(f"unknown configuration {key!r}: use one of {', '.join(PRESETS)} or a JSON file")


def load_config(path: str | Path) -> EvalConfig:
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read configuration {path}: {exc.strerror or exc}") from exc
    except json.JSONDecodeError as exc:
        raise ConfigError(f"configuration {path} is not valid JSON: {exc}") from exc
    return config_from_dict(data, default_name=path.stem)


def config_from_dict(data: Any, *, default_name: str = "custom") -> EvalConfig:
    if not isinstance(data, dict):
        raise ConfigError("a configuration must be a JSON object")
    data = dict(data)
    base_name = data.pop("base", None)
    if base_name is not None:
        if base_name not in PRESETS:
            raise ConfigError(f"unknown base preset {base_name!r}")
        base = PRESETS[base_name]
    else:
        base = EvalConfig(default_name)
    known = {f.name for f in dataclasses.fields(EvalConfig)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"unknown configuration keys: {', '.join(unknown)}")
    changes: dict[str, Any] = {"name": data.pop("name", default_name if base_name is None else base.name)}
    if "collection" in data:
        coll = data.pop("collection")
        if not isinstance(coll, dict):
            raise ConfigError("'collection' must be an object")
        bad = sorted(set(coll) - {"unit", "chunk_tokens", "contextual_headers"})
        if bad:
            raise ConfigError(f"unknown collection keys: {', '.join(bad)}")
        changes["collection"] = dataclasses.replace(base.collection, **coll)
    if "rse" in data:
        changes["rse"] = _rse_from_json(data.pop("rse"))
    changes.update(data)
    try:
        return dataclasses.replace(base, **changes)
    except TypeError as exc:
        raise ConfigError(str(exc)) from exc


def _rse_from_json(value: Any) -> str | RSEParams | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict):
        value = dict(value)
        base = get_params(value.pop("preset", "balanced"))
        try:
            return base.replace(**value)
        except TypeError as exc:
            raise ConfigError(f"rse: {exc}") from exc
    raise ConfigError("'rse' must be null, a preset name or an object of RSE parameters")
