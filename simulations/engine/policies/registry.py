"""Name -> policy class registries, keyed by an enum of policy kinds."""

from __future__ import annotations

from enum import Enum

from simulations.engine.config import ScenarioError


class PolicyKind(str, Enum):
    AUTOSCALER = "autoscaler"
    REGION_ROUTER = "region_router"
    ENDPOINT_ROUTER = "endpoint_router"
    INSTANCE_ROUTER = "instance_router"
    SCHEDULER = "scheduler"


AUTOSCALERS: dict = {}
REGION_ROUTERS: dict = {}
ENDPOINT_ROUTERS: dict = {}
INSTANCE_ROUTERS: dict = {}
SCHEDULERS: dict = {}

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
        if name in table and table[name] is not cls:
            raise RuntimeError(f"{kind.value} {name!r} registered twice")
        table[name] = cls
        cls.policy_name = name
        return cls

    return deco


def get_policy(kind: PolicyKind, name: str):
    table = _TABLES[kind]
    try:
        return table[name]
    except KeyError:
        raise ScenarioError(f"strategy.{kind.value}", f"unknown {kind.value} {name!r}; known: {sorted(table)}") from None
