"""Pluggable policies, registered by name: autoscalers, routers (region / endpoint / instance), schedulers.

A later policy is one family module or folder (its classes decorated ``@register(PolicyKind.X, "name")``) plus its
names in ``registry.WHERE``; the loop never changes. Families are imported on first use (registry.py).
"""

from simulations.engine.policies.registry import (  # noqa: F401
    AUTOSCALERS,
    ENDPOINT_ROUTERS,
    FAMILIES,
    INSTANCE_ROUTERS,
    REGION_ROUTERS,
    SCHEDULERS,
    PolicyKind,
    get_policy,
    load_all,
    register,
)
