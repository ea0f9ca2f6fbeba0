"""Remove stored trace files that belong to no row, report rows whose files are missing, and check every
stored file against its checksum (``--dry-run``: report only, remove nothing).

    manage.py sweep_orphans [--dry-run] [--min-age-s TRACE_ORPHAN_MAX_AGE_S] [--no-checksums] [--json]

Finds: trace folders with no row (an import that died between writing files and committing),
rows whose folder or normalised file is missing ("ghost" traces), leftover ``*.tmp`` files, and
files whose sha256 differs from the folder's manifest.json (or, for traces stored before manifests,
an original whose sha256 differs from the row's content_sha256). Only folders and temporary files
older than --min-age-s (default: the TRACE_ORPHAN_MAX_AGE_S setting, one hour) are removed, so an upload
in progress is never touched; run it from cron. Ghost rows and
corrupt files are reported, not deleted: they are a team's data, so a person decides.
Exit status 1 when anything is wrong that is left after the sweep, so cron can alert.
"""

from __future__ import annotations

import json
import shutil
import time

from django.conf import settings
from django.core.management.base import BaseCommand

from planner.traces.models import Trace, trace_root
from planner.traces.services import MANIFEST, file_sha256

DERIVED = {"characterisation.json", MANIFEST}


class Command(BaseCommand):
    help = "Report/remove trace files without a row and rows without files; verify stored files' checksums."

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="report only: remove nothing")
        parser.add_argument("--remove", action="store_true", help="(the default) delete orphan folders and old *.tmp files")
        parser.add_argument("--min-age-s", type=float, default=None,
                            help="only remove what is older than this (default: TRACE_ORPHAN_MAX_AGE_S, 3600)")
        parser.add_argument("--no-checksums", action="store_true", help="skip the sha256 check (fast)")
        parser.add_argument("--json", action="store_true", help="print the report as one JSON object")

    def handle(self, *args, **opts):
        min_age_s = settings.TRACE_ORPHAN_MAX_AGE_S if opts["min_age_s"] is None else opts["min_age_s"]
        report = sweep(remove=not opts["dry_run"], min_age_s=min_age_s, checksums=not opts["no_checksums"])
        if opts["json"]:
            self.stdout.write(json.dumps(report, sort_keys=True))
        else:
            for key in ("orphan_folders", "removed", "ghost_rows", "checksum_mismatches", "stray_tmp_files"):
                for item in report[key]:
                    self.stdout.write(f"{key}: {item}")
            self.stdout.write(f"checked {report['checked_files']} files of {report['traces']} traces")
        problems = report["ghost_rows"] or report["checksum_mismatches"] or (
            [f for f in report["orphan_folders"] + report["stray_tmp_files"] if f not in report["removed"]])
        if problems:
            raise SystemExit(1)


def sweep(*, remove: bool = False, min_age_s: float = 3600.0, checksums: bool = True) -> dict:
    root = trace_root()
    now = time.time()
    keys = dict(Trace.objects.values_list("storage_key", "pk"))
    report: dict = {"orphan_folders": [], "removed": [], "ghost_rows": [], "checksum_mismatches": [],
                    "stray_tmp_files": [], "checked_files": 0, "traces": len(keys)}
    folders = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    for folder in folders:
        old = now - folder.stat().st_mtime > min_age_s
        if folder.name not in keys:
            report["orphan_folders"].append(str(folder))
            if remove and old:
                shutil.rmtree(folder, ignore_errors=True)
                report["removed"].append(str(folder))
            continue
        for tmp in folder.glob("*.tmp"):
            report["stray_tmp_files"].append(str(tmp))
            if remove and now - tmp.stat().st_mtime > min_age_s:
                tmp.unlink(missing_ok=True)
                report["removed"].append(str(tmp))
    for trace in Trace.objects.all().only("pk", "storage_key", "original_file", "content_sha256", "source", "status"):
        folder = trace.directory
        # a trace not normalised yet (or whose normalisation failed) has only its original
        needs_normalised = trace.status == Trace.Status.READY
        if not folder.is_dir() or (needs_normalised and not trace.normalised_file.is_file()):
            report["ghost_rows"].append({"trace": trace.pk, "missing": str(folder if not folder.is_dir()
                                                                         else trace.normalised_file)})
            continue
        if checksums:
            report["checked_files"] += _verify(trace, folder, report["checksum_mismatches"])
    return report


def _verify(trace: Trace, folder, mismatches: list) -> int:
    manifest_path = folder / MANIFEST
    if manifest_path.is_file():
        expected = {name: entry["sha256"] for name, entry in json.loads(manifest_path.read_text())["files"].items()}
    elif trace.source == Trace.Source.UPLOAD and trace.original_file:
        expected = {trace.original_file: trace.content_sha256}  # stored before manifests existed
    else:
        expected = {}
    for name, sha in expected.items():
        path = folder / name
        actual = file_sha256(path) if path.is_file() else "missing"
        if actual != sha:
            mismatches.append({"trace": trace.pk, "file": str(path), "expected": sha, "actual": actual})
    return len(expected)
