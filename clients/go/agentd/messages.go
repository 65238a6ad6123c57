package agentd

import (
	"strings"

	agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"
)

// UserText returns a user message whose only part is text.
func UserText(text string) *agentdv1.Message {
	return &agentdv1.Message{
		Role:    agentdv1.Role_ROLE_USER,
		Content: []*agentdv1.Part{{Kind: &agentdv1.Part_Text{Text: text}}},
	}
}

// TextInput returns an AgentInput carrying the user message text.
func TextInput(text string) *agentdv1.AgentInput {
	return &agentdv1.AgentInput{Message: UserText(text)}
}

// Text returns the text of parts: the concatenation of their text fields
// (reasoning, media, tool and data parts contribute nothing).
func Text(parts []*agentdv1.Part) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.GetText())
	}
	return b.String()
}

// MessageText returns the text of m (empty for nil).
func MessageText(m *agentdv1.Message) string { return Text(m.GetContent()) }
