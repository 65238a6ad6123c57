"""Fixtures: one real agentd server process for the session, and clients connected to it."""

from __future__ import annotations

import json
import os
import queue
import secrets
import signal
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Deque, Dict, Iterator, Sequence, Tuple

import pytest

from agentd_client import AgentClient

REPO_ROOT = Path(__file__).resolve().parents[3]
STARTUP_TIMEOUT_S = 90.0
SERVER_COMMAND = [
    "node_modules/.bin/tsx",
    "src/cli/main.ts",
    "serve",
    "test/fixtures/agents.ts",
    "--examples",
    "--host",
    "127.0.0.1",
    "--port",
    "0",
    "--store",
    "memory:",
]


class AgentdProcess:
    """A real ``agentd serve`` process started from the repository root, with ``extra_args``
    after the default flags; ``address`` is the ``host:port`` it listens on (read from its
    ``agentd listening`` log line)."""

    def __init__(self, log_path: Path, extra_args: Sequence[str] = ()) -> None:
        env = dict(os.environ)
        # tsx's shebang runs `node`: put the project's Node (npm package `node`) first.
        env["PATH"] = f"{REPO_ROOT / 'node_modules' / '.bin'}{os.pathsep}{env.get('PATH', '')}"
        self._stderr = open(log_path, "w")
        self.log_path = log_path
        self._proc = subprocess.Popen(
            [*SERVER_COMMAND, *extra_args],
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

    def kill(self) -> None:
        """Kills the server's process group at once (SIGKILL: no graceful shutdown, as if the
        machine died) and waits for it to exit."""
        if self._proc.poll() is None:
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


@pytest.fixture(scope="session")
def session_ttl_address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``host:port`` of an agentd started with ``--session-ttl 2s`` (memory store): sessions
    are deleted 2 s after their last update."""
    server = AgentdProcess(tmp_path_factory.mktemp("agentd-session-ttl") / "stderr.log", ["--session-ttl", "2s"])
    try:
        yield server.address
    finally:
        server.stop()


@pytest.fixture(scope="session")
def session_size_cap_address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``host:port`` of an agentd started with ``--max-session-bytes 1024`` (memory store): a
    turn whose input makes the session larger fails in-band with RESOURCE_EXHAUSTED."""
    server = AgentdProcess(
        tmp_path_factory.mktemp("agentd-size-cap") / "stderr.log", ["--max-session-bytes", "1024"]
    )
    try:
        yield server.address
    finally:
        server.stop()


# --- Authentication and TLS: a throw-away PKI and servers started with --auth-tokens / --tls-* ---

#: Bearer tokens of the test tokens file: alice and alice2 are tenant-a, bob is tenant-b.
TOKEN_ALICE = "tok-alice-py-4f2a91d03be6c857a1"
TOKEN_ALICE2 = "tok-alice2-py-c07e1358af92d40b6e"
TOKEN_BOB = "tok-bob-py-8d5b60e2f7193ac4d8"

#: Client certificates: name -> subject. alice and alex are tenant-a (O), carol tenant-b; dave
#: has no O (tenant = CN "dave"), erin has O "dave"; mallory is signed by another CA.
CLIENT_SUBJECTS = {
    "alice": "/CN=alice/O=tenant-a",
    "alex": "/CN=alex/O=tenant-a",
    "carol": "/CN=carol/O=tenant-b",
    "dave": "/CN=dave",
    "erin": "/CN=erin/O=dave",
    "mallory": "/CN=mallory/O=tenant-a",
}


@dataclass(frozen=True)
class PkiFiles:
    """Paths of the test CA, the server's certificate (SANs localhost, 127.0.0.1 and
    agentd.test), client certificates and the tokens file. Private keys live in a temporary
    directory only."""

    ca: Path
    server_cert: Path
    server_key: Path
    tokens: Path
    clients: Dict[str, Tuple[Path, Path]]


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _new_key_and_csr(directory: Path, name: str, subject: str) -> None:
    _openssl(
        "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", f"{name}-key.pem", "-out", f"{name}.csr", "-subj", subject,
        cwd=directory,
    )


def _new_ca(directory: Path, name: str) -> None:
    _openssl(
        "req", "-x509", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
        "-nodes", "-keyout", f"{name}-key.pem", "-out", f"{name}.pem", "-days", "1",
        "-subj", f"/CN=agentd test {name}",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        cwd=directory,
    )


def _issue(directory: Path, ca: str, name: str, subject: str, extensions: str) -> Tuple[Path, Path]:
    _new_key_and_csr(directory, name, subject)
    (directory / f"{name}.ext").write_text(extensions)
    _openssl(
        "x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}-key.pem",
        "-set_serial", f"0x{secrets.token_hex(16)}", "-days", "1", "-out", f"{name}.pem",
        "-extfile", f"{name}.ext",
        cwd=directory,
    )
    return directory / f"{name}.pem", directory / f"{name}-key.pem"


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PkiFiles:
    """A CA, server and client certificates made with the ``openssl`` CLI, and a tokens file."""
    directory = tmp_path_factory.mktemp("pki")
    _new_ca(directory, "ca")
    _new_ca(directory, "rogue-ca")
    server_cert, server_key = _issue(
        directory, "ca", "server", "/CN=localhost",
        "subjectAltName=DNS:localhost,IP:127.0.0.1,DNS:agentd.test\n"
        "extendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature\n",
    )
    clients = {
        name: _issue(
            directory, "rogue-ca" if name == "mallory" else "ca", f"client-{name}", subject,
            "extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\n",
        )
        for name, subject in CLIENT_SUBJECTS.items()
    }
    tokens = directory / "tokens"
    tokens.write_text(
        "# TOKEN TENANT [SUBJECT]\n\n"
        f"{TOKEN_ALICE} tenant-a alice\n{TOKEN_ALICE2} tenant-a alice2\n{TOKEN_BOB} tenant-b\n"
    )
    return PkiFiles(directory / "ca.pem", server_cert, server_key, tokens, clients)


def _serve(tmp_path_factory: pytest.TempPathFactory, name: str, args: Sequence[str]) -> Iterator[str]:
    server = AgentdProcess(tmp_path_factory.mktemp(f"agentd-{name}") / "stderr.log", args)
    try:
        yield server.address
    finally:
        server.stop()


@pytest.fixture(scope="session")
def auth_address(tmp_path_factory: pytest.TempPathFactory, pki: PkiFiles) -> Iterator[str]:
    """``host:port`` of an agentd with ``--auth-tokens`` (plaintext)."""
    yield from _serve(tmp_path_factory, "auth", ["--auth-tokens", str(pki.tokens)])


@pytest.fixture(scope="session")
def tls_address(tmp_path_factory: pytest.TempPathFactory, pki: PkiFiles) -> Iterator[str]:
    """``host:port`` of an agentd serving TLS with the test server certificate, with
    ``--auth-tokens``."""
    yield from _serve(
        tmp_path_factory,
        "tls",
        ["--auth-tokens", str(pki.tokens), "--tls-cert", str(pki.server_cert), "--tls-key", str(pki.server_key)],
    )


@pytest.fixture(scope="session")
def mtls_address(tmp_path_factory: pytest.TempPathFactory, pki: PkiFiles) -> Iterator[str]:
    """``host:port`` of an agentd serving mutual TLS (client certificates of the test CA) and
    no other authentication: the client certificate is the principal."""
    yield from _serve(
        tmp_path_factory,
        "mtls",
        ["--tls-cert", str(pki.server_cert), "--tls-key", str(pki.server_key), "--tls-client-ca", str(pki.ca)],
    )
