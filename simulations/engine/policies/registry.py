"""Name -> policy class registries, keyed by an enum of policy kinds, loaded on first use.

A policy family is one module (or folder) under ``simulations/engine/policies/`` whose classes carry
``@register(PolicyKind.X, "name")``, plus one line per name in ``WHERE`` below. ``WHERE`` lets a run import only the
families it uses (a scenario naming ``reactive-unified`` never imports Chiron's or AIBrix's code); listing every name
of a kind (forms, "known: ..." hints) imports every family. ``simulations/tests/test_policy_registry.py`` checks that
``WHERE`` names exactly the modules that register each policy.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from enum import Enum

from simulations.engine.scenario.errors import ScenarioError

PACKAGE = "simulations.engine.policies"


class PolicyKind(str, Enum):
    AUTOSCALER = "autoscaler"
    REGION_ROUTER = "region_router"
    ENDPOINT_ROUTER = "endpoint_router"
    INSTANCE_ROUTER = "instance_router"
    SCHEDULER = "scheduler"


# name -> the family module (relative to this package) whose import registers it
WHERE: dict[PolicyKind, dict[str, str]] = {
    PolicyKind.AUTOSCALER: {
        "static": "autoscalers", "peak": "autoscalers", "reactive-unified": "autoscalers",
        "reactive-siloed": "autoscalers", "reactive-unified-niwq": "niw_queue",
        "lt-i": "longterm", "lt-u": "longterm", "lt-ua": "longterm",
        "llumnix": "baselines", "static-n": "baselines", "llumnix-migrate": "llumnix_migration",
        "chiron": "chiron", "llumnix-batch": "chiron",
        "preserve": "preserve", "preserve-router": "preserve", "preserve-forecast": "preserve",
        "preserve-hybrid": "preserve", "preserve-reactive": "preserve",
        "hpa": "hpa", "knative-kpa": "knative_kpa", "aibrix-apa": "aibrix", "aibrix-kpa": "aibrix",
        "llmd-wva": "llmd_wva", "dynamo-planner": "dynamo_planner", "as-run": "recorded",
        "example-kv-cap": "example",
    },
    PolicyKind.REGION_ROUTER: {"sageserve": "routers", "local": "routers", "round-robin": "routers"},
    PolicyKind.ENDPOINT_ROUTER: {"least-utilised": "routers", "round-robin": "routers"},
    PolicyKind.INSTANCE_ROUTER: {
        "jsq-tokens": "routers", "least-kv": "routers", "round-robin": "routers",
        "llumnix": "baselines", "least-requests": "baselines", "memory-usage": "baselines",
        "gpu-memory-usage": "baselines", "llumnix-approx": "chiron",
    },
    PolicyKind.SCHEDULER: {"fcfs": "schedulers", "edf": "schedulers", "pf": "schedulers", "dpa": "schedulers"},
}
FAMILIES: tuple[str, ...] = tuple(sorted({m for names in WHERE.values() for m in names.values()}))


def load_all() -> None:
    """Import every family (each registers its policies once; a second call costs a dict look-up per family)."""
    for family in FAMILIES:
        importlib.import_module(f"{PACKAGE}.{family}")


class PolicyTable(Mapping):
    """The registered classes of one kind. A look-up by name imports only the family ``WHERE`` names (every family
    for a name it does not know); iterating or counting imports every family."""

    def __init__(self, kind: PolicyKind) -> None:
        self.kind = kind
        self._classes: dict[str, type] = {}

    def add(self, name: str, cls: type) -> None:
        if name in self._classes and self._classes[name] is not cls:
            raise RuntimeError(f"{self.kind.value} {name!r} registered twice")
        self._classes[name] = cls

    def __getitem__(self, name: str) -> type:
        cls = self._classes.get(name)
        if cls is None:
            family = WHERE[self.kind].get(name) if isinstance(name, str) else None
            if family is not None:
                importlib.import_module(f"{PACKAGE}.{family}")
            else:
                load_all()
            cls = self._classes[name]  # KeyError: not a policy of this kind
        return cls

    def __iter__(self) -> Iterator[str]:
        load_all()
        return iter(dict(self._classes))

    def __len__(self) -> int:
        load_all()
        return len(self._classes)

    def __repr__(self) -> str:
        return f"PolicyTable({self.kind.value}: {sorted(self._classes)} loaded)"


AUTOSCALERS = PolicyTable(PolicyKind.AUTOSCALER)
REGION_ROUTERS = PolicyTable(PolicyKind.REGION_ROUTER)
ENDPOINT_ROUTERS = PolicyTable(PolicyKind.ENDPOINT_ROUTER)
INSTANCE_ROUTERS = PolicyTable(PolicyKind.INSTANCE_ROUTER)
SCHEDULERS = PolicyTable(PolicyKind.SCHEDULER)

_TABLES = {
    PolicyKind.AUTOSCALER: AUTOSCALERS,
    PolicyKind.REGION_ROUTER: REGION_ROUTERS,
    PolicyKind.ENDPOINT_ROUTER: ENDPOINT_ROUTERS,
    PolicyKind.INSTANCE_ROUTER: INSTANCE_ROUTERS,
    PolicyKind.SCHEDULER: SCHEDULERS,
}


def register(kind: PolicyKind, name: str):
    table = _TABLES[kind]

    def deco(cls):
        table.add(name, cls)
        cls.policy_name = name
        return cls

    return deco


def get_policy(kind: PolicyKind, name: str):
    table = _TABLES[kind]
    try:
        return table[name]
    except KeyError:
        raise ScenarioError(f"strategy.{kind.value}", f"unknown {kind.value} {name!r}; known: {sorted(table)}") from None
