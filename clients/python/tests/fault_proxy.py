"""A fault-injecting TCP proxy for the tests: forwards a loopback port to agentd and resets the
client's connection (RST: SO_LINGER 0, then close) every few KB of traffic, or freezes it (a
server that vanished without closing it); it counts the HTTP/2 PINGs the client sends."""

from __future__ import annotations

import random
import socket
import struct
import threading
from typing import List, Optional, Tuple

__all__ = ["FaultProxy"]

_LINGER_ZERO = struct.pack("ii", 1, 0)


def _reset(sock: socket.socket) -> None:
    """Closes ``sock`` with an RST instead of a FIN (SO_LINGER on, timeout 0). ``SHUT_RD``
    first wakes a thread blocked in ``recv`` on it without sending anything: until that
    thread lets go of the socket, closing it would send nothing at all."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_ZERO)
        sock.shutdown(socket.SHUT_RD)
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass


#: What an HTTP/2 client sends before its first frame (RFC 9113, 3.4).
_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_FRAME_HEADER = 9
_PING = 0x6
_ACK = 0x1


class _PingCounter:
    """Reads the HTTP/2 frames a client sends (plaintext h2c) and counts its PINGs (not the
    acknowledgements of the server's): ``pings`` in all, ``in_a_row`` since the last frame of
    any other type (DATA, HEADERS, WINDOW_UPDATE, ...; a PING acknowledgement does not count
    as one), i.e. PINGs sent while the client sent nothing else."""

    def __init__(self) -> None:
        self.pings = 0
        self.in_a_row = 0
        self._preface = len(_PREFACE)  # bytes of the preface still to skip
        self._header = b""  # the frame header read so far
        self._payload = 0  # bytes of the current frame's payload still to skip

    def feed(self, data: bytes) -> None:
        at = 0
        while at < len(data):
            if self._preface or self._payload:
                skipped = min(self._preface or self._payload, len(data) - at)
                if self._preface:
                    self._preface -= skipped
                else:
                    self._payload -= skipped
                at += skipped
                continue
            wanted = _FRAME_HEADER - len(self._header)
            self._header += data[at : at + wanted]
            at += wanted
            if len(self._header) < _FRAME_HEADER:
                return
            kind, flags = self._header[3], self._header[4]
            if kind == _PING and not flags & _ACK:
                self.pings += 1
                self.in_a_row += 1
            elif kind != _PING:
                self.in_a_row = 0
            self._payload = int.from_bytes(self._header[:3], "big")
            self._header = b""


class _Link:
    """One proxied connection: the client's socket, agentd's socket and the bytes forwarded."""

    def __init__(self, proxy: "FaultProxy", client: socket.socket, server: socket.socket) -> None:
        self._proxy = proxy
        self.client = client
        self.server = server
        self._lock = threading.Lock()
        self._forwarded = 0
        self._limit = proxy._next_limit()
        self._closed = False
        #: Set by ``freeze()``: nothing is forwarded any more, and neither side learns when the
        #: other closes (both sockets stay open until ``close()``).
        self.frozen = False
        self.client_pings = _PingCounter()

    def start(self) -> None:
        for source, sink in ((self.client, self.server), (self.server, self.client)):
            threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while True:
                data = source.recv(16384)
                if not data:
                    break
                if source is self.client:
                    self.client_pings.feed(data)
                data, reset = self._account(data)
                if data:
                    sink.sendall(data)
                if reset:
                    self.reset()
                    return
        except OSError:
            pass
        if not self.frozen:
            self.close()

    def freeze(self) -> None:
        """Stops forwarding, both ways, and keeps both sockets open whatever either side does."""
        with self._lock:
            self.frozen = True

    def _account(self, data: bytes) -> Tuple[bytes, bool]:
        """The part of ``data`` to forward and whether the connection is reset after it."""
        self._proxy._count_bytes(len(data))
        with self._lock:
            if self.frozen:
                return b"", False
            if self._closed:
                # Reset (or closed) meanwhile: nothing more passes. A pump thread that was slow to
                # wake (a busy CPU) can still read what the client sent before its socket closed;
                # forwarding it to agentd's side, held open, would deliver an input the client
                # saw fail.
                return b"", False
            if self._limit is None:
                return data, False
            room = self._limit - self._forwarded
            if len(data) < room:
                self._forwarded += len(data)
                return data, False
            self._forwarded = self._limit
            return data[:room], True

    def reset(self) -> None:
        """RSTs the client's connection (and agentd's), counting one reset."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._proxy._count_reset()
        _reset(self.client)
        delay = self._proxy.server_reset_delay
        if delay is None:
            # agentd's side stays open until the test lets it go: agentd learns of the drop
            # only then, as behind a load balancer that reset only the client's connection.
            self._proxy._hold(self.server)
        elif delay > 0:
            threading.Timer(delay, _reset, args=(self.server,)).start()
        else:
            _reset(self.server)

    def close(self) -> None:
        """Closes both sides quietly (one side ended)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        for sock in (self.client, self.server):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()


class FaultProxy:
    """Listens on ``127.0.0.1`` (``address``) and forwards every connection to ``target``
    (``host:port``). While ``reset_every`` is set, each connection is reset (RST to the client
    and to agentd) once it has carried ``reset_every`` bytes (both directions together), each
    limit drawn uniformly within ``+-jitter`` of it; after ``max_resets`` resets (None:
    unlimited) connections are left alone. ``resets`` counts the resets done. agentd's side of
    a reset connection is reset too, ``server_reset_delay`` seconds later (0: at once; None: when
    ``release_held()`` is called, or at ``close()``). ``freeze_all()`` makes the open
    connections go silent instead. ``client_pings_in_a_row()`` tells how many HTTP/2 PINGs a
    client sent on one connection without any other frame in between. Threads, so it
    serves the synchronous and the asyncio client alike. ``close()`` stops it."""

    def __init__(
        self,
        target: str,
        *,
        reset_every: Optional[int] = None,
        jitter: float = 0.5,
        max_resets: Optional[int] = None,
        seed: Optional[int] = None,
        server_reset_delay: Optional[float] = 0.0,
    ) -> None:
        host, port = target.rsplit(":", 1)
        self._target = (host, int(port))
        self.reset_every = reset_every
        self.jitter = jitter
        self.max_resets = max_resets
        self.server_reset_delay = server_reset_delay
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._resets = 0
        self._bytes = 0
        self._links: List[_Link] = []
        self._held: List[socket.socket] = []
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.address = f"127.0.0.1:{self._listener.getsockname()[1]}"
        self._stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def resets(self) -> int:
        """Connections reset so far."""
        return self._resets

    def reset_all(self) -> None:
        """Resets every open connection now (counted)."""
        with self._lock:
            links = list(self._links)
        for link in links:
            link.reset()

    def freeze_all(self) -> None:
        """Every open connection stops forwarding, both ways, and stays open: what a server
        looks like when its host vanished (crashed, or its network path dropped) without a FIN
        or an RST. Nothing either side sends arrives, a side that closes its socket is not
        told to the other, and the sockets close at ``close()``. Connections opened later are
        not frozen."""
        with self._lock:
            links = [link for link in self._links if not link._closed]
        for link in links:
            link.freeze()

    def client_pings_in_a_row(self) -> int:
        """The most HTTP/2 PINGs a client sent on one connection (open or frozen) since it last
        sent another frame (DATA, HEADERS, WINDOW_UPDATE, ...): the keepalive PINGs of a quiet
        stream. Reads plaintext HTTP/2 only."""
        with self._lock:
            links = list(self._links)
        return max((link.client_pings.in_a_row for link in links), default=0)

    def release_held(self) -> None:
        """Resets agentd's side of every reset connection held open (``server_reset_delay=None``)."""
        with self._lock:
            held, self._held = self._held, []
        for sock in held:
            _reset(sock)

    def _hold(self, server: socket.socket) -> None:
        with self._lock:
            self._held.append(server)

    def _next_limit(self) -> Optional[int]:
        with self._lock:
            if self.reset_every is None:
                return None
            if self.max_resets is not None and self._resets >= self.max_resets:
                return None
            spread = self.reset_every * self.jitter
            return max(1, int(self._random.uniform(self.reset_every - spread, self.reset_every + spread)))

    @property
    def forwarded_bytes(self) -> int:
        """Bytes received from either side so far (forwarded, or cut by a reset)."""
        return self._bytes

    def _count_bytes(self, count: int) -> None:
        with self._lock:
            self._bytes += count

    def _count_reset(self) -> None:
        with self._lock:
            self._resets += 1

    def _accept(self) -> None:
        while not self._stopped:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self._target)
            except OSError:
                _reset(client)
                continue
            for sock in (client, server):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            link = _Link(self, client, server)
            with self._lock:
                self._links = [known for known in self._links if not known._closed]
                self._links.append(link)
            link.start()

    def close(self) -> None:
        """Stops listening and closes every connection."""
        self._stopped = True
        self._listener.close()
        with self._lock:
            links = list(self._links)
        for link in links:
            link.close()
        self.release_held()

    def __enter__(self) -> "FaultProxy":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
