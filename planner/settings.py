"""Django settings, every value from the environment (see .env.example).

With nothing set the planner runs on SQLite and executes jobs in-process, so a
new user needs no servers. ``DATABASE_URL`` switches to PostgreSQL and
``REDIS_URL`` to a Celery worker fed through Redis.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import dj_database_url

from planner.env import ImproperSetting, env_bool, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent

# --- Security (safe by default; README "Production") -----------------------------------------------------------
# DEBUG is off unless the environment turns it on (`make run`, the local demo, does). With DEBUG off a real
# SECRET_KEY is required: the process refuses to start rather than sign sessions with a published value.
DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperSetting(
            "SECRET_KEY is not set and DEBUG is off. In production set SECRET_KEY to a long random value, e.g. "
            "export SECRET_KEY=$(python -c 'import secrets; print(secrets.token_urlsafe(50))'); for the local demo "
            "export DEBUG=true (`make run` does)."
        )
    SECRET_KEY = "dev-insecure-debug-only"
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
# BEHIND_TLS=true: clients reach the planner over HTTPS (gunicorn behind a TLS-terminating proxy that sets
# X-Forwarded-Proto; gunicorn trusts that header from FORWARDED_ALLOW_IPS only). Then plain HTTP is redirected,
# cookies are Secure and browsers are told to use HTTPS only (HSTS).
BEHIND_TLS = env_bool("BEHIND_TLS", False)
SECURE_SSL_REDIRECT = BEHIND_TLS
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # load balancers probe over plain HTTP
SESSION_COOKIE_SECURE = BEHIND_TLS
CSRF_COOKIE_SECURE = BEHIND_TLS
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 365 * 24 * 3600) if BEHIND_TLS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
# Reverse proxies in front of the planner (nginx, a load balancer): the client address for rate limits is taken
# from X-Forwarded-For only that many hops deep; 0 = the socket's address (a spoofed header is ignored).
NUM_PROXIES = env_int("NUM_PROXIES", 0)
# Deeper JSON than this (arrays/objects inside each other) is refused with a 400 before it is parsed.
JSON_MAX_DEPTH = env_int("JSON_MAX_DEPTH", 64)
# --- end security -------------------------------------------------------------------------------------------------

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "knox",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "planner.apps.PlannerConfig",
    "planner.accounts",
    "planner.jobs",
    "planner.traces",
    "planner.hardware",
    "planner.benchmarks",
    "planner.plans",
    "planner.comparisons",
    "planner.opscaling",  # operator-level autoscaling plans
    "planner.capacity",  # capacity search: the cheapest fleet that meets the SLOs, with risk bands
    "planner.decisions",  # the decision card and its template filters
    "planner.backtests",
    "planner.leaderboard",
    "simulations",
    "forecasts",
]

MIDDLEWARE = [
    "planner.middleware.RequestIdMiddleware",  # outermost: every response carries X-Request-ID
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "planner.middleware.ApiErrorMiddleware",  # /api/: every error is the JSON shape, 5xx included
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "planner.middleware.FormJsonDepthMiddleware",  # pages: deep JSON in a form field is a 400, not a crash
]

ROOT_URLCONF = "planner.urls"
WSGI_APPLICATION = "planner.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATA_DIR = Path(env_str("PLANNER_DATA_DIR", str(BASE_DIR / "var")))
DATA_DIR.mkdir(parents=True, exist_ok=True)
DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{DATA_DIR / 'planner.sqlite3'}")
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 0))}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"].setdefault("OPTIONS", {})
    DATABASES["default"]["OPTIONS"].update({"timeout": 30, "init_command": "PRAGMA journal_mode=WAL;"})
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Authentication -----------------------------------------------------------------------------------------------
# Django's validators apply everywhere a password is set (forms, create_user, load_demo).
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
     "OPTIONS": {"min_length": env_int("PASSWORD_MIN_LENGTH", 8)}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# API tokens (django-rest-knox): stored as SHA-512 digests, expire, rotate (POST /api/auth/token/rotate/).
REST_KNOX = {
    "TOKEN_TTL": timedelta(days=env_int("API_TOKEN_TTL_DAYS", 30)),
    "AUTH_HEADER_PREFIX": "Token",
    "AUTO_REFRESH": False,
}
API_TOKENS_PER_USER = env_int("API_TOKENS_PER_USER", 100)  # live tokens; more is a 403 from the token endpoint
# Rate limits on logging in (token endpoint, login form, admin login), per client address and per username.
LOGIN_RATE_PER_IP = env_str("LOGIN_RATE_PER_IP", "30/min")
LOGIN_RATE_PER_USERNAME = env_str("LOGIN_RATE_PER_USERNAME", "10/min")
# The cache holds those counters, shared by every gunicorn worker process: Redis when REDIS_URL is set, else files
# under PLANNER_DATA_DIR/cache (one machine).
_CACHE_REDIS_URL = env_str("REDIS_URL", "")
CACHES = {
    "default": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": _CACHE_REDIS_URL,
         "KEY_PREFIX": "planner", "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 2}}
        if _CACHE_REDIS_URL else
        # MAX_ENTRIES: Django's default (300) culls a random third of the entries once there are more, which
        # dropped a username's login-attempt history after ~300 guesses from different addresses and let guesses
        # through again; rate-limit keys expire within the limits' window, so the folder stays small anyway
        {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache", "LOCATION": str(DATA_DIR / "cache"),
         "OPTIONS": {"MAX_ENTRIES": env_int("CACHE_MAX_ENTRIES", 100_000)}}
    )
}
# --- end authentication -------------------------------------------------------------------------------------------
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "staticfiles"
# --- Static files: WhiteNoise serves STATIC_ROOT (filled by `collectstatic`, which `make serve` runs) with
# hashed names and gzip; in DEBUG the unhashed source files are served straight from the finders.
if DEBUG:
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # the demo serves from the finders; WhiteNoise wants the folder
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
MEDIA_ROOT = DATA_DIR / "media"
MEDIA_URL = "media/"

# ---------------------------------------------------------------------------------------------------------
# Limits: every cap on input size and work, from the environment; README "Limits" lists them.
# Uploads: traces can be large, so Django streams anything above 2.5 MB to disk; a body above its cap is
# refused from Content-Length before it is read, and while streaming when the length is not given.
TRACE_UPLOAD_MAX_BYTES = env_int("TRACE_UPLOAD_MAX_BYTES", 2 * 1024**3)
TRACE_SYNTH_MAX_REQUESTS = env_int("TRACE_SYNTH_MAX_REQUESTS", 5_000_000)
TRACE_MAX_DECOMPRESSED_BYTES = env_int("TRACE_MAX_DECOMPRESSED_BYTES", 16 * 1024**3)  # a gzip inflating past it
TRACE_MAX_COMPRESSION_RATIO = env_int("TRACE_MAX_COMPRESSION_RATIO", 100)  # decompressed / compressed, past 16 MiB
TRACE_MAX_ROWS = env_int("TRACE_MAX_ROWS", 50_000_000)  # requests in one stored trace (after the rate multiplier)
TRACE_MAX_SPAN_S = env_int("TRACE_MAX_SPAN_S", 400 * 86400)  # first to last arrival of a trace
TRACE_MAX_RATE_MULTIPLIER = env_int("TRACE_MAX_RATE_MULTIPLIER", 100)
# sweep_orphans removes trace folders with no row (an import whose process died) once they are this old, seconds
TRACE_ORPHAN_MAX_AGE_S = env_int("TRACE_ORPHAN_MAX_AGE_S", 3600)
HARDWARE_UPLOAD_MAX_BYTES = env_int("HARDWARE_UPLOAD_MAX_BYTES", 20 * 1024**2)
BENCHMARK_UPLOAD_MAX_BYTES = env_int("BENCHMARK_UPLOAD_MAX_BYTES", 64 * 1024**2)  # one benchmark run (archive or file)
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 10 * 1024**2)  # non-file request bodies
FILE_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
PLANNER_MAX_SIM_REQUESTS = env_int("PLANNER_MAX_SIM_REQUESTS", 20_000_000)  # simulated requests per run
PLANNER_MAX_SIM_TIME_S = env_int("PLANNER_MAX_SIM_TIME_S", 8 * 86400)  # simulated seconds per run
# requests one capacity search may simulate in all (its probes' worst case, checked when it starts)
PLANNER_MAX_SEARCH_REQUESTS = env_int("PLANNER_MAX_SEARCH_REQUESTS", 1_000_000_000)
# worker processes serving capacity probes: a search keeps up to this many probes in flight, filling the workers its
# own probes leave idle with those it will probably need next (capacity.core.driver.spare_work); 0 = only what it needs
CAPACITY_SEARCH_WORKERS = env_int("CAPACITY_SEARCH_WORKERS", 0)
# streamed runs (result mode "streaming"): memory is one chunk's, so the caps are separate and larger
PLANNER_MAX_STREAM_REQUESTS = env_int("PLANNER_MAX_STREAM_REQUESTS", 400_000_000)  # simulated requests per streamed run
PLANNER_MAX_STREAM_TIME_S = env_int("PLANNER_MAX_STREAM_TIME_S", 31 * 86400)  # simulated seconds per streamed run
MIDDLEWARE.insert(1, "planner.uploads.RequestBodyGuardMiddleware")  # 413 from Content-Length, before reading (inside RequestIdMiddleware, so the 413 carries X-Request-ID)
FILE_UPLOAD_HANDLERS = [
    "planner.uploads.CappedUploadHandler",  # counts file bytes while they stream in
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]
# ---------------------------------------------------------------------------------------------------------

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "planner.accounts.api.auth.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # JSON only (no browsable HTML pages: errors are always the JSON shape); /api/docs/ is the browsable view.
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": [
        "planner.api.parsers.JSONParser",
        "planner.api.parsers.FormParser",
        "planner.api.parsers.MultiPartParser",
    ],
    "NUM_PROXIES": NUM_PROXIES,
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "planner.api.pagination.Pagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "rest_framework.filters.OrderingFilter",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "planner.api.errors.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "LLM fleet capacity planner API",
    "DESCRIPTION": "Traces, hardware profiles, jobs, forecasts, capacity plans, simulations and comparisons.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {"TraceStatusEnum": ["pending", "normalising", "ready", "failed"]},
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "planner.api.schema_hooks.add_error_responses",
    ],
}

# Celery: configured only here, in the CELERY_ namespace (tests assert the effective values).
REDIS_URL = env_str("REDIS_URL", "")
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = REDIS_URL or "cache+memory://"
# Without Redis, jobs run in-process: in a background thread (JOBS_RUNNER=thread, the
# default, so the page shows progress and can cancel) or inline (JOBS_RUNNER=inline, tests).
JOBS_RUNNER = env_str("JOBS_RUNNER", "celery" if REDIS_URL else "thread")
if JOBS_RUNNER not in {"celery", "thread", "inline"}:
    raise RuntimeError(f"JOBS_RUNNER={JOBS_RUNNER!r}; use celery, thread or inline")
CELERY_TASK_ALWAYS_EAGER = JOBS_RUNNER != "celery"
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_EXPIRES = env_int("CELERY_RESULT_EXPIRES", 24 * 3600)
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 4 * 3600)
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 4 * 3600 - 60)
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Queues: short interactive work goes to JOBS_QUEUE, long work (sized by its request count) to
# JOBS_QUEUE + ".long", so a long sweep never holds the slots a small run waits for. Run one worker on
# each (README "Production"). A test run names its own (.ci/test-integration) so parallel runs never meet.
JOBS_QUEUE = env_str("JOBS_QUEUE", "celery")
JOBS_LONG_QUEUE = f"{JOBS_QUEUE}.long"
JOBS_QUEUES = [JOBS_QUEUE, JOBS_LONG_QUEUE]
CELERY_TASK_DEFAULT_QUEUE = JOBS_QUEUE
# A job that simulates this many requests or more is long work; a team may have this many long jobs at once
# (queued or running; a comparison or sweep counts once), more are refused with 429 until one ends.
JOBS_LONG_REQUESTS = env_int("JOBS_LONG_REQUESTS", 200_000)
JOBS_MAX_LONG_PER_TEAM = env_int("JOBS_MAX_LONG_PER_TEAM", 2)
CELERY_TASK_TRACK_STARTED = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

# --- Jobs never strand (planner/jobs/reaper.py). The job row is the truth; these settings
# make the broker redeliver what a dead worker held, and the reaper settles what it cannot.
# A pool child killed mid-task (kill -9, OOM killer) puts its message back in the queue ...
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# ... and a message a dead worker had taken comes back only after the visibility timeout: it must
# exceed the longest task, or Redis would hand a still-running task to a second worker.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": CELERY_TASK_TIME_LIMIT + 3600,
    "socket_connect_timeout": 5,
    "retry_on_timeout": True,
}
CELERY_TASK_IGNORE_RESULT = True  # the row holds the result; nothing reads Celery's
# A pool child is replaced after a task that left it above this resident size (KiB).
CELERY_WORKER_MAX_MEMORY_PER_CHILD = env_int("CELERY_WORKER_MAX_MEMORY_PER_CHILD", 3 * 1024 * 1024)
# Keep running tasks when the broker connection drops: they finish and write their rows; the reaper
# re-dispatches whatever queued messages a broker restart lost.
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
CELERY_BROKER_CONNECTION_MAX_RETRIES = None  # a worker waits for Redis for ever, it does not exit
CELERY_BROKER_CONNECTION_TIMEOUT = 5
# Publishing (in a web request) gives up after about 2 s; the row stays queued for the sweep.
JOBS_PUBLISH_RETRY = {"max_retries": 2, "interval_start": 0.2, "interval_step": 0.5, "interval_max": 1.0}
# Heartbeat of a running job and its watchdog's cancel poll (seconds).
JOBS_HEARTBEAT_S = env_int("JOBS_HEARTBEAT_S", 10)
JOBS_CANCEL_POLL_S = env_int("JOBS_CANCEL_POLL_S", 2)
# A running job with no heartbeat for this long lost its worker (re-queued if idempotent, else failed).
JOBS_HEARTBEAT_TIMEOUT_S = env_int("JOBS_HEARTBEAT_TIMEOUT_S", 90)
# A queued job dispatched this long ago with no live broker message is dispatched again.
JOBS_REDISPATCH_AFTER_S = env_int("JOBS_REDISPATCH_AFTER_S", 60)
JOBS_REAPER_INTERVAL_S = env_int("JOBS_REAPER_INTERVAL_S", 30)
JOBS_MAX_ATTEMPTS = env_int("JOBS_MAX_ATTEMPTS", 2)  # for idempotent kinds
# Transient database errors in the job machinery's own writes are retried for this long.
JOBS_DB_RETRY_S = env_int("JOBS_DB_RETRY_S", 60)
if not JOBS_HEARTBEAT_S < JOBS_HEARTBEAT_TIMEOUT_S:
    raise RuntimeError("JOBS_HEARTBEAT_TIMEOUT_S must be longer than JOBS_HEARTBEAT_S")
# A page that would start work while the broker is down answers 503 (the API does through DRF).
MIDDLEWARE += ["planner.jobs.middleware.QueueUnavailableMiddleware"]
# --- end of the jobs block

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # Every log line carries the request id ("-" outside a request); a 500's JSON body and X-Request-ID show it.
    "filters": {"request_id": {"()": "planner.request_id.RequestIdFilter"}},
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["request_id"], "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
}
SPECTACULAR_SETTINGS.update(
    {"SWAGGER_UI_DIST": "SIDECAR", "SWAGGER_UI_FAVICON_HREF": "SIDECAR", "REDOC_DIST": "SIDECAR"}
)
