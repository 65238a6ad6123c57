"""Authentication and TLS settings of the clients: ``TLSConfig`` and the bearer token."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional, Tuple, Union

import grpc

__all__ = ["PEMSource", "TLSConfig", "TLSLike", "TokenLike"]

#: A PEM file's path (``str`` or ``os.PathLike``), or the PEM content itself (``bytes``).
PEMSource = Union[str, "os.PathLike[str]", bytes, None]

#: A bearer token, or a function returning one that is called for every call (rotating tokens).
TokenLike = Union[str, Callable[[], str], None]


@dataclass(frozen=True)
class TLSConfig:
    """TLS settings of a client channel.

    ``ca`` is the CA bundle that signs the server's certificate (``None``: grpcio's default
    roots); ``cert`` and ``key`` are the client certificate and its private key for mutual
    TLS (both or neither). Each is a PEM file's path or the PEM bytes. ``server_name`` is the
    name checked against the server's certificate when the target's host is not in it (it
    sets ``grpc.ssl_target_name_override``). The key never appears in ``repr``.
    """

    ca: PEMSource = None
    cert: PEMSource = None
    key: PEMSource = field(default=None, repr=False)
    server_name: Optional[str] = None

    def __post_init__(self) -> None:
        if (self.cert is None) != (self.key is None):
            raise ValueError("TLSConfig: a client certificate needs both cert and key")

    def credentials(self) -> grpc.ChannelCredentials:
        """The ``grpc.ssl_channel_credentials`` of these settings (reads the files)."""
        return grpc.ssl_channel_credentials(
            root_certificates=_read_pem(self.ca, "ca"),
            private_key=_read_pem(self.key, "key"),
            certificate_chain=_read_pem(self.cert, "cert"),
        )

    def channel_options(self) -> List[Tuple[str, Any]]:
        """The channel options these settings need (the server-name override)."""
        if not self.server_name:
            return []
        return [("grpc.ssl_target_name_override", self.server_name)]


#: What ``tls=`` accepts: ``True`` (TLS with the default roots), a :class:`TLSConfig`, or
#: ``None``/``False`` (no TLS unless ``credentials=`` are given).
TLSLike = Union[bool, TLSConfig, None]


def _read_pem(source: PEMSource, what: str) -> Optional[bytes]:
    if source is None:
        return None
    if isinstance(source, bytes):
        return source
    try:
        with open(source, "rb") as f:
            return f.read()
    except OSError as err:
        # Names the file, never its content.
        raise ValueError(f"TLSConfig: cannot read the {what} file {os.fspath(source)!r}: {err.strerror}") from None


def bearer_value(token: str) -> Optional[str]:
    """``"Bearer <token>"``, or ``None`` when ``token`` is empty, not a string or has a
    character that is not visible ASCII (no valid header value, and never quoted in an
    error)."""
    if not isinstance(token, str) or not token or any(not ("!" <= ch <= "~") for ch in token):
        return None
    return f"Bearer {token}"
