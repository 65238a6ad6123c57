package agentd

import (
	"testing"

	agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"
)

func TestChatOptionsSendTheirBusyPolicyInTheInit(t *testing.T) {
	for _, policy := range []agentdv1.BusyPolicy{BusyDefault, BusyReject, BusyEnqueue, BusyInterrupt} {
		init := ChatOptions{SessionID: "s", BusyPolicy: policy}.init("assistant")
		if init.GetBusyPolicy() != policy || init.GetSessionId() != "s" || init.GetAgent() != "assistant" {
			t.Errorf("init for %v = %v", policy, init)
		}
	}
	if BusyDefault != agentdv1.BusyPolicy_BUSY_POLICY_UNSPECIFIED || BusyReject != agentdv1.BusyPolicy_BUSY_POLICY_REJECT ||
		BusyEnqueue != agentdv1.BusyPolicy_BUSY_POLICY_ENQUEUE || BusyInterrupt != agentdv1.BusyPolicy_BUSY_POLICY_INTERRUPT {
		t.Error("the Busy* constants do not match the wire enum")
	}
}
