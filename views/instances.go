package views

import (
	"context"

	"github.com/kmirror/kmirror/internal/i18n"
)

// ClusterForm is the add-instance form's state: what the user typed (never the
// password, which must be typed again) and the server's messages by field.
type ClusterForm struct {
	Name             string
	BootstrapServers string
	SecurityProtocol string
	SASLMechanism    string
	Username         string
	CAPEM            string
	Errors           FieldErrors
	// Message is shown above the form when the request failed as a whole.
	Message string
}

// clusterAuth says how kmirror authenticates to a cluster, in the page's
// language.
func clusterAuth(ctx context.Context, c ClusterInfo) string {
	if c.SecurityProtocol == "" || c.SecurityProtocol == "PLAINTEXT" {
		return i18n.T(ctx, "instances.auth_none")
	}
	return i18n.T(ctx, "instances.auth_sasl", "Protocol", c.SecurityProtocol, "Mechanism", c.SASLMechanism, "User", c.Username)
}
