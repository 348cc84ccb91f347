package views

import (
	"context"
	"time"

	"github.com/kmirror/kmirror/internal/i18n"
)

// SecurityProtocols and SASLMechanisms are the choices the instance and
// task forms offer, in the console's order: the seed's three protocols then
// SSL; SCRAM-SHA-512, PLAIN, SCRAM-SHA-256 then OAUTHBEARER. They are
// cluster.Protocols and cluster.Mechanisms (views do not import the
// cluster package; a test in web/ keeps them equal).
var (
	SecurityProtocols = []string{"PLAINTEXT", "SASL_PLAINTEXT", "SASL_SSL", "SSL"}
	SASLMechanisms    = []string{"SCRAM-SHA-512", "PLAIN", "SCRAM-SHA-256", "OAUTHBEARER"}
)

// ClusterForm is the add-instance form's state: what the user typed (never
// a secret: the password, the client key, its password and the OAuth client
// secret must be given again) and the server's messages by field.
type ClusterForm struct {
	Name             string
	BootstrapServers string
	SecurityProtocol string
	SASLMechanism    string
	Username         string
	CAPEM            string
	ClientCertPEM    string
	// OAuth is OAUTHBEARER's client-credentials grant without its secret.
	OAuthTokenEndpoint string
	OAuthClientID      string
	OAuthScope         string
	OAuthAudience      string
	Errors             FieldErrors
	// Message is shown above the form when the request failed as a whole.
	Message string
}

// CertInfo is what is shown of a client certificate's leaf: never its key.
// ExpiresSoon is true when it ends within the warning window (30 days) or
// has ended (Expired).
type CertInfo struct {
	Subject     string
	Issuer      string
	NotAfter    time.Time
	ExpiresSoon bool
	Expired     bool
}

// clusterAuth says how kmirror authenticates to a cluster, in the page's
// language.
func clusterAuth(ctx context.Context, c ClusterInfo) string {
	return authText(ctx, c.SecurityProtocol, c.SASLMechanism, c.Username, c.OAuthClientID)
}

// authText is a cluster's or a peer's authentication in a few words.
func authText(ctx context.Context, protocol, mechanism, username, oauthClientID string) string {
	switch {
	case protocol == "" || protocol == "PLAINTEXT":
		return i18n.T(ctx, "instances.auth_none")
	case protocol == "SSL":
		return i18n.T(ctx, "instances.auth_tls", "Protocol", protocol)
	case mechanism == "OAUTHBEARER":
		return i18n.T(ctx, "instances.auth_oauth", "Protocol", protocol, "Client", oauthClientID)
	}
	return i18n.T(ctx, "instances.auth_sasl", "Protocol", protocol, "Mechanism", mechanism, "User", username)
}

// CertWarning is a client certificate that ends within 30 days, or has
// ended: a registered cluster's (Instance) or a task's peer by address
// (PeerAlias).
type CertWarning struct {
	Instance  string
	PeerAlias string
	Cert      CertInfo
}

// certWarningText is the banner about w in the page's language.
func certWarningText(ctx context.Context, w CertWarning) string {
	whose := i18n.T(ctx, "cert.whose_instance", "Name", w.Instance)
	if w.Instance == "" {
		whose = i18n.T(ctx, "cert.whose_peer", "Alias", w.PeerAlias)
	}
	key := "cert.expires_soon"
	if w.Cert.Expired {
		key = "cert.expired"
	}
	return i18n.T(ctx, key, "Whose", whose, "Subject", w.Cert.Subject, "Date", FormatTime(w.Cert.NotAfter))
}
