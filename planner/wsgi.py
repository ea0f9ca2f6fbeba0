import os

from django.core.wsgi import get_wsgi_application

# One BLAS thread per process: parallelism comes from worker processes (see manage.py).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planner.settings")
application = get_wsgi_application()
