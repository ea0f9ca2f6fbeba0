"""gunicorn settings for `make serve` (the production path), sized for a 2-core machine.

Every value can be overridden from the environment (gunicorn also reads GUNICORN_CMD_ARGS). TLS is terminated by
the proxy in front; gunicorn trusts its X-Forwarded-Proto only from FORWARDED_ALLOW_IPS (default 127.0.0.1,::1).
"""

import os

_host = os.environ.get("HOST", "127.0.0.1")
_port = os.environ.get("PORT", "8000")
bind = os.environ.get("GUNICORN_BIND", f"{_host}:{_port}")
# 2 processes x 4 threads: requests are mostly database reads and JSON; the heavy work runs in celery workers.
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
worker_class = "gthread"
threads = int(os.environ.get("GUNICORN_THREADS", "4"))
# Trace uploads are parsed and normalised inside the request: allow minutes, not forever.
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "300"))
graceful_timeout = 30
keepalive = 5
# Recycle worker processes now and then (bounds slow leaks), but only when jobs run in celery workers: without
# REDIS_URL jobs run in threads of these processes and a recycle would cut them off.
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "1000" if os.environ.get("REDIS_URL") else "0"))
max_requests_jitter = max_requests // 10
worker_tmp_dir = "/dev/shm" if os.path.isdir("/dev/shm") else None
accesslog = "-"
errorlog = "-"
access_log_format = '%(h)s "%(r)s" %(s)s %(b)s %(M)sms request_id=%({x-request-id}o)s'
