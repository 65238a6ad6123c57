"""Bearer tokens, per-tenant sessions, TLS and mutual TLS against real agentd servers
(started with --auth-tokens / --tls-cert / --tls-client-ca by the conftest fixtures)."""

import asyncio
from typing import Callable, Optional

import grpc
import pytest

from agentd.v1 import agent_pb2, state_pb2
from agentd_client import (
    AgentClient,
    AgentdError,
    NotFoundError,
    RetryPolicy,
    TLSConfig,
    UnauthenticatedError,
    UnavailableError,
)
from agentd_client.aio import AsyncAgentClient
from conftest import TOKEN_ALICE, TOKEN_ALICE2, TOKEN_BOB, PkiFiles


def two_turn_chat(client: AgentClient) -> agent_pb2.AgentOutput:
    """Holds a two-turn conversation with ``assistant`` and returns its output, asserting both
    turns echo their input."""
    conversation = client.chat("assistant")
    first = conversation.send("one")
    first.wait()
    second = conversation.send("two")
    second.wait()
    output = conversation.output()
    assert (first.text, first.turn_index) == ("echo: one", 0)
    assert (second.text, second.turn_index) == ("echo: two", 1)
    assert output.session_id and output.snapshot_id == second.snapshot_id
    return output


def first_turn(client: AgentClient, **sources: str) -> None:
    """Sends one turn to ``assistant`` (resuming ``sources``) and waits for it."""
    conversation = client.chat("assistant", **sources)
    conversation.send("hi").wait()
    conversation.output()


def assert_no_secret(err: BaseException, secret: str) -> None:
    assert secret not in str(err) and secret not in repr(err)
    if isinstance(err, AgentdError):
        assert secret not in err.details


def tls(pki: PkiFiles, client: Optional[str] = None, **kwargs) -> TLSConfig:
    """TLS settings trusting the test CA, with client certificate ``client`` if given."""
    if client is None:
        return TLSConfig(ca=pki.ca, **kwargs)
    cert, key = pki.clients[client]
    return TLSConfig(ca=pki.ca, cert=cert, key=key, **kwargs)


# --- bearer tokens -------------------------------------------------------------------------


def test_calls_without_a_token_raise_unauthenticated(auth_address: str):
    with AgentClient(auth_address, timeout=30) as client:
        with pytest.raises(UnauthenticatedError):
            client.run_text("assistant", "hi")
        with pytest.raises(UnauthenticatedError):
            client.list_agents()
        with pytest.raises(UnauthenticatedError):
            list(client.watch_snapshot("assistant", "any-snapshot", timeout=30))
        with pytest.raises(UnauthenticatedError) as info:
            first_turn(client)
        assert info.value.code == grpc.StatusCode.UNAUTHENTICATED


def test_calls_with_a_wrong_token_raise_unauthenticated_without_echoing_it(auth_address: str):
    wrong = "tok-not-in-the-file-py-77aa"
    with AgentClient(auth_address, token=wrong, timeout=30) as client:
        with pytest.raises(UnauthenticatedError) as unary:
            client.run_text("assistant", "hi")
        with pytest.raises(UnauthenticatedError) as stream:
            first_turn(client)
    assert_no_secret(unary.value, wrong)
    assert_no_secret(stream.value, wrong)


def test_the_right_token_holds_a_two_turn_chat(auth_address: str):
    with AgentClient(auth_address, token=TOKEN_ALICE, timeout=30) as client:
        output = two_turn_chat(client)  # a bidi stream
        snapshot = client.get_snapshot("assistant", output.snapshot_id)  # unary
        status = client.wait_snapshot("assistant", output.snapshot_id, timeout=30)  # server stream
    assert snapshot.session_id == output.session_id and snapshot.turn_index == 1
    assert status == state_pb2.SNAPSHOT_STATUS_COMPLETED


def test_a_token_function_is_called_for_every_call(auth_address: str):
    calls = []

    def token() -> str:
        calls.append(1)
        return TOKEN_ALICE

    with AgentClient(auth_address, token=token, timeout=30) as client:
        output = two_turn_chat(client)
        client.get_snapshot("assistant", session_id=output.session_id)
    assert len(calls) == 2  # one chat, one get_snapshot


def test_a_token_function_returning_no_token_raises_unauthenticated_before_sending(auth_address: str):
    with AgentClient(auth_address, token=lambda: "", timeout=30) as client:
        with pytest.raises(UnauthenticatedError):
            client.list_agents()
        with pytest.raises(UnauthenticatedError):
            client.chat("assistant")


def test_the_async_client_sends_the_token_too(auth_address: str):
    async def scenario():
        async with AsyncAgentClient(auth_address, timeout=30) as anonymous:
            with pytest.raises(UnauthenticatedError):
                await anonymous.run_text("assistant", "hi")
        async with AsyncAgentClient(auth_address, token=TOKEN_ALICE, timeout=30) as client:
            async with client.chat("assistant") as conversation:
                first = await conversation.send("one")
                await first.wait()
                second = await conversation.send("two")
                await second.wait()
            output = await conversation.output()
            snapshot = await client.get_snapshot("assistant", output.snapshot_id)
        return first, second, snapshot

    first, second, snapshot = asyncio.run(scenario())
    assert (first.text, second.text, second.turn_index) == ("echo: one", "echo: two", 1)
    assert snapshot.snapshot_id == second.snapshot_id


# --- per-tenant sessions ---------------------------------------------------------------------


def assert_other_tenant_gets_not_found(other: AgentClient, output: agent_pb2.AgentOutput) -> None:
    """Every way ``other`` can reach ``output``'s session raises NOT_FOUND, as an unknown ID."""
    session_id, snapshot_id = output.session_id, output.snapshot_id
    attempts: "list[Callable[[], object]]" = [
        lambda: other.get_snapshot("assistant", snapshot_id),
        lambda: other.get_snapshot("assistant", session_id=session_id),
        lambda: other.list_snapshots("assistant", session_id),
        lambda: list(other.watch_snapshot("assistant", snapshot_id, timeout=30)),
        lambda: other.abort("assistant", snapshot_id),
        lambda: other.run("assistant", "intrude", snapshot_id=snapshot_id),
        lambda: first_turn(other, session_id=session_id),
    ]
    for attempt in attempts:
        with pytest.raises(NotFoundError):
            attempt()


def assert_unchanged(owner: AgentClient, output: agent_pb2.AgentOutput) -> None:
    latest = owner.get_snapshot("assistant", session_id=output.session_id)
    assert (latest.snapshot_id, latest.turn_index) == (output.snapshot_id, 1)


def test_another_tenants_session_is_not_found(auth_address: str):
    with AgentClient(auth_address, token=TOKEN_ALICE, timeout=30) as alice, AgentClient(
        auth_address, token=TOKEN_BOB, timeout=30
    ) as bob, AgentClient(auth_address, token=TOKEN_ALICE2, timeout=30) as alice2:
        output = two_turn_chat(alice)
        assert_other_tenant_gets_not_found(bob, output)
        assert_unchanged(alice, output)
        # Sessions belong to the tenant, not the subject: alice2 (tenant-a) continues it.
        reply = alice2.run("assistant", "three", session_id=output.session_id)
    assert reply.session_id == output.session_id and reply.message.content[0].text == "echo: three"


# --- TLS -----------------------------------------------------------------------------------


def test_two_turn_chat_over_tls_with_the_ca_file(tls_address: str, pki: PkiFiles):
    with AgentClient(tls_address, token=TOKEN_ALICE, tls=tls(pki), timeout=30) as client:
        output = two_turn_chat(client)
        assert client.get_snapshot("assistant", output.snapshot_id).turn_index == 1


def test_async_two_turn_chat_over_tls_with_the_ca_as_bytes(tls_address: str, pki: PkiFiles):
    async def scenario():
        settings = TLSConfig(ca=pki.ca.read_bytes())
        async with AsyncAgentClient(tls_address, token=TOKEN_ALICE, tls=settings, timeout=30) as client:
            async with client.chat("assistant") as conversation:
                first = await conversation.send("one")
                await first.wait()
                second = await conversation.send("two")
                await second.wait()
            return first, second

    first, second = asyncio.run(scenario())
    assert (first.text, second.text, second.turn_index) == ("echo: one", "echo: two", 1)


def test_tls_server_still_requires_the_token(tls_address: str, pki: PkiFiles):
    with AgentClient(tls_address, tls=tls(pki), timeout=30) as client:
        with pytest.raises(UnauthenticatedError):
            client.run_text("assistant", "hi")


def test_server_name_overrides_the_name_checked_against_the_certificate(tls_address: str, pki: PkiFiles):
    # The certificate names localhost, 127.0.0.1 and agentd.test, not wrong.test.
    with AgentClient(tls_address, token=TOKEN_ALICE, tls=tls(pki, server_name="agentd.test"), timeout=30) as client:
        assert client.run_text("assistant", "named") == "echo: named"
    with AgentClient(tls_address, token=TOKEN_ALICE, tls=tls(pki, server_name="wrong.test"), timeout=30) as client:
        with pytest.raises(UnavailableError):
            client.run_text("assistant", "hi")


def test_tls_without_the_servers_ca_is_refused(tls_address: str):
    with AgentClient(tls_address, token=TOKEN_ALICE, tls=True, timeout=30) as client:  # default roots
        with pytest.raises(UnavailableError) as info:
            client.run_text("assistant", "hi")
    assert_no_secret(info.value, TOKEN_ALICE)


def test_a_plaintext_client_is_refused_by_a_tls_server(tls_address: str):
    # The refusal looks like a closed socket, which the default budget retries for 30 s.
    with AgentClient(tls_address, token=TOKEN_ALICE, timeout=30, retry=RetryPolicy(max_elapsed=2)) as client:
        with pytest.raises(UnavailableError):
            client.run_text("assistant", "hi")


# --- mutual TLS ----------------------------------------------------------------------------


@pytest.mark.parametrize("client_cert", [None, "mallory"], ids=["no certificate", "another CA"])
def test_mutual_tls_without_a_client_certificate_of_the_ca_is_refused(
    mtls_address: str, pki: PkiFiles, client_cert: Optional[str]
):
    # A certificate of another CA is refused with a reset or closed socket, which the default
    # budget retries for 30 s like any broken connection: a short budget keeps the test quick.
    with AgentClient(mtls_address, tls=tls(pki, client_cert), timeout=30, retry=RetryPolicy(max_elapsed=2)) as client:
        with pytest.raises(UnavailableError) as info:  # the handshake fails: no status from agentd
            client.run_text("assistant", "hi")
        assert info.value.code == grpc.StatusCode.UNAVAILABLE
        with pytest.raises(UnavailableError):
            first_turn(client)


def test_mutual_tls_client_certificate_is_the_principal(mtls_address: str, pki: PkiFiles):
    with AgentClient(mtls_address, tls=tls(pki, "alice"), timeout=30) as alice, AgentClient(
        mtls_address, tls=tls(pki, "carol"), timeout=30
    ) as carol, AgentClient(mtls_address, tls=tls(pki, "alex"), timeout=30) as alex:
        output = two_turn_chat(alice)
        # The tenant is the certificate's O: carol (tenant-b) cannot reach the session, alex
        # (tenant-a) can.
        assert_other_tenant_gets_not_found(carol, output)
        assert_unchanged(alice, output)
        assert alex.get_snapshot("assistant", session_id=output.session_id).snapshot_id == output.snapshot_id


def test_mutual_tls_certificate_without_o_uses_the_cn_as_tenant(mtls_address: str, pki: PkiFiles):
    with AgentClient(mtls_address, tls=tls(pki, "dave"), timeout=30) as dave, AgentClient(
        mtls_address, tls=tls(pki, "erin"), timeout=30
    ) as erin, AgentClient(mtls_address, tls=tls(pki, "alice"), timeout=30) as alice:
        output = two_turn_chat(dave)  # CN=dave, no O: tenant "dave"
        assert erin.get_snapshot("assistant", output.snapshot_id).session_id == output.session_id  # O=dave
        with pytest.raises(NotFoundError):
            alice.get_snapshot("assistant", output.snapshot_id)


# --- settings (no server) ------------------------------------------------------------------


def test_tls_settings_conflicts_and_bad_tokens_raise_value_error(pki: PkiFiles):
    with pytest.raises(ValueError):
        AgentClient("127.0.0.1:1", tls=tls(pki), credentials=grpc.ssl_channel_credentials())
    with pytest.raises(ValueError):
        AgentClient("127.0.0.1:1", token="t", metadata=[("authorization", "Bearer u")])
    with pytest.raises(ValueError) as info:
        AgentClient("127.0.0.1:1", token="tok-secret\nx")
    assert_no_secret(info.value, "tok-secret")
    with pytest.raises(ValueError):
        AgentClient("127.0.0.1:1", token="")
    with pytest.raises(ValueError):
        TLSConfig(ca=pki.ca, cert=pki.clients["alice"][0])
    with pytest.raises(ValueError) as missing:
        AgentClient("127.0.0.1:1", tls=TLSConfig(ca=pki.ca.parent / "no-such-ca.pem"))
    assert "no-such-ca.pem" in str(missing.value)


def test_tls_config_repr_leaves_the_key_out(pki: PkiFiles):
    key = pki.clients["alice"][1].read_bytes()
    settings = TLSConfig(ca=pki.ca, cert=pki.clients["alice"][0], key=key)
    assert "PRIVATE KEY" not in repr(settings) and "key=" not in repr(settings)
