package views

import "time"

// The view models of instances, Connect clusters and access, built by web/
// from the service's answers; passwords and token hashes never reach them.

// ClusterInfo is a registered Kafka cluster (an instance): never a secret
// (its password, client key and its password, OAuth client secret), only
// whether one is set.
type ClusterInfo struct {
	Name             string
	BootstrapServers []string
	SecurityProtocol string
	SASLMechanism    string
	Username         string
	PasswordSet      bool
	CAPEM            string
	// ClientCert is the client certificate's leaf, nil without one;
	// ClientKeySet says its key is stored.
	ClientCert   *CertInfo
	ClientKeySet bool
	// OAuth is OAUTHBEARER's grant as shown: no secret.
	OAuthTokenEndpoint string
	OAuthClientID      string
	OAuthScope         string
	OAuthAudience      string
	OAuthSecretSet     bool
	CreatedAt          time.Time
	TasksUsed          int
	TasksLimit         int
	SmartConnect       SmartConnect
}

// SmartConnect is an instance's Smart Connect setting: whether tasks may be
// created on it and the engine ("embedded" or "connect:<name>") new tasks
// run on.
type SmartConnect struct {
	Enabled bool
	Engine  string
}

// ClusterHealth is how a cluster answered just now.
type ClusterHealth struct {
	Reachable bool
	Brokers   int
	Topics    int
	// Error says why the cluster could not be described.
	Error string
}

// ConnectClusterInfo is a registered Kafka Connect cluster: never its
// password, only whether one is set.
type ConnectClusterInfo struct {
	Name         string
	URLs         []string
	KafkaCluster string
	Username     string
	PasswordSet  bool
	CAPEM        string
	// ClientCertSet says a client certificate is presented; its key, like
	// the bearer token, is never shown, only whether it is set.
	ClientCertSet  bool
	BearerTokenSet bool
	ConfigProvider string
	CreatedAt      time.Time
}

// UserInfo is a console account.
type UserInfo struct {
	Name      string
	Role      string
	CreatedAt time.Time
}

// TokenInfo is an API token as listed: never the token.
type TokenInfo struct {
	Name      string
	Role      string
	CreatedBy string
	CreatedAt time.Time
	// Owner is the account it ends with; empty: none.
	Owner string
	// ExpiresAt and LastUsedAt are zero for never.
	ExpiresAt  time.Time
	LastUsedAt time.Time
}

// CreatedToken is a token just made, the only time it is shown.
type CreatedToken struct {
	TokenInfo
	Token string
}

// AuditEntry is one line of the audit log.
type AuditEntry struct {
	ID      int64
	At      time.Time
	Actor   string
	Role    string
	Address string
	Action  string
	Object  string
	Outcome string
}

// AuditFilter is the audit page's filter as submitted (action and outcome
// match as prefixes).
type AuditFilter struct {
	Actor, Action, Outcome string
}
