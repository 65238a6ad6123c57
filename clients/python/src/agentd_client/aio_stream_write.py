"""Writing to a ``grpc.aio`` stream call without losing the server's status.

grpcio's asyncio ``StreamStreamCall.write`` (1.85) replaces the call's status with
``INTERNAL: Internal error from Core`` when the write races the server ending the call: gRPC
Core has received the server's status, Python has not processed it yet, so the send fails and
grpcio records that failure as the call's status (grpc/grpc#36066). A conversation whose
server rejected it (``UNAUTHENTICATED``, ``NOT_FOUND``, ``RESOURCE_EXHAUSTED``…) would then
report ``INTERNAL`` instead, now and then.
"""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import grpc.aio

__all__ = ["write_request"]


async def write_request(call: grpc.aio.StreamStreamCall, request: Any) -> None:
    """Sends ``request`` (a protobuf message) on ``call``, or nothing when the call has ended:
    it never raises for an ended call and never changes the call's status, so the next read
    reports the status the server sent.

    The message goes through the call's Core object (``send_serialized_message``) after the
    call's metadata went out (``wait_for_connection``), which is what ``call.write`` does
    minus recording a failed send as the call's status. On a grpcio without that object it
    falls back to ``call.write``. Cancelling the awaiting task cancels the call, as
    ``call.write`` does.
    """
    if call.done():
        return
    send = getattr(getattr(call, "_cython_call", None), "send_serialized_message", None)
    if send is None:
        try:
            await call.write(request)
        except (grpc.RpcError, asyncio.InvalidStateError):
            pass  # the call already ended; the next read reports why
        return
    try:
        await call.wait_for_connection()
    except grpc.RpcError:
        return  # the call already ended; the next read reports why
    if call.done():
        return
    try:
        await send(request.SerializeToString())
    except asyncio.CancelledError:
        call.cancel()
        raise
    except Exception:  # noqa: BLE001 - Core refuses a send on an ended call (cygrpc.InternalError)
        pass  # the call ended; its status arrives on the read side
