"""Fault-injection helpers: a private Redis on its own port, celery workers we may kill -9, a web
server process on the same private Redis. Never touches the machine's shared Redis (6379)."""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]

# Short intervals so a lost worker is noticed in seconds, not minutes (defaults: 10/90/30/60 s).
FAST_REAPER_ENV = {
    "JOBS_HEARTBEAT_S": "1",
    "JOBS_HEARTBEAT_TIMEOUT_S": "15",
    "JOBS_REAPER_INTERVAL_S": "2",
    "JOBS_REDISPATCH_AFTER_S": "5",
    "JOBS_CANCEL_POLL_S": "1",
}


def free_port() -> int:
    """A port the kernel just handed out (random, so two test runs at once rarely pick the same one)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PrivateRedis:
    """A redis-server that keeps nothing on disk (like this machine's), on a port of its own."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.dir = tempfile.mkdtemp(prefix="planner-redis-")
        self.proc: subprocess.Popen | None = None

    def start(self) -> PrivateRedis:
        """Start on self.port; the server that answers there must be this process (another run's Redis
        that took the port first would otherwise be used, and its data disturbed)."""
        import redis

        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", self.dir, "--daemonize", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                if redis.Redis.from_url(self.url, socket_connect_timeout=1).info("server")["process_id"] == self.proc.pid:
                    return self
            except Exception:
                pass
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"private redis on {self.port} did not start (port taken?)")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.proc = None


def service_env(redis_url: str, **extra: str) -> dict:
    db = settings.DATABASES["default"]
    env = dict(os.environ)
    env.update({
        "DATABASE_URL": f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
        "DJANGO_SETTINGS_MODULE": "planner.settings",
        "PLANNER_DATA_DIR": str(settings.DATA_DIR),
        "REDIS_URL": redis_url,
        "JOBS_RUNNER": "celery",
        "DEBUG": "true",
        "SECRET_KEY": "fault-tests-only-" + "x" * 40,
        **FAST_REAPER_ENV,
        **extra,
    })
    return env


class Worker:
    """``celery -A planner worker`` in its own process group (so kill -9 can take it all)."""

    def __init__(self, redis_url: str, name: str, concurrency: int = 1, *, queues: list[str] | None = None,
                 env: dict | None = None) -> None:
        self.redis_url = redis_url
        self.log_path = Path(settings.DATA_DIR) / f"fault-worker-{name}.log"
        log = open(self.log_path, "a")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "planner", "worker", "--loglevel=INFO",
             f"--concurrency={concurrency}", "-Q", ",".join(queues or settings.JOBS_QUEUES), "--without-gossip",
             "--without-mingle", "--without-heartbeat", "-n", f"{name}-{os.getpid()}@%h"],
            cwd=ROOT, env=service_env(redis_url, **(env or {})), stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)
        log.close()

    def wait_ready(self, timeout: float = 90.0) -> Worker:
        app = sender_app(self.redis_url)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"worker exited with {self.proc.returncode}; see {self.log_path}")
            try:
                if app.control.ping(timeout=1.0):
                    return self
            except Exception:
                pass
            time.sleep(0.5)
        raise AssertionError(f"worker did not answer a ping within {timeout} s; see {self.log_path}")

    def kill9(self) -> None:
        """SIGKILL the main process and its pool children at once (a node loss, the OOM killer on the group)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                self.kill9()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]


_APPS: dict = {}


def sender_app(redis_url: str):
    from celery import Celery

    if redis_url not in _APPS:
        app = Celery("fault-tests", broker=redis_url, set_as_current=False)  # never the app run_job binds to
        app.conf.update(task_serializer="json", accept_content=["json"], broker_connection_retry_on_startup=True,
                        broker_connection_timeout=2, task_default_queue=settings.JOBS_QUEUE)
        _APPS[redis_url] = app
    return _APPS[redis_url]


def private_dispatch(redis_url: str):
    """A stand-in for planner.jobs.services.dispatch in this test process that sends to the private Redis."""
    from planner.jobs.models import Job

    def dispatch(job_id: int) -> bool:
        result = sender_app(redis_url).send_task("planner.jobs.run_job", args=[job_id])
        Job.objects.filter(pk=job_id).update(celery_task_id=result.id)
        return True

    return dispatch


class WebServer:
    """``manage.py runserver`` on the private Redis (the API process of the outage test)."""

    def __init__(self, redis_url: str, *, env: dict | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = Path(settings.DATA_DIR) / "fault-web.log"
        log = open(self.log_path, "a")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{self.port}"],
            cwd=ROOT, env=service_env(redis_url, **(env or {})), stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)
        log.close()
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"web server exited; see {self.log_path}")
            try:
                requests.get(f"{self.url}/login/", timeout=2)
                return
            except requests.RequestException:
                time.sleep(0.3)
        raise AssertionError(f"web server did not come up; see {self.log_path}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)


class TcpProxy:
    """A TCP relay on a port of its own in front of the shared PostgreSQL, so a test can take "the database" away
    from the processes it started (cut: every relayed connection is dropped and new ones are refused) and give it
    back (restore), without stopping or reconfiguring the shared server."""

    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self.port = free_port()
        self._listener: socket.socket | None = None
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()

    def start(self) -> TcpProxy:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True, name="tcp-proxy").start()
        return self

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed by cut()
            if self._listener is not listener:  # cut while this connection was being accepted
                client.close()
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._conns += [client, upstream]
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self) -> None:
        """The database goes away: the port refuses connections and every open one is reset."""
        if self._listener is not None:
            try:  # shutdown wakes the thread blocked in accept (a bare close would keep the port listening)
                self._listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._listener.close()
            self._listener = None
        with self._lock:
            conns, self._conns = self._conns, []
        for sock in conns:
            try:  # shutdown wakes the relay thread blocked in recv (a bare close would not end the connection)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                sock.close()
            except OSError:
                pass

    def restore(self) -> None:
        self.start()

    def stop(self) -> None:
        self.cut()
