"""The chaos workload: conversations of many turns on one client, timed, and the check that each
session's history holds every input exactly once, in order."""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

from agentd_client import AgentClient, AgentdError, TurnRecord, message_text
from agentd_client.aio import AsyncAgentClient

__all__ = ["ChaosResult", "run_sync", "run_async", "percentile", "history_problems"]

AGENT = "assistant"


@dataclass
class ChaosResult:
    """What a workload did: per conversation its session and inputs, every turn's duration
    (seconds), every error raised to the caller, and every turn delivered wrong (a TurnEnd
    missing or with another turn index, or text that is not a prefix of the echo: a chunk
    delivered twice or out of order; a turn agentd committed while the connection was down
    answers with its TurnEnd alone, so the text may stop short)."""

    sessions: Dict[int, Optional[str]] = field(default_factory=dict)
    inputs: Dict[int, List[str]] = field(default_factory=dict)
    turn_seconds: List[float] = field(default_factory=list)
    errors: List[str] = field(default_factory=list)
    misdelivered: List[str] = field(default_factory=list)

    def summary(self, label: str, resets: int, retries: int) -> str:
        """One line with the counts and the p50/p99 turn time in ms."""
        p50 = percentile(self.turn_seconds, 50) * 1000
        p99 = percentile(self.turn_seconds, 99) * 1000
        return (
            f"[chaos] {label}: turns={len(self.turn_seconds)} errors={len(self.errors)} "
            f"resets={resets} retries={retries} p50={p50:.1f}ms p99={p99:.1f}ms"
        )


def percentile(values: Sequence[float], pct: float) -> float:
    """The ``pct`` percentile of ``values`` (nearest rank); 0 for none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(pct / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def _text(tag: str, conversation: int, turn: int) -> str:
    return f"{tag} conversation {conversation} turn {turn} says hello"


def _misdelivery(turn: TurnRecord, index: int, text: str) -> Optional[str]:
    """What is wrong with turn ``index`` as delivered, or None."""
    if turn.turn_end is None or turn.turn_index != index:
        return f"{text!r}: turn index {turn.turn_index}, want {index}"
    if not f"echo: {text}".startswith(turn.text):
        return f"{text!r}: delivered text {turn.text!r}"
    return None


def run_sync(client: AgentClient, conversations: int, turns: int, tag: str) -> ChaosResult:
    """``conversations`` threads, each one conversation of ``turns`` turns on ``client``."""
    result = ChaosResult()
    lock = threading.Lock()

    def converse(index: int) -> None:
        sent: List[str] = []
        durations: List[float] = []
        session: Optional[str] = None
        try:
            with client.chat(AGENT) as conversation:
                for turn in range(turns):
                    text = _text(tag, index, turn)
                    sent.append(text)
                    started = time.monotonic()
                    sent_turn = conversation.send(text)
                    sent_turn.wait()
                    durations.append(time.monotonic() - started)
                    wrong = _misdelivery(sent_turn, turn, text)
                    if wrong:
                        with lock:
                            result.misdelivered.append(wrong)
                    session = conversation.session_id
        except AgentdError as err:
            with lock:
                result.errors.append(f"conversation {index}: {err}")
        with lock:
            result.sessions[index] = session
            result.inputs[index] = sent
            result.turn_seconds.extend(durations)

    threads = [threading.Thread(target=converse, args=(i,)) for i in range(conversations)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return result


async def run_async(client: AsyncAgentClient, conversations: int, turns: int, tag: str) -> ChaosResult:
    """``conversations`` tasks, each one conversation of ``turns`` turns on ``client``."""
    result = ChaosResult()

    async def converse(index: int) -> None:
        sent: List[str] = []
        session: Optional[str] = None
        try:
            async with client.chat(AGENT) as conversation:
                for turn in range(turns):
                    text = _text(tag, index, turn)
                    sent.append(text)
                    started = time.monotonic()
                    sent_turn = await conversation.send(text)
                    await sent_turn.wait()
                    result.turn_seconds.append(time.monotonic() - started)
                    wrong = _misdelivery(sent_turn, turn, text)
                    if wrong:
                        result.misdelivered.append(wrong)
                    session = conversation.session_id
        except AgentdError as err:
            result.errors.append(f"conversation {index}: {err}")
        result.sessions[index] = session
        result.inputs[index] = sent

    await asyncio.gather(*(converse(i) for i in range(conversations)))
    return result


def history_problems(client: AgentClient, result: ChaosResult) -> List[str]:
    """What is wrong with each session's stored history: it must be exactly the inputs sent,
    in order, each followed by its echo (read with a client that does not go through the
    proxy)."""
    problems: List[str] = []
    for index, inputs in sorted(result.inputs.items()):
        session = result.sessions.get(index)
        if session is None:
            problems.append(f"conversation {index}: no session")
            continue
        snapshot = client.get_snapshot(AGENT, session_id=session)
        stored = [message_text(m) for m in snapshot.state.messages]
        expected = [text for sent in inputs for text in (sent, f"echo: {sent}")]
        if stored != expected:
            users = stored[0::2]
            duplicated = sorted({u for u in users if users.count(u) > 1})
            missing = [sent for sent in inputs if sent not in users]
            problems.append(
                f"conversation {index} ({session}): {len(stored)} messages, want {len(expected)}; "
                f"duplicated {duplicated[:3]}, missing {missing[:3]}"
            )
    return problems
