# Two commands do everything on a fresh machine:
#   make run    install, migrate, load the demo data and serve on http://127.0.0.1:8000 (SQLite, in-process jobs)
#   make test   install, then the whole suite: unit tests, then integration tests on PostgreSQL + Redis + a real
#               celery worker + headless Chromium (services started if they are stopped)
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install run serve worker worker-short worker-long test test-unit test-integration lint bench demo

$(BIN)/.installed: requirements.txt requirements-dev.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements-dev.txt
	touch $@

# The engine build is idempotent (nothing to do when fresh); without a C compiler it says so and the simulator
# runs as pure Python (same results, about 2.4x slower).
install: $(BIN)/.installed
	$(BIN)/python -m simulations.engine.build --optional

# The local demo runs with DEBUG on (unless DEBUG is set): Django's error pages and no SECRET_KEY needed.
demo run: export DEBUG ?= true

# The demo does not wait minutes for the simulator's compilation on a fresh clone: a fresh or cached build is used
# at once, else the demo starts on the pure-Python engine (same results, slower) while the build runs in the
# background (log in var/engine-build.log); the next start uses it.
demo: $(BIN)/.installed
	mkdir -p var
	$(BIN)/python -m simulations.engine.build --optional --cached-only
	($(BIN)/python -m simulations.engine.build --optional > var/engine-build.log 2>&1 &)
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py load_demo

run: demo
	$(BIN)/python manage.py runserver $(HOST):$(PORT)

# The production path (README "Production"): export SECRET_KEY, ALLOWED_HOSTS, DATABASE_URL and REDIS_URL (see
# .env.example), then `make serve` in one shell and `make worker` in another. gunicorn (gunicorn.conf.py) serves
# the app and WhiteNoise the collected static files; DEBUG stays off.
serve: install
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py collectstatic --noinput -v 0
	HOST=$(HOST) PORT=$(PORT) $(BIN)/gunicorn -c gunicorn.conf.py planner.wsgi

# Two workers, so short interactive runs never wait behind long ones: one on the short-work queue, one on the
# long-work queue (JOBS_QUEUE and JOBS_QUEUE.long; jobs of JOBS_LONG_REQUESTS requests or more are long work).
JOBS_QUEUE ?= celery
worker: install
	$(MAKE) -j2 worker-short worker-long

worker-short:
	$(BIN)/celery -A planner worker -Q $(JOBS_QUEUE) -n short@%h --loglevel=INFO --concurrency=2

worker-long:
	$(BIN)/celery -A planner worker -Q $(JOBS_QUEUE).long -n long@%h --loglevel=INFO --concurrency=1

test: install
	bash .ci/test-all

test-unit: install
	$(BIN)/pytest -m "not integration and not browser" -q

test-integration: install
	bash .ci/test-integration

lint: install
	$(BIN)/ruff check .

bench: install
	for b in tests/benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b | tail -n 1; done
