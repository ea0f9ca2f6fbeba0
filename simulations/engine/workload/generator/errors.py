"""The generator's one error type: what is wrong, where in the spec, and how to fix it."""

from __future__ import annotations


class GeneratorError(ValueError):
    """A workload spec the user can fix. ``where`` is the spec path (``lengths.input.lognormal.sigma``)."""

    def __init__(self, message: str, *, where: str = "spec", hint: str = "") -> None:
        self.message = message
        self.where = where
        self.hint = hint
        super().__init__(f"{message} (fix: {hint})" if hint else message)

    def as_dict(self) -> dict:
        return {"message": self.message, "where": self.where, "hint": self.hint}
