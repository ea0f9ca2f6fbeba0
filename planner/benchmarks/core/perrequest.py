"""Per-request benchmark files: vLLM's ``vllm bench serving`` / ``benchmark_serving.py`` result JSON, and a plain
CSV or JSONL with one request per line.

Plain columns (seconds): ``arrival_s, input_tokens, output_tokens, ttft_s, e2e_s`` (optional ``itl_s``, not used).
LLMServingSim's ``requests.jsonl`` names are read too: ``input_toks, output_toks, arrival_time, queued_ts,
first_token_ts, last_token_ts`` (TTFT and E2E from the server's queue time). Arrivals are taken relative to the
first one. The run is replayed request by request (load type ``trace``). The vLLM JSON stores no arrivals: its
requests are re-sent as a Poisson process at its ``request_rate`` (load type ``poisson``), in their order.
"""

from __future__ import annotations

import csv
import io
import json
import math

from planner.benchmarks.core.errors import BenchmarkError
from planner.benchmarks.core.inferenceperf import validate_run
from planner.benchmarks.core.schema import BenchmarkRun

MAX_REQUESTS = 200_000
ALIASES = {"input_toks": "input_tokens", "output_toks": "output_tokens", "prompt_tokens": "input_tokens",
           "completion_tokens": "output_tokens", "ttft": "ttft_s", "e2e": "e2e_s", "arrival": "arrival_s"}


def _stats(x: list[float]) -> dict:
    s = sorted(x)

    def pct(q):
        k = (len(s) - 1) * q / 100
        lo = math.floor(k)
        hi = min(lo + 1, len(s) - 1)
        return s[lo] + (s[hi] - s[lo]) * (k - lo)

    return {"mean": sum(s) / len(s), "p50": pct(50), "p90": pct(90), "p99": pct(99)}


def _number(value, file: str, line: int, field: str, *, integer: bool = False, minimum: float = 0.0) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise BenchmarkError(f"must be a number, got {value!r}", file=file, field=f"line {line}, {field}") from None
    if not math.isfinite(x) or x < minimum:
        raise BenchmarkError(f"must be >= {minimum:g}, got {value!r}", file=file, field=f"line {line}, {field}",
                             hint="times are seconds from the start of the run; token counts are positive")
    if integer and x != int(x):
        raise BenchmarkError(f"must be a whole number, got {value!r}", file=file, field=f"line {line}, {field}")
    return x


def _rows(raw: bytes, file: str) -> list[tuple[int, dict]]:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise BenchmarkError("is not UTF-8 text", file=file) from None
    if file.endswith(".csv"):
        reader = csv.DictReader(io.StringIO(text))
        return [(i + 2, row) for i, row in enumerate(reader)]
    out = []
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            raise BenchmarkError("is not a JSON object", file=file, field=f"line {i}") from None
        if not isinstance(obj, dict):
            raise BenchmarkError("is not a JSON object", file=file, field=f"line {i}")
        out.append((i, obj))
    return out


def parse_requests(raw: bytes, file: str, engine: dict, *, name: str = "") -> BenchmarkRun:
    rows = _rows(raw, file)
    if not rows:
        raise BenchmarkError("has no requests", file=file, hint="one request per line after the header")
    if len(rows) > MAX_REQUESTS:
        raise BenchmarkError(f"has {len(rows):,} requests; the limit is {MAX_REQUESTS:,}", file=file,
                             hint="upload a sample of the run")
    cols = {"arrival_s": [], "input_tokens": [], "output_tokens": [], "ttft_s": [], "e2e_s": []}
    for line, row in rows:
        row = {ALIASES.get(k, k): v for k, v in row.items()}
        if "queued_ts" in row and "first_token_ts" in row:  # LLMServingSim requests.jsonl
            q = _number(row["queued_ts"], file, line, "queued_ts")
            row["ttft_s"] = _number(row["first_token_ts"], file, line, "first_token_ts") - q
            row["e2e_s"] = _number(row.get("last_token_ts"), file, line, "last_token_ts") - q
            row.setdefault("arrival_s", row.get("arrival_time"))
        for key in cols:
            if row.get(key) in (None, ""):
                raise BenchmarkError("is missing", file=file, field=f"line {line}, {key}",
                                     hint="columns: arrival_s, input_tokens, output_tokens, ttft_s, e2e_s")
            integer = key.endswith("tokens")
            cols[key].append(_number(row[key], file, line, key, integer=integer, minimum=1 if integer else 0))
        if cols["e2e_s"][-1] < cols["ttft_s"][-1]:
            raise BenchmarkError("e2e_s is shorter than ttft_s", file=file, field=f"line {line}, e2e_s")
    t0 = min(cols["arrival_s"])
    cols["arrival_s"] = [t - t0 for t in cols["arrival_s"]]
    for key in ("input_tokens", "output_tokens"):
        cols[key] = [int(v) for v in cols[key]]
    n = len(rows)
    span = max(cols["arrival_s"]) or 1.0
    stage = {"index": 0, "rate": n / span, "duration_s": span, "requests_ok": n,
             "prompt_len_mean": sum(cols["input_tokens"]) / n, "output_len_mean": sum(cols["output_tokens"]) / n,
             "ttft": _stats(cols["ttft_s"]), "e2e": _stats(cols["e2e_s"])}
    payload = {"name": name or file, "source_format": "per-request", "engine": engine,
               "workload": {"kind": "requests"}, "load": {"type": "trace", "stages": [{"rate": n / span,
                                                                                         "duration": span}]},
               "stages": [stage], "requests": cols}
    return validate_run(payload, file)


def looks_like_vllm_bench(raw: bytes) -> bool:
    head = raw[:200_000]
    return b'"ttfts"' in head and b'"input_lens"' in head


def parse_vllm_bench(raw: bytes, file: str, engine: dict, *, name: str = "") -> BenchmarkRun:
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise BenchmarkError(f"is not JSON: {str(exc)[:200]}", file=file) from None
    for key in ("input_lens", "output_lens", "ttfts", "itls"):
        if not isinstance(data.get(key), list):
            raise BenchmarkError("is missing (save the result with --save-result --save-detailed)", file=file,
                                 field=key)
    n = len(data["ttfts"])
    cols = {"input_tokens": [], "output_tokens": [], "ttft_s": [], "e2e_s": []}
    errors = data.get("errors") or [""] * n
    for i in range(n):
        if i < len(errors) and errors[i]:
            continue  # failed request
        ttft = _number(data["ttfts"][i], file, i + 1, "ttfts")
        itl = data["itls"][i] or []
        gaps = [_number(g, file, i + 1, "itls") for g in itl]
        cols["ttft_s"].append(ttft)
        cols["e2e_s"].append(ttft + sum(gaps))
        cols["input_tokens"].append(int(_number(data["input_lens"][i], file, i + 1, "input_lens", minimum=1)))
        cols["output_tokens"].append(int(_number(data["output_lens"][i], file, i + 1, "output_lens", minimum=1)))
    ok = len(cols["ttft_s"])
    if not ok:
        raise BenchmarkError("has no successful request", file=file, field="ttfts")
    rate = data.get("request_rate")
    if not isinstance(rate, (int, float)) or not math.isfinite(rate) or rate <= 0:
        raise BenchmarkError(f"request_rate is {rate!r}: a run at infinite rate has no arrival process to "
                             "replay", file=file, field="request_rate",
                             hint="benchmark with --request-rate R to validate against it")
    engine = {"model": data.get("model_id") or "", **engine}
    engine.setdefault("engine_version", str(data.get("vllm_version") or data.get("version") or ""))
    stage = {"index": 0, "rate": rate, "duration_s": n / rate, "requests_ok": ok, "requests_failed": n - ok,
             "prompt_len_mean": sum(cols["input_tokens"]) / ok, "output_len_mean": sum(cols["output_tokens"]) / ok,
             "ttft": _stats(cols["ttft_s"]), "e2e": _stats(cols["e2e_s"])}
    payload = {"name": name or file, "source_format": "vllm-bench", "engine": engine,
               "workload": {"kind": "requests"}, "load": {"type": "poisson", "stages": [{"rate": rate,
                                                                                          "duration": n / rate}]},
               "stages": [stage], "requests": cols}
    return validate_run(payload, file)
