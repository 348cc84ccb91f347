package views

import (
	"context"
	"strings"

	"github.com/kmirror/kmirror/internal/i18n"
)

// ConnectClustersView is the Kafka Connect clusters page: the registered
// ones, the Kafka instances their workers may write to, and the add form.
type ConnectClustersView struct {
	Clusters []ConnectClusterInfo
	// Instances are the registered Kafka clusters, for the form's select.
	Instances []string
	Form      ConnectClusterForm
}

// ConnectClusterForm is the add form's state: what the user typed (never
// the password, the client key or the bearer token, which must be typed
// again) and the service's messages by field.
type ConnectClusterForm struct {
	Name string
	// URLs is the text as typed: one per line or comma-separated.
	URLs         string
	KafkaCluster string
	Username     string
	CAPEM        string
	// ClientCertPEM is the client certificate as pasted (public; its key
	// is not kept).
	ClientCertPEM string
	// ConfigProvider names a config provider the workers define, so Kafka
	// passwords go into connector configs as references; optional.
	ConfigProvider string
	// AutoRestart: failed connectors and tasks are restarted by kmirror.
	AutoRestart bool
	Errors      FieldErrors
	// Message is shown above the form when the request failed as a whole.
	Message string
}

// ConnectClusterPath is a registered Connect cluster's address in the
// console.
func ConnectClusterPath(name string) string { return "/connect-clusters/" + name }

func boolAttr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// connectAuth says how kmirror authenticates to a Connect cluster's REST
// API: never a secret, only whether each is set.
func connectAuth(ctx context.Context, c ConnectClusterInfo) string {
	var parts []string
	switch {
	case c.Username != "" && c.PasswordSet:
		parts = append(parts, i18n.T(ctx, "connect.auth_basic_password", "User", c.Username))
	case c.Username != "":
		parts = append(parts, i18n.T(ctx, "connect.auth_basic", "User", c.Username))
	}
	if c.BearerTokenSet {
		parts = append(parts, i18n.T(ctx, "connect.auth_bearer"))
	}
	if c.ClientCertSet {
		parts = append(parts, i18n.T(ctx, "connect.auth_client_cert"))
	}
	if len(parts) == 0 {
		return i18n.T(ctx, "connect.auth_none")
	}
	return strings.Join(parts, i18n.T(ctx, "connect.auth_sep"))
}
