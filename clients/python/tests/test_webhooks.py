"""Webhooks: a Python receiver verifies agentd's signed deliveries with the standardwebhooks library."""

from __future__ import annotations

import base64
import json
import os
import queue
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

import pytest
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from agentd_client import AgentClient

from conftest import AgentdProcess

Delivery = Tuple[Dict[str, str], bytes]


def _secret() -> str:
    return "whsec_" + base64.b64encode(os.urandom(32)).decode()


class _Receiver:
    """A real HTTP server on 127.0.0.1 that queues each POST (headers, body) and answers 204."""

    def __init__(self) -> None:
        self.deliveries: "queue.Queue[Delivery]" = queue.Queue()
        deliveries = self.deliveries

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = self.rfile.read(int(self.headers["content-length"]))
                deliveries.put(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *_args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def webhook_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tuple[str, _Receiver, List[str]]]:
    """An agentd sending webhooks to a Python receiver, signed with two secrets (rotation)."""
    directory = tmp_path_factory.mktemp("agentd-webhooks")
    secrets = [_secret(), _secret()]
    secret_file = directory / "secrets"
    secret_file.write_text("\n".join(secrets) + "\n")
    receiver = _Receiver()
    server = AgentdProcess(
        Path(directory / "stderr.log"),
        ["--webhook-url", receiver.url, "--webhook-secret-file", str(secret_file), "--webhook-allow-private"],
    )
    try:
        yield server.address, receiver, secrets
    finally:
        server.stop()
        receiver.server.shutdown()


def test_a_detached_job_is_announced_and_each_rotated_secret_verifies_it(webhook_server):
    address, receiver, secrets = webhook_server
    with AgentClient(address, timeout=30) as client:
        conversation = client.chat("assistant")
        conversation.send("background work", metadata={"echoDelayMs": 50})
        snapshot_id = conversation.detach().snapshot_id
    headers, body = receiver.deliveries.get(timeout=30)
    assert headers["webhook-id"] == f"msg_{snapshot_id}"
    for secret in secrets:
        payload = Webhook(secret).verify(body, headers)
        assert payload["type"] == "invocation.completed"
        assert payload["data"]["snapshot_id"] == snapshot_id
        assert payload["data"]["status"] == "completed"
    with pytest.raises(WebhookVerificationError):
        Webhook(_secret()).verify(body, headers)
    assert json.loads(body)["data"]["agent"] == "assistant"
