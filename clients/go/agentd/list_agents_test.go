package agentd_test

import (
	"testing"

	agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"
)

func TestListAgentsDescribesEveryServedAgent(t *testing.T) {
	agents, err := newClient(t).ListAgents(testContext(t))
	if err != nil {
		t.Fatalf("ListAgents: %v", err)
	}
	byName := map[string]*agentdv1.AgentInfo{}
	for _, a := range agents {
		byName[a.GetName()] = a
	}
	want := map[string]agentdv1.StateManagement{
		"assistant": agentdv1.StateManagement_STATE_MANAGEMENT_SERVER,
		"tasks":     agentdv1.StateManagement_STATE_MANAGEMENT_SERVER,
		"notes":     agentdv1.StateManagement_STATE_MANAGEMENT_CLIENT,
		"flaky":     agentdv1.StateManagement_STATE_MANAGEMENT_SERVER,
		"redacted":  agentdv1.StateManagement_STATE_MANAGEMENT_SERVER,
	}
	for name, mgmt := range want {
		a, ok := byName[name]
		if !ok {
			t.Errorf("agent %q not listed (got %d agents)", name, len(agents))
			continue
		}
		if a.GetStateManagement() != mgmt {
			t.Errorf("agent %q state management = %v, want %v", name, a.GetStateManagement(), mgmt)
		}
	}
	if byName["tasks"].GetStateSchema() == nil {
		t.Errorf("tasks has no custom state JSON Schema")
	}
}
