"""The trace formats: their names, columns and help text, and the two records the parsers pass on."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

FORMATS = ("azure", "burstgpt", "mooncake", "native")
TIERS = ("IW-F", "IW-N", "NIW")
NO_DEADLINE = np.iinfo(np.int64).min
INT32_MAX = 2**31 - 1

AZURE_COLUMNS = {"timestamp": "TIMESTAMP", "contexttokens": "ContextTokens", "generatedtokens": "GeneratedTokens"}
AZURE_OPTIONAL = {"numimages": "NumImages"}
BURSTGPT_COLUMNS = {"timestamp": "Timestamp", "request tokens": "Request tokens", "response tokens": "Response tokens"}
BURSTGPT_OPTIONAL = {"model": "Model", "total tokens": "Total tokens", "log type": "Log Type"}
MOONCAKE_KEYS = {"timestamp", "input_length", "output_length"}
MOONCAKE_OPTIONAL = {"hash_ids"}
NATIVE_ARRIVAL = ("arrival_s", "arrival", "timestamp", "time")
NATIVE_INPUT = ("input_tokens", "prompt_tokens")
NATIVE_OUTPUT = ("output_tokens", "completion_tokens")
NATIVE_OPTIONAL = ("region", "model", "tier", "deadline_s", "deadline", "slo_s", "session_id", "failed", "hash_ids")

FORMAT_HELP = {
    "azure": "TIMESTAMP,ContextTokens,GeneratedTokens (optional NumImages)",
    "burstgpt": "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type",
    "mooncake": 'JSON lines {"timestamp": ms, "input_length", "output_length", "hash_ids": [...]}',
    "native": "arrival_s (or timestamp),input_tokens,output_tokens[,region,model,tier,deadline_s|slo_s,session_id]",
}


def expected_formats_hint() -> str:
    return "; ".join(f"{name}: {cols}" for name, cols in FORMAT_HELP.items())


@dataclass
class Detected:
    format: str
    kind: str  # "csv" or "jsonl"
    header: list[str] = field(default_factory=list)  # CSV header as written (JSONL: keys of line 1)


@dataclass
class RawChunk:
    frame: pd.DataFrame
    first_line: int
    progress: float  # fraction of the file read so far (0-1), best effort
