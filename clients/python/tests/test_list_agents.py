"""ListAgents describes every served agent."""

from agentd.v1 import agent_pb2
from agentd_client import AgentClient, struct_to_dict


def test_list_agents_includes_default_and_fixture_agents(client: AgentClient):
    names = {a.name for a in client.list_agents()}
    assert {"assistant", "tasks", "notes", "flaky", "redacted"} <= names


def test_list_agents_reports_who_manages_state(client: AgentClient):
    by_name = {a.name: a for a in client.list_agents()}
    assert by_name["assistant"].state_management == agent_pb2.STATE_MANAGEMENT_SERVER
    assert by_name["notes"].state_management == agent_pb2.STATE_MANAGEMENT_CLIENT


def test_list_agents_carries_the_custom_state_json_schema(client: AgentClient):
    tasks = next(a for a in client.list_agents() if a.name == "tasks")
    schema = struct_to_dict(tasks.state_schema)
    assert schema["type"] == "object" and {"tasks", "nextId"} <= set(schema["properties"])
