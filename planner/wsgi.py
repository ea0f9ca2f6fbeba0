import os

from django.core.wsgi import get_wsgi_application

# One BLAS thread per process: parallelism comes from worker processes (see manage.py).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planner.settings")
application = get_wsgi_application()

# In-process jobs (`make run`): settle the jobs a restart orphaned, then keep a reaper running here.
from planner.jobs.runner_startup import start_in_process_runner  # noqa: E402

start_in_process_runner()
