"""Fixtures: one real agentd server process for the session, and clients connected to it."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from collections import deque
from pathlib import Path
from typing import Deque, Iterator

import pytest

from agentd_client import AgentClient

REPO_ROOT = Path(__file__).resolve().parents[3]
STARTUP_TIMEOUT_S = 90.0
SERVER_COMMAND = [
    "node_modules/.bin/tsx",
    "src/cli/main.ts",
    "serve",
    "test/fixtures/agents.ts",
    "--host",
    "127.0.0.1",
    "--port",
    "0",
    "--store",
    "memory:",
]


class AgentdProcess:
    """A real ``agentd serve`` process started from the repository root; ``address`` is the
    ``host:port`` it listens on (read from its ``agentd listening`` log line)."""

    def __init__(self, log_path: Path) -> None:
        env = dict(os.environ)
        # tsx's shebang runs `node`: put the project's Node (npm package `node`) first.
        env["PATH"] = f"{REPO_ROOT / 'node_modules' / '.bin'}{os.pathsep}{env.get('PATH', '')}"
        self._stderr = open(log_path, "w")
        self.log_path = log_path
        self._proc = subprocess.Popen(
            SERVER_COMMAND,
            cwd=REPO_ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            start_new_session=True,  # its own process group, so stop() reaches tsx's child
        )
        self._lines: "queue.Queue[str]" = queue.Queue()
        self.recent_stdout: Deque[str] = deque(maxlen=200)
        threading.Thread(target=self._pump_stdout, daemon=True).start()
        self.address = f"127.0.0.1:{self._wait_for_port()}"

    def _pump_stdout(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self.recent_stdout.append(line)
            self._lines.put(line)
        self._lines.put("")  # EOF

    def _wait_for_port(self) -> int:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                line = self._lines.get(timeout=0.5)
            except queue.Empty:
                continue
            if line == "":
                break
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and record.get("msg") == "agentd listening":
                return int(record["port"])
        self.stop()
        stderr_tail = self.log_path.read_text()[-4000:]
        raise RuntimeError(
            f"agentd did not log 'agentd listening' within {STARTUP_TIMEOUT_S}s "
            f"(exit code {self._proc.poll()}).\nstdout:\n{''.join(self.recent_stdout)}\n"
            f"stderr:\n{stderr_tail}"
        )

    def stop(self) -> None:
        """Terminates the server's process group (SIGTERM, then SIGKILL after 10 s)."""
        if self._proc.poll() is None:
            os.killpg(self._proc.pid, signal.SIGTERM)
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self._proc.pid, signal.SIGKILL)
                self._proc.wait(timeout=10)
        self._stderr.close()


@pytest.fixture(scope="session")
def agentd_address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The ``host:port`` of a real agentd serving the default agents plus
    ``test/fixtures/agents.ts``, with the memory store; stopped after the session."""
    server = AgentdProcess(tmp_path_factory.mktemp("agentd") / "stderr.log")
    try:
        yield server.address
    finally:
        server.stop()


@pytest.fixture
def client(agentd_address: str) -> Iterator[AgentClient]:
    """A fresh synchronous client connected to the test server, closed after the test."""
    with AgentClient(agentd_address, timeout=30) as c:
        yield c
