"""The capacity search's input: one schema, parsed once at the boundary (pydantic). Django-free.

The scenario itself is an engine / comparison scenario and is checked by its own schema (the Django layer calls
the comparison's ``validate_scenario``); this schema covers what the search adds.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import Field, ValidationError, field_validator

from planner.inputs import Strict, explain

TIERS = ("IW-F", "IW-N", "NIW")
DEFAULT_TARGETS = {"IW-F": 0.99, "IW-N": 0.99, "NIW": 0.99}
Share = Annotated[float, Field(gt=0.0, le=1.0)]
Seed = Annotated[int, Field(ge=0, le=2**31 - 1)]


class SpecError(ValueError):
    def __init__(self, where: str, message: str, hint: str = "") -> None:
        super().__init__(f"{where}: {message}")
        self.where, self.message, self.hint = where, message, hint


DeploymentName = Annotated[str, Field(min_length=1, max_length=200)]


class KVLinkSpec(Strict):
    """The link the KV caches cross between the two pools (docs/disaggregation.md: link classes)."""

    link_class: Literal["nvlink", "infiniband", "infiniband-hdr", "ethernet"] = "infiniband"
    bandwidth_gb_s: float | None = Field(default=None, gt=0.0, le=1e5, description="GB/s between two instances; "
                                         "default the link class's figure")
    latency_s: float | None = Field(default=None, ge=0.0, le=10.0)


class MixedPoolSpec(Strict):
    """Splitwise's mixed pool for the searched pools (docs/disaggregation.md): a decode instance takes a prompt
    while the prefill instance's queue exceeds this many tokens."""

    prefill_queue_tokens: int = Field(default=8192, ge=1, le=10**12, strict=True)


class DisaggOption(Strict):
    """Disaggregated serving to try for one model: the deployments (GPU types) of each pool; every pair is a
    candidate, its P/D ratio searched."""

    prefill: list[DeploymentName] = Field(min_length=1, max_length=3, description="deployments for the prefill pool")
    decode: list[DeploymentName] = Field(min_length=1, max_length=3, description="deployments for the decode pool")
    kv_link: KVLinkSpec | None = None
    mixed_pool: MixedPoolSpec | None = None


class SearchSpec(Strict):
    """What to search: strategies (each with its own fleet), SLO targets and how sure the answer must be."""

    strategies: list[Annotated[str, Field(min_length=1, max_length=80)]] = Field(
        default_factory=lambda: ["static"], min_length=1, max_length=8,
        description="strategies (static, reactive-unified, lt-ua, ...) or strategy bundles (chiron.default, ...)")
    targets: dict[str, Share] = Field(default_factory=lambda: dict(DEFAULT_TARGETS),
                                      description="per tier: the share of requests that must meet its SLO")
    probability: float = Field(default=0.9, ge=0.5, le=1.0,
                               description="required share of workload seeds on which every target is met")
    seeds: list[Seed] = Field(default_factory=lambda: [1, 2, 3], min_length=1, max_length=10,
                              description="workload seeds the search decides on")
    band_draws: int = Field(default=20, ge=0, le=50, description="new seeds the chosen fleets are replayed on")
    gpu_options: dict[str, list[Annotated[str, Field(min_length=1, max_length=200)]]] = Field(
        default_factory=dict, description="per model: the deployments (GPU types) to try; default the scenario's")
    disaggregated: dict[str, DisaggOption] = Field(
        default_factory=dict, description="per model: also try prefill/decode disaggregated serving with these "
                                          "pools' deployments (the search chooses aggregated or not, the P/D ratio "
                                          "and the GPU types)")
    quota_gpus: dict[str, Annotated[int, Field(ge=0, le=10_000_000)]] = Field(
        default_factory=dict, description="per region: most GPUs the fleet may hold")
    load_sensitivity: float = Field(default=1.2, gt=1.0, le=3.0, description="load factor of the sensitivity check")
    max_fixups: int = Field(default=2, ge=0, le=5)
    start_plan: int | None = Field(default=None, ge=1, description="a solved capacity plan of the team: the search "
                                   "starts from its instance counts (peak per region and model for a static fleet, "
                                   "mean for an autoscaler's floor) instead of the goodput estimate")
    mode: Literal["search", "check"] = Field(
        default="search", description="search: the fewest instances per strategy; check: replay the scenario's own "
                                      "fleet (initial counts) for its bands, e.g. a capacity plan's")

    @field_validator("targets")
    @classmethod
    def _tiers(cls, value: dict) -> dict:
        bad = [k for k in value if k not in TIERS]
        if bad:
            raise ValueError(f"unknown tier {bad[0]!r}; use {', '.join(TIERS)}")
        return value

    @field_validator("seeds", "strategies")
    @classmethod
    def _distinct(cls, value: list) -> list:
        if len(set(value)) != len(value):
            raise ValueError("must be distinct")
        return value

    @property
    def band_seeds(self) -> list[int]:
        """New seeds, none of them a search seed."""
        first = max(self.seeds) + 1
        return list(range(first, first + self.band_draws))


def parse_spec(data: dict) -> SearchSpec:
    try:
        return SearchSpec.model_validate(data)
    except ValidationError as exc:
        where, message, hint = explain(exc)
        raise SpecError(where, message, hint) from None


def search_fleets_bound(upper: int) -> int:
    """Most fleets a group's count search probes between 1 and ``upper`` (search.min_counts): galloping away from
    its start by 1, 2, 4 ... (or jumping to the ceiling) takes up to ceil(log2 upper) fleets, bisecting the last
    bracket as many again (the exhaustive worst case over every start and answer is checked by a test)."""
    return max(1, 2 * math.ceil(math.log2(max(1, upper))))


def probes_upper_bound(spec: SearchSpec, upper: int, options: int, pairs: int = 0) -> int:
    """Most probes the search can run: per (strategy, GPU option) the search's fleets, the joint answer and its
    fix-ups on every search seed, the bands, the load check; plus one checked mix per strategy. A disaggregated
    pair's sub-search bisects its decode pools after its prefill pools: twice the search's fleets."""
    bisect = search_fleets_bound(upper)
    extra = spec.band_draws + len(spec.seeds)
    per_sub = (bisect + spec.max_fixups + 1) * len(spec.seeds) + extra
    per_pair = (2 * bisect + spec.max_fixups + 1) * len(spec.seeds) + extra
    mixes = len(spec.strategies) * (len(spec.seeds) + spec.band_draws) if options > 1 else 0
    return len(spec.strategies) * (options * per_sub + pairs * per_pair) + mixes
