#!/usr/bin/env python
import os
import sys


def main() -> None:
    # Small LAPACK calls (forecast refits, ILP bookkeeping) are 5-100x slower with a BLAS thread pool on a
    # busy machine; parallelism comes from worker processes instead.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planner.settings")
    # Without Redis, the web server runs jobs in background threads; a one-shot command would exit
    # before such a thread finished, so commands run their jobs inline instead.
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command != "runserver" and not os.environ.get("REDIS_URL"):
        os.environ.setdefault("JOBS_RUNNER", "inline")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
