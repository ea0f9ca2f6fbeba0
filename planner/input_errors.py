"""Bad input -> the API's one error shape, ``{"error": {"message", "where", "hint", "fields"}}`` with a 400.

The cores raise their own errors naming the field (``ScenarioError`` of the engine and of the optimiser,
``SpecError`` of the synthesiser); the Django layer words them here, once, for the API, the pages and the
jobs. ``fields`` keeps the older ``{"scenario.<path>": message}`` map for clients that read it.
"""

from __future__ import annotations

from rest_framework.exceptions import ValidationError


def input_error(where: str, message: str, hint: str = "") -> ValidationError:
    return ValidationError({"error": {"message": f"{where}: {message}" if where else message, "where": where,
                                      "hint": hint, "fields": {where or "request": message}}})


def scenario_error(exc, prefix: str = "scenario") -> ValidationError:
    """A ScenarioError (engine or optimiser) as a 400 naming ``<prefix>.<field>``."""
    where = f"{prefix}.{exc.field}" if prefix else exc.field
    return input_error(where, exc.message, getattr(exc, "hint", "") or "")
