"""Every command of the README's shell blocks works as written, against the production path it documents.

The commands are read from README.md's fenced ``sh`` blocks (never copied here), in order, so a README edit that
breaks one fails this test. The server is the README's own: ``make serve`` (migrate, collectstatic, gunicorn with
DEBUG off and the settings of ``.env.example``) and ``make worker`` (a short-work and a long-work celery worker)
on a database, Redis database and queues of this test's own, with the demo data ``make run`` loads
(``manage.py load_demo``), because the examples name its team and traces. Each command then runs in bash from the
checkout with the server's environment, ``http://127.0.0.1:8000`` pointing at this server, ``$ALICE_PASSWORD``
set, and every variable a command assigns (``TOKEN=$(...)``) kept for the next ones. A command passes when it exits
0, a ``curl`` when the answer is 2xx JSON, a ``--json`` command when its last line is JSON.

A command that is not run is named in NOT_RUN with the reason; a README command neither run nor named fails
the test, so a new command needs a decision here.
"""

from __future__ import annotations

import json
import os
import pty
import re
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import requests
from django.conf import settings

pytestmark = [pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOC_URL = "http://127.0.0.1:8000"
PASSWORD = "Readme-alice-" + secrets.token_hex(4)  # what the reader chose for $ALICE_PASSWORD
COMMAND_TIMEOUT_S = 600
BASH_OWN = {"_", "SHLVL", "PWD", "OLDPWD"}

# Commands (by their start) that are not run here, and why. Each must still be in the README (checked).
NOT_RUN = {
    "make run": "the SQLite demo with in-process jobs; timed from a fresh clone for BENCHMARKS.md, load_demo and "
                "the thread runner have tests of their own",
    "make test": "this suite",
    "export DATABASE_URL=postgres://postgres@127.0.0.1:5432/planner": "the shared database: this test uses its own",
    "export REDIS_URL=redis://127.0.0.1:6379/0": "the shared Redis: this test uses the run's own",
    "make serve": "started by this test as the server the commands talk to",
    "make worker": "started by this test as the workers behind that server",
    ".venv/bin/python manage.py leaderboard": "every cell is about ten CPU-minutes, and both forms rewrite "
                                              "docs/leaderboard.md in the checkout",
    ".venv/bin/python tests/benchmarks/disagg_report.py": "rewrites docs/disaggregation.md in the checkout",
    ".venv/bin/python manage.py compare fixtures/scenarios/demo_day.json": "four strategies on a 35,000-request "
                                                                           "day: minutes of CPU",
    ".venv/bin/python manage.py compare fixtures/scenarios/sageserve_day_authors_code.json": "three seeds with "
                                                                                              "baseline tuning: "
                                                                                              "many CPU-minutes",
    ".venv/bin/python manage.py simulate fixtures/scenarios/month_demo.json": "a 6M-request month, about a "
                                                                              "CPU-minute; its API form runs",
    "export DEBUG=false SECRET_KEY=...": "placeholders; the server runs with DEBUG off and its own values",
    "export BEHIND_TLS=true": "needs a TLS proxy in front; `check --deploy` below runs with it",
    "export DATABASE_URL=postgres://... REDIS_URL=redis://...": "placeholders; the server's own are set",
}
# Run with the Production block's settings (BEHIND_TLS and a real host name), not the demo server's.
PRODUCTION_CHECK = ".venv/bin/python manage.py check --deploy"


def readme_commands(text: str) -> list[str]:
    """The commands of the ``sh`` blocks, in order; a line ending in a backslash continues on the next."""
    commands, block, pending = [], False, ""
    for line in text.splitlines():
        if line.startswith("```"):
            block = line.strip() == "```sh"
            continue
        if not block or not (pending or line.strip()):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        commands.append((pending + line).strip())
        pending = ""
    return commands


def _not_run_reason(command: str) -> str | None:
    return next((why for start, why in NOT_RUN.items() if command.startswith(start)), None)


def test_readme_lists_its_commands_and_every_one_is_run_or_named():
    commands = readme_commands(README.read_text())
    assert len(commands) > 20, commands
    assert any(c.startswith("TOKEN=$(curl") for c in commands) and any("manage.py simulate" in c for c in commands)
    for start in NOT_RUN:
        assert any(c.startswith(start) for c in commands), f"NOT_RUN names {start!r}, which the README no longer has"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env_example() -> dict[str, str]:
    """The settings of .env.example that have a value (an empty one means 'unset')."""
    values = {}
    for line in (ROOT / ".env.example").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            if value.strip():
                values[key.strip()] = value.strip()
    return values


def _secret_key_from_readme(commands: list[str]) -> str:
    line = next(c for c in commands if c.startswith("export SECRET_KEY="))
    out = subprocess.run(["bash", "-c", f"set -e\n{line}\nprintf %s \"$SECRET_KEY\""], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0 and len(out.stdout) >= 50, f"{line}: {out.stderr}"
    return out.stdout


class Stack:
    """`make serve` and `make worker` of the README on a database, Redis database and queues of this test."""

    def __init__(self, folder: Path, secret_key: str):
        self.folder = folder
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.database = f"{settings.DATABASES['default']['NAME']}_readme"[:63]
        redis = re.sub(r"/\d*$", "", settings.REDIS_URL)
        env = {k: v for k, v in os.environ.items()
               if k not in {"DJANGO_SETTINGS_MODULE", "DEBUG", "JOBS_RUNNER", "PYTEST_CURRENT_TEST"}}
        env.update(_env_example())
        env.update({"SECRET_KEY": secret_key, "DEBUG": "false", "HOST": "127.0.0.1", "PORT": str(self.port),
                    "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{self.database}",
                    "REDIS_URL": f"{redis}/3", "JOBS_QUEUE": f"{settings.JOBS_QUEUE}_readme",
                    "PLANNER_DATA_DIR": str(folder / "data"), "WEB_CONCURRENCY": "1",
                    "PLANNER_ENGINE_BUILD": os.environ.get("PLANNER_ENGINE_BUILD", "auto")})
        self.env = env
        self.procs: list[subprocess.Popen] = []
        self._psql(f'DROP DATABASE IF EXISTS "{self.database}"')
        self._psql(f'CREATE DATABASE "{self.database}"')

    def _psql(self, sql: str) -> None:
        subprocess.run(["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-v", "ON_ERROR_STOP=1",
                        "-q", "-c", sql], check=True, capture_output=True, timeout=120)

    def start(self, target: str) -> None:
        """``make <target>`` in a process group of its own. The install step's venv is the one `make test` has just
        made (-o: not made again, so a checkout whose .venv is shared never reinstalls it)."""
        log = open(self.folder / f"make-{target}.log", "w")  # noqa: SIM115
        self.procs.append(subprocess.Popen(["make", "-o", ".venv/bin/.installed", target], cwd=ROOT, env=self.env,
                                           stdout=log, stderr=subprocess.STDOUT, start_new_session=True))

    def wait_healthy(self, timeout: float = 420.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            for proc in self.procs:
                assert proc.poll() is None, f"{proc.args} exited: {self.logs()}"
            try:
                health = requests.get(f"{self.url}/healthz", timeout=30)
                if health.status_code == 200:
                    return
            except requests.RequestException:
                pass
            assert time.monotonic() < deadline, f"no healthy server within {timeout} s: {self.logs()}"
            time.sleep(1)

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
                         for p in sorted(self.folder.glob("make-*.log")))

    def stop(self) -> None:
        for proc in self.procs:  # SIGTERM to each group this test started: make, gunicorn, celery
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the database cannot be dropped while a process holds it
            try:
                self._psql(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')
                return
            except subprocess.CalledProcessError:
                time.sleep(1)


def _run_with_password_prompts(script: str, env: dict, timeout: float) -> tuple[int, str]:
    """Run a command that asks for a password on its terminal (getpass), answering every prompt."""
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child
        os.chdir(ROOT)
        os.execvpe("bash", ["bash", "-c", script], env)
    out, answered, deadline = b"", 0, time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            data = os.read(fd, 4096)
        except OSError:
            break
        if not data:
            break
        out += data
        if out.count(b"Password") > answered:
            os.write(fd, env["ALICE_PASSWORD"].encode() + b"\n")
            answered += 1
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), out.decode(errors="replace")


def run_readme_command(command: str, env: dict, url: str) -> dict:
    """Run one README command in bash; return its exit code, output and the variables it left set."""
    line = command.replace(DOC_URL, url)
    with tempfile.NamedTemporaryFile(delete=False) as env_out:
        env_file = env_out.name
    wrapper = ""
    if line.startswith("curl "):  # the body, then the HTTP status on a line of its own
        wrapper = "curl() { command curl -sS -w '\\n%{http_code}\\n' \"$@\"; }\n"
    script = f"set -a -e -o pipefail\n{wrapper}{line}\nenv -0 > {shlex.quote(env_file)}\n"
    if "create_user" in line and "--password-stdin" not in line:
        code, output = _run_with_password_prompts(script, env, COMMAND_TIMEOUT_S)
    else:
        done = subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=COMMAND_TIMEOUT_S)
        code, output = done.returncode, done.stdout + ("\n" + done.stderr if done.returncode else "")
    new_env = {}
    raw = Path(env_file).read_bytes() if Path(env_file).exists() else b""
    Path(env_file).unlink(missing_ok=True)
    for item in raw.decode(errors="replace").split("\0"):  # the variables it set (set -a exports them)
        key, sep, value = item.partition("=")
        if sep and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key) and key not in BASH_OWN and env.get(key) != value:
            new_env[key] = value  # (a function, BASH_FUNC_curl%%, is no variable: the curl wrapper stays local)
    return {"code": code, "output": output, "env": new_env}


def _check(command: str, result: dict) -> str | None:
    """What is wrong with a command's outcome (None: it worked as the README says)."""
    out = result["output"]
    if result["code"] != 0:
        return f"exit {result['code']}: {out[-1500:]}"
    if command.startswith("curl "):
        body, _, status = out.rstrip("\n").rpartition("\n")
        if not status.isdigit() or not 200 <= int(status) < 300:
            return f"HTTP {status}: {body[:1500]}"
        if body.strip():
            try:
                json.loads(body)
            except ValueError:
                return f"not JSON: {body[:500]}"
    elif re.match(r"^[A-Z_]+=\$\(", command):
        name = command.split("=", 1)[0]
        if not result["env"].get(name):
            return f"${name} is empty"
    elif " --json" in command:
        last = [ln for ln in out.splitlines() if ln.strip()][-1:] or [""]
        try:
            json.loads(last[0])
        except ValueError:
            return f"the last line is not JSON: {out[-800:]}"
    return None


def _cancel_active_jobs(url: str, token: str | None) -> None:
    """Cancel the examples' queued and running jobs (a streamed month would hold the long worker for minutes)."""
    if not token:
        return
    api = {"Authorization": f"Token {token}"}
    try:
        for job in requests.get(f"{url}/api/jobs/", headers=api, timeout=30).json().get("results", []):
            if job["status"] in ("queued", "running"):
                requests.post(f"{url}/api/jobs/{job['id']}/cancel/", headers=api, timeout=30)
    except (requests.RequestException, ValueError) as exc:
        print(f"could not cancel the examples' jobs: {exc}")


def _cancel_started_job(url: str, token: str | None, output: str) -> None:
    """Cancel the job a curl example has just started, if it started one (its answer names a "job")."""
    body = output.rstrip("\n").rpartition("\n")[0]
    try:
        job = json.loads(body).get("job") if body.strip().startswith("{") else None
    except ValueError:
        return
    if token and isinstance(job, int):
        requests.post(f"{url}/api/jobs/{job}/cancel/", headers={"Authorization": f"Token {token}"}, timeout=30)


def _say(text: str) -> None:
    print(text, flush=True)


@pytest.mark.timeout(1800)
def test_every_readme_command_works_as_written_against_make_serve_and_make_worker(real_services, tmp_path):
    commands = readme_commands(README.read_text())
    folder = Path(os.environ.get("TEST_ARTIFACTS") or tmp_path) / "readme-commands"
    folder.mkdir(parents=True, exist_ok=True)
    stack = Stack(folder, _secret_key_from_readme(commands))
    env = dict(stack.env, ALICE_PASSWORD=PASSWORD)
    failures, t_start = [], time.monotonic()
    try:
        stack.start("serve")
        stack.start("worker")
        stack.wait_healthy()
        demo = subprocess.run([sys.executable, "manage.py", "load_demo"], cwd=ROOT, env=stack.env,
                              capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
        assert demo.returncode == 0, demo.stdout + demo.stderr
        _say(f"\nmake serve + make worker healthy, demo data loaded after {time.monotonic() - t_start:.0f} s")
        for command in commands:
            why = _not_run_reason(command)
            if command.startswith("export SECRET_KEY="):
                why = "run first: the server's key"
            if why:
                _say(f"  {'-':>8}  {command[:100]}  ({why[:60]})")
                continue
            run_env = env
            if command.startswith(PRODUCTION_CHECK):
                run_env = dict(env, BEHIND_TLS="true", NUM_PROXIES="1", ALLOWED_HOSTS="planner.example.com",
                               CSRF_TRUSTED_ORIGINS="https://planner.example.com")
            t0 = time.monotonic()
            result = run_readme_command(command, run_env, stack.url)
            problem = _check(command, result)
            _say(f"  {'FAILED' if problem else 'ok':>6} {time.monotonic() - t0:3.0f}s  {command[:110]}")
            if problem:
                failures.append(f"{command}\n  -> {problem}")
            env.update(result["env"])
            if command.startswith("curl ") and not problem:  # a job an example started (the streamed month)
                _cancel_started_job(stack.url, env.get("TOKEN"), result["output"])  # is not run to its end
    finally:
        _cancel_active_jobs(stack.url, env.get("TOKEN"))
        stack.stop()
    assert not failures, "README commands that do not work as written:\n" + "\n".join(failures) + "\n" + stack.logs()
