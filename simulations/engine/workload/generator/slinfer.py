"""Reader for the SLINFER artefact's function traces (BarrinXu/SLINFER, SLINFER_core/tools/trace/).

A file is a JSON list of functions ``{HashFunction, rpm_list, total_cnt, timestamps: [s], input: [tokens],
output: [tokens]}`` (fixtures/traces/slinfer/SOURCES.md). Every function becomes a model of its own: SLINFER
serves one model instance per function, so N functions means N models to place.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from simulations.engine.workload.generator.errors import GeneratorError
from simulations.engine.workload.generator.spec import SlinferSpec

BUNDLED = Path(__file__).resolve().parents[4] / "fixtures" / "traces" / "slinfer"
SUFFIX = "_timestamps.json"


def bundled_traces() -> list[str]:
    """Names usable as ``trace`` (file names without ``_timestamps.json``)."""
    return sorted(p.name[: -len(SUFFIX)] for p in BUNDLED.glob(f"*{SUFFIX}"))


def _source(spec: SlinferSpec) -> Path:
    if spec.trace is not None:
        if spec.trace not in bundled_traces():
            raise GeneratorError(f"no bundled SLINFER trace {spec.trace!r}", where="trace",
                                 hint=f"one of {', '.join(bundled_traces())}")
        return BUNDLED / f"{spec.trace}{SUFFIX}"
    path = Path(spec.path or "")
    if not path.is_file():
        raise GeneratorError(f"{path} does not exist", where="path", hint="point at a *_timestamps.json file")
    return path


def read_functions(path: Path) -> list[dict]:
    try:
        data = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise GeneratorError(f"{path.name} is not JSON ({exc})", where="trace",
                             hint="a SLINFER *_timestamps.json file") from None
    if not isinstance(data, list) or not data:
        raise GeneratorError(f"{path.name} is not a non-empty list of functions", where="trace",
                             hint="a SLINFER *_timestamps.json file")
    for i, fn in enumerate(data):
        where = f"trace[{i}]"
        if not isinstance(fn, dict) or not all(k in fn for k in ("timestamps", "input", "output")):
            raise GeneratorError("a function needs timestamps, input and output lists", where=where,
                                 hint="a SLINFER *_timestamps.json file")
        if not len(fn["timestamps"]) == len(fn["input"]) == len(fn["output"]):
            raise GeneratorError("timestamps, input and output differ in length", where=where,
                                 hint="one entry per request in each list")
    return data


def read(spec: SlinferSpec) -> pd.DataFrame:
    functions = read_functions(_source(spec))
    chosen = functions[spec.first_function:]
    if spec.functions is not None:
        if spec.functions > len(chosen):
            raise GeneratorError(f"asks for {spec.functions} functions from index {spec.first_function}; the "
                                 f"trace has {len(functions)}", where="functions", hint="ask for fewer")
        chosen = chosen[: spec.functions]
    if not chosen:
        raise GeneratorError("no function selected", where="first_function", hint=f"below {len(functions)}")
    if spec.models is not None and len(spec.models) != len(chosen):
        raise GeneratorError(f"models names {len(spec.models)} models for {len(chosen)} functions",
                             where="models", hint="one name per selected function, in order")
    names = spec.models or [f"{spec.model_prefix}{spec.first_function + i:03d}" for i in range(len(chosen))]
    if len(set(names)) != len(names):
        raise GeneratorError("models repeats a name", where="models", hint="each function is a model of its own")
    try:
        arrival = np.concatenate([np.asarray(fn["timestamps"], dtype=np.float64) for fn in chosen])
        inp = np.concatenate([np.asarray(fn["input"], dtype=np.int64) for fn in chosen])
        out = np.concatenate([np.asarray(fn["output"], dtype=np.int64) for fn in chosen])
    except (TypeError, ValueError):
        raise GeneratorError("timestamps, input and output must be numbers", where="trace",
                             hint="a SLINFER *_timestamps.json file") from None
    if not np.isfinite(arrival).all() or (arrival < 0).any() or (inp < 0).any() or (out < 0).any():
        raise GeneratorError("negative or non-finite values", where="trace", hint="a SLINFER *_timestamps.json file")
    model = np.repeat(np.arange(len(chosen)), [len(fn["timestamps"]) for fn in chosen])
    frame = pd.DataFrame({
        "arrival_s": arrival,
        "input_tokens": np.clip(inp, 0, 2**31 - 1).astype(np.int32),
        "output_tokens": np.clip(out, 0, 2**31 - 1).astype(np.int32),
        "model": pd.Categorical.from_codes(model, categories=names),
    })
    if spec.duration_s is not None:
        frame = frame[frame["arrival_s"] < spec.duration_s]
    return frame
