"""The Python client's side of issue 47's crash test (test/harness/restart-workload.ts runs it):
CONVERSATIONS concurrent conversations (threads) of TURNS turns with the assistant echo agent on
AGENTD_URL, with the client's default retry policy. A failed turn is recorded and the
conversation goes on in a new Chat resuming its session. Prints one JSON object: per
conversation its sessions and turns (a failed one with its code and message), and the client's retries."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any, Dict, List, Optional

from agentd_client import AgentClient, AgentdError

FINISH_STOP = "FINISH_REASON_STOP"


def converse(client: AgentClient, index: int, turns: int, tag: str) -> Dict[str, Any]:
    sessions: List[str] = []
    results: List[Dict[str, Any]] = []
    conversation = None

    def note() -> None:
        session_id: Optional[str] = conversation.session_id if conversation is not None else None
        if session_id and (not sessions or sessions[-1] != session_id):
            sessions.append(session_id)

    for turn_number in range(turns):
        text = f"{tag} conversation {index} turn {turn_number}"
        if conversation is None:
            conversation = client.chat("assistant", session_id=sessions[-1] if sessions else None)
        try:
            turn = conversation.send(text)
            turn.wait()
            name = turn.finish_reason_name
            ok = name == FINISH_STOP
            code = None if ok else (name or "NO_TURN_END").removeprefix("FINISH_REASON_")
            message = None if ok else f"turn ended {code.lower()}"
        except AgentdError as error:
            ok, code, message = False, error.code.name, error.details
        failure = {} if ok else {"code": code, "message": message}
        results.append({"text": text, "ok": ok, "endMs": int(time.time() * 1000), **failure})
        note()
        if not ok:
            conversation.close()
            conversation = None
    if conversation is not None:
        try:
            conversation.output()
        except AgentdError:
            pass
        note()
        conversation.close()
    return {"sessions": sessions, "turns": results}


def main() -> None:
    target = os.environ["AGENTD_URL"].removeprefix("http://")
    conversations = int(os.environ["CONVERSATIONS"])
    turns = int(os.environ["TURNS"])
    tag = os.environ["TAG"]
    out: List[Dict[str, Any]] = [{} for _ in range(conversations)]
    with AgentClient(target) as client:

        def run(index: int) -> None:
            out[index] = converse(client, index, turns, tag)

        threads = [threading.Thread(target=run, args=(i,)) for i in range(conversations)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        json.dump({"conversations": out, "retries": client.stats.retries}, sys.stdout)


if __name__ == "__main__":
    main()
