from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from planner.ingest.errors import TraceFormatError
from planner.ingest.normalised import write_frame
from planner.ingest.synth import synthesize


class Command(BaseCommand):
    help = (
        "Generate a workload from a generator spec (JSON; kind sageserve, poisson, gamma, batch, slinfer or mix, "
        "see docs/traces.md) and write it as a normalised trace: Parquet (.parquet) or native CSV (.csv / .csv.gz). "
        "Import it with `manage.py import_trace`."
    )

    def add_arguments(self, parser):
        parser.add_argument("spec", help="spec file, e.g. fixtures/workloads/sageserve_week.json")
        parser.add_argument("--out", required=True, help="output .parquet, .csv or .csv.gz")
        parser.add_argument("--seed", type=int, help="overrides the spec's seed")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args, **opts):
        spec_path = Path(opts["spec"])
        try:
            spec = json.loads(spec_path.read_text())
        except FileNotFoundError:
            raise CommandError(f"{spec_path} does not exist") from None
        except json.JSONDecodeError as exc:
            raise CommandError(f"{spec_path} line {exc.lineno}: not valid JSON ({exc.msg})") from None
        out = Path(opts["out"])
        try:
            frame = synthesize(spec, seed=opts["seed"])
        except TraceFormatError as exc:
            raise CommandError(f"{spec_path}: {exc}") from None
        out.parent.mkdir(parents=True, exist_ok=True)
        if out.suffix == ".parquet":
            write_frame(frame, out)
        elif out.name.endswith(".csv") or out.name.endswith(".csv.gz"):
            frame.to_csv(out, index=False, float_format="%.6f")
        else:
            raise CommandError(f"{out}: use a .parquet, .csv or .csv.gz file name")
        summary = {
            "out": str(out),
            "requests": len(frame),
            "span_s": float(frame["arrival_s"].iloc[-1]),
            "input_tokens": int(frame["input_tokens"].sum()),
            "output_tokens": int(frame["output_tokens"].sum()),
            "by_tier": _counts(frame, "tier"),
            "regions": _names(frame, "region"),
            "models": _names(frame, "model"),
        }
        if opts["json"]:
            self.stdout.write(json.dumps(summary))
        else:
            self.stdout.write(
                f"wrote {summary['requests']:,} requests over {summary['span_s'] / 86400:.2f} days to {out}"
            )


def _counts(frame, column: str) -> dict:
    if column not in frame.columns:
        return {}
    return {str(k): int(v) for k, v in frame[column].value_counts().sort_index().items() if v}


def _names(frame, column: str) -> list[str]:
    return sorted(map(str, frame[column].unique())) if column in frame.columns else []
