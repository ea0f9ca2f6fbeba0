"""Writes for traces: import a file or an upload, synthesise, re-characterise, delete.

Every import either stores a complete trace (row + original + normalised file + a queued
characterisation job) or nothing: the trace folder is removed on any failure. The job queue is
checked before the work starts (HTTP 503 and nothing stored when the broker is down), and a dispatch
that fails after the commit never raises here (the row stays queued for the re-dispatch sweep), so a
broker outage cannot leave a committed row whose files were deleted. Each trace folder holds a
``manifest.json`` with the sha256 of its files; ``manage.py sweep_orphans`` checks them and removes
folders without a row.
"""

from __future__ import annotations

import errno
import hashlib
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from planner.ingest.errors import TraceFormatError
from planner.ingest.normalised import write_frame
from planner.ingest.pipeline import IngestResult, ingest
from planner.ingest.synth import expected_size, synthesize
from planner.ingest.transforms import TransformOptions
from planner.jobs.services import create_job, ensure_queue_available
from planner.limits import ingest_limits
from planner.traces.errors import DuplicateTrace, TraceInputError
from planner.traces.models import Trace, trace_root
from planner.traces.token_sources import resolve_token_source, with_token_trace  # noqa: F401  (re-exported)

CHARACTERISE = "trace.characterise"
NORMALISE = "trace.normalise"
COPY_BLOCK = 4 * 1024 * 1024
MANIFEST = "manifest.json"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(COPY_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def write_manifest(folder: Path, known: dict[str, str] | None = None) -> dict:
    """Record the sha256 and size of every file in a trace folder (``known``: digests already computed)."""
    known = known or {}
    files = {}
    for path in sorted(folder.iterdir()):
        if path.is_file() and path.name != MANIFEST and not path.name.endswith(".tmp"):
            files[path.name] = {"sha256": known.get(path.name) or file_sha256(path), "bytes": path.stat().st_size}
    manifest = {"files": files}
    tmp = folder / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=1))
    tmp.replace(folder / MANIFEST)
    return manifest


def _options(options: dict | TransformOptions | None, **assign: Any) -> TransformOptions:
    if isinstance(options, TransformOptions):
        data = options.as_dict()
    else:
        data = dict(options or {})
    for key, value in assign.items():
        if value not in (None, ""):
            data[key] = value
    try:
        return TransformOptions.from_dict(data)
    except TraceFormatError as exc:
        raise TraceInputError(exc.message, where="options", hint=exc.hint) from None


def fingerprint(content_sha256: str, payload: dict) -> str:
    text = content_sha256 + json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _suffix(name: str) -> str:
    suffixes = "".join(Path(name).suffixes[-2:]).lower()
    return suffixes if re.fullmatch(r"(\.[a-z0-9]{1,8}){1,2}", suffixes or "") else ".dat"


def _check_size(size: int) -> None:
    limit = settings.TRACE_UPLOAD_MAX_BYTES
    if size > limit:
        raise TraceInputError(
            f"the file is {size:,} bytes, above the upload limit of {limit:,} bytes",
            where="file",
            hint="compress it with gzip, split it, import it with `manage.py import_trace`, or raise "
            "TRACE_UPLOAD_MAX_BYTES",
            status=413,
        )
    if size == 0:
        raise TraceInputError(
            "the file is empty",
            where="line 1",
            hint="upload a CSV with a header row and one request per line, or JSON lines",
        )


def _copy_hashing(chunks, dest: Path) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    with open(dest, "wb") as out:
        for block in chunks:
            digest.update(block)
            out.write(block)
            size += len(block)
    return digest.hexdigest(), size


def _file_chunks(path: Path):
    with open(path, "rb") as fh:
        while block := fh.read(COPY_BLOCK):
            yield block


def import_trace_file(
    path: str | Path,
    *,
    team,
    user=None,
    name: str | None = None,
    fmt: str = "auto",
    options: dict | TransformOptions | None = None,
    region: Any = None,
    model: Any = None,
    tier: Any = None,
    description: str = "",
    original_name: str | None = None,
    check_size: bool = False,
    progress=None,
    **extra: Any,
) -> Trace:
    """Import a trace file from disk for ``team`` and queue its characterisation job.

    Keyword options: ``fmt`` or ``format`` (auto|azure|burstgpt|mooncake|native), ``region``/``model``/``tier``
    (a value, "a:0.6,b:0.4" ratios, or {"column": ..., "map": {...}}), ``options`` (a dict with
    time_scale, rate, jitter_s, seed and the same assignments; those four may also be passed as
    keywords). Raises TraceInputError (or
    DuplicateTrace) for bad input; nothing is stored then.
    """
    fmt = extra.pop("format", fmt)
    transform_keys = {"time_scale", "rate", "jitter_s", "seed"}
    unknown = set(extra) - transform_keys
    if unknown:
        raise TypeError(f"import_trace_file() got unknown option(s) {sorted(unknown)}")
    if extra:
        options = {**(options.as_dict() if isinstance(options, TransformOptions) else dict(options or {})), **extra}
    path = Path(path)
    if not path.is_file():
        raise TraceInputError(f"{path} is not a file", where="file", hint="give the path of a trace file")
    if check_size:
        _check_size(path.stat().st_size)
    return _import(
        _file_chunks(path),
        original_name or path.name,
        team=team,
        user=user,
        name=name,
        fmt=fmt,
        options=_options(options, region=region, model=model, tier=tier),
        description=description,
        progress=progress,
    )


def import_upload(
    upload,
    *,
    team,
    user=None,
    name: str | None = None,
    fmt: str = "auto",
    options: dict | TransformOptions | None = None,
    description: str = "",
    **assign: Any,
) -> Trace:
    """Accept a Django UploadedFile (page or API), enforcing settings.TRACE_UPLOAD_MAX_BYTES: the file is stored
    and a ``trace.normalise`` job queued; the returned trace is ``pending`` until that job has run."""
    _check_size(upload.size or 0)
    return _accept(
        upload.chunks(COPY_BLOCK),
        upload.name or "upload",
        team=team,
        user=user,
        name=name,
        fmt=fmt,
        options=_options(options, **assign),
        description=description,
    )


@dataclass
class _Stored:
    """An original file stored in its own trace folder, hashed on the way, not yet normalised."""

    key: str
    folder: Path
    original_name: str
    original_file: str
    digest: str
    size: int
    fp: str


def _check_format(fmt: str) -> None:
    if fmt not in ("auto", "azure", "burstgpt", "mooncake", "native"):
        raise TraceInputError(
            f"unknown format {fmt!r}", where="format", hint="use auto, azure, burstgpt, mooncake or native"
        )


def _store_original(chunks, original_name: str, *, team, fmt: str, options: TransformOptions) -> _Stored:
    """Stream the file into a new trace folder, hashing it; refuse an empty file and a duplicate (409).
    Nothing is left behind on failure (a full disk is a 507)."""
    key = Trace.new_storage_key()
    folder = trace_root() / key
    folder.mkdir(parents=True, exist_ok=False)
    try:
        original_file = "original" + _suffix(original_name)
        digest, size = _copy_hashing(chunks, folder / original_file)
        if size == 0:
            _check_size(0)
        fp = fingerprint(digest, {"format": fmt, "options": options.as_dict()})
        existing = Trace.objects.filter(team=team, fingerprint=fp).first()
        if existing is not None:
            raise DuplicateTrace(existing)
        return _Stored(key, folder, original_name, original_file, digest, size, fp)
    except BaseException as exc:
        shutil.rmtree(folder, ignore_errors=True)
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise disk_full() from None
        raise


def _import(
    chunks, original_name: str, *, team, user, name, fmt, options: TransformOptions, description: str, progress=None
) -> Trace:
    """Store and normalise in this process (the command line): the trace is ready when this returns."""
    _check_format(fmt)
    ensure_queue_available()  # a broker outage refuses the import before anything is written
    stored = _store_original(chunks, original_name, team=team, fmt=fmt, options=options)
    folder = stored.folder
    try:
        try:
            result = ingest(
                folder / stored.original_file,
                folder / "normalised.parquet",
                fmt=fmt,
                options=options,
                work_dir=folder,
                progress=progress,
                limits=ingest_limits(),
            )
        except TraceFormatError as exc:
            raise TraceInputError.from_format_error(exc) from None
        write_manifest(folder, {stored.original_file: stored.digest})
        return _save(
            team=team, user=user, key=stored.key, name=name or _default_name(original_name), description=description,
            source=Trace.Source.UPLOAD, fmt=result.format, original_name=original_name,
            original_file=stored.original_file, size=stored.size, digest=stored.digest, fp=stored.fp,
            options=options.as_dict(), result=result,
        )
    except OSError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise disk_full() from None
        raise
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def _accept(
    chunks, original_name: str, *, team, user, name, fmt, options: TransformOptions, description: str
) -> Trace:
    """Store the original and queue its normalisation (``trace.normalise``): the web request answers at once
    with a ``pending`` trace; once this returns the upload survives a restart of the web process."""
    _check_format(fmt)
    ensure_queue_available()
    stored = _store_original(chunks, original_name, team=team, fmt=fmt, options=options)
    try:
        write_manifest(stored.folder, {stored.original_file: stored.digest})
        with transaction.atomic():
            trace = Trace.objects.create(
                team=team, created_by=user, name=(name or _default_name(original_name))[:200],
                description=description, source=Trace.Source.UPLOAD, format=fmt, status=Trace.Status.PENDING,
                storage_key=stored.key, original_name=original_name[:255], original_file=stored.original_file,
                size_bytes=stored.size, content_sha256=stored.digest, fingerprint=stored.fp,
                options=options.as_dict(),
            )
            trace.job = create_job(team=team, kind=NORMALISE, user=user, params={"trace_id": trace.pk})
            trace.save(update_fields=["job"])
    except IntegrityError:
        shutil.rmtree(stored.folder, ignore_errors=True)
        existing = Trace.objects.filter(team=team, fingerprint=stored.fp).first()
        if existing is not None:  # a concurrent upload of the same file won the race
            raise DuplicateTrace(existing) from None
        raise
    except BaseException as exc:
        shutil.rmtree(stored.folder, ignore_errors=True)
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise disk_full() from None
        raise
    return trace


def disk_full() -> TraceInputError:
    """The trace store's disk (or quota) filled up during an import: 507, and nothing of it is kept."""
    return TraceInputError(
        "the server's trace storage is full, so the trace could not be stored; nothing of it was kept",
        where="server storage (PLANNER_DATA_DIR)", status=507,
        hint="try again later; the operator must free space or grow the disk (sweep_orphans removes leftovers)")


def _default_name(original_name: str) -> str:
    base = Path(original_name).name
    for suffix in (".gz", ".csv", ".jsonl", ".json", ".txt"):
        if base.lower().endswith(suffix):
            base = base[: -len(suffix)]
    return base[:200] or "trace"


def _save(
    *,
    team,
    user,
    key,
    name,
    description,
    source,
    fmt,
    original_name,
    original_file,
    size,
    digest,
    fp,
    options,
    result: IngestResult,
) -> Trace:
    try:
        with transaction.atomic():
            trace = Trace.objects.create(
                team=team,
                created_by=user,
                name=name[:200],
                description=description,
                source=source,
                format=fmt,
                storage_key=key,
                original_name=original_name[:255],
                original_file=original_file,
                size_bytes=size,
                content_sha256=digest,
                fingerprint=fp,
                options=options,
                requests=result.requests,
                span_s=result.span_s,
                input_tokens=result.input_tokens,
                output_tokens=result.output_tokens,
                failed_requests=result.failed,
                source_rows=result.source_rows,
                was_sorted=result.was_sorted,
                start_epoch_s=result.start_epoch_s,
                columns=result.columns,
                groups=result.groups,
            )
            trace.job = create_job(team=team, kind=CHARACTERISE, user=user, params={"trace_id": trace.pk})
            trace.save(update_fields=["job"])
    except IntegrityError:
        existing = Trace.objects.filter(team=team, fingerprint=fp).first()
        if existing is not None:  # a concurrent upload of the same file won the race
            raise DuplicateTrace(existing) from None
        raise
    return trace


def _check_synth_size(spec: dict) -> None:
    """Synthesis runs in the request: cap its size (settings.TRACE_SYNTH_MAX_REQUESTS, default 5M)."""
    limit = int(getattr(settings, "TRACE_SYNTH_MAX_REQUESTS", 5_000_000))
    expected = expected_size(spec)  # 0 when the spec is bad: the generator then names the bad value
    if expected > limit:
        stream = spec.get("kind", "sageserve") != "sageserve"
        raise TraceInputError(
            f"the spec asks for about {expected:,.0f} requests, above the limit of {limit:,} here",
            where="spec.rate_rps" if stream else "spec.total_rps",
            hint=("lower rate_rps, duration_s or requests" if stream else "lower total_rps or days")
            + ", or run `manage.py synth_trace SPEC --out FILE` and import the file",
        )


def synthesise_trace(
    spec: dict, *, team, user=None, name: str | None = None, seed: int | None = None, description: str = ""
) -> Trace:
    """Run the workload synthesiser and store the result as a trace (characterised by a job)."""
    if not isinstance(spec, dict):
        raise TraceInputError(
            "the spec must be a JSON object", where="spec", hint="start from fixtures/workloads/sageserve_day.json"
        )
    resolved = resolve_token_source(spec, team=team)
    payload = {"spec": spec, "seed": seed}
    fp = fingerprint("synth", payload)
    existing = Trace.objects.filter(team=team, fingerprint=fp).first()
    if existing is not None:
        raise DuplicateTrace(existing)
    _check_synth_size(spec)
    ensure_queue_available()
    try:
        frame = synthesize(resolved, seed=seed)
    except TraceFormatError as exc:
        inner = getattr(exc, "spec_where", "spec")
        where = "spec" if inner in ("spec", "") else f"spec.{inner}"
        raise TraceInputError(exc.message, where=where, hint=exc.hint) from None
    key = Trace.new_storage_key()
    folder = trace_root() / key
    folder.mkdir(parents=True, exist_ok=False)
    try:
        (folder / "spec.json").write_text(json.dumps(spec, indent=2))
        totals = write_frame(frame, folder / "normalised.parquet")
        result = IngestResult(
            format="synth",
            requests=totals.requests,
            span_s=totals.span_s,
            input_tokens=totals.input_tokens,
            output_tokens=totals.output_tokens,
            source_rows=totals.requests,
            was_sorted=True,
            columns=list(frame.columns),
            groups=totals.groups,
        )
        write_manifest(folder)
        return _save(
            team=team,
            user=user,
            key=key,
            name=name or str(spec.get("name") or "synthetic workload"),
            description=description or str(spec.get("description") or ""),
            source=Trace.Source.SYNTH,
            fmt="synth",
            original_name="spec.json",
            original_file="spec.json",
            size=(folder / "spec.json").stat().st_size,
            digest=hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest(),
            fp=fp,
            options={"spec": spec, "seed": seed},
            result=result,
        )
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def characterise_again(trace: Trace, *, user=None) -> Trace:
    if trace.current_status()[0] != Trace.Status.READY:
        raise TraceInputError(f"trace #{trace.pk} is {trace.current_status()[0]}, not ready: nothing to characterise",
                              where=f"trace #{trace.pk}", status=409,
                              hint="wait until its status is ready; a failed trace says why in status_reason")
    with transaction.atomic():
        trace.job = create_job(team=trace.team, kind=CHARACTERISE, user=user, params={"trace_id": trace.pk})
        trace.save(update_fields=["job"])
    return trace


def delete_trace(trace: Trace) -> None:
    folder = trace.directory
    trace.delete()
    transaction.on_commit(lambda: shutil.rmtree(folder, ignore_errors=True))
