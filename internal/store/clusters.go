package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
)

// Cluster is a registered cluster as stored: the password only sealed (see
// internal/secrets), never in clear.
type Cluster struct {
	Name               string
	BootstrapServers   []string
	SecurityProtocol   string
	SASLMechanism      string
	Username           string
	PasswordCiphertext []byte // nil when the cluster has no password
	CAPEM              string
	ClientCertPEM      string
	// OAuth is OAUTHBEARER's grant without its client secret.
	OAuth cluster.OAuth
	// CredentialsCiphertext seals the other secrets (cluster.Secrets
	// without the password) as JSON; nil when there are none.
	CredentialsCiphertext []byte
	CreatedAt             time.Time
	// SmartConnect is whether tasks may be created on this cluster and on
	// which engine they run by default.
	SmartConnect SmartConnect
}

// SmartConnect is a cluster's Smart Connect setting. A cluster is enabled
// on the in-process engine when registered.
type SmartConnect struct {
	Enabled bool
	// ConnectCluster is the registered Connect cluster new tasks run on by
	// default; "" is the in-process engine.
	ConnectCluster string
}

// Clusters stores registered clusters.
type Clusters interface {
	// CreateCluster fails with ErrExists when the name is taken.
	CreateCluster(ctx context.Context, c Cluster) error
	// Cluster fails with ErrNotFound for an unknown name.
	Cluster(ctx context.Context, name string) (Cluster, error)
	// ListClusters returns every cluster ordered by name.
	ListClusters(ctx context.Context) ([]Cluster, error)
	// DeleteCluster fails with ErrNotFound for an unknown name.
	DeleteCluster(ctx context.Context, name string) error
	// SetSmartConnect enables or disables Smart Connect on a cluster and
	// sets its default engine. It fails with ErrNotFound for an unknown
	// cluster or Connect cluster.
	SetSmartConnect(ctx context.Context, cluster string, sc SmartConnect) error
}

var _ Clusters = (*DB)(nil)

const (
	clusterColumns     = `name, bootstrap_servers, security_protocol, sasl_mechanism, username, password_ciphertext, ca_pem, client_cert_pem, oauth, credentials_ciphertext, created_at`
	clusterReadColumns = clusterColumns + `, smart_connect_enabled, smart_connect_engine`
)

// CreateCluster implements Clusters.
func (d *DB) CreateCluster(ctx context.Context, c Cluster) error {
	if c.CreatedAt.IsZero() {
		c.CreatedAt = time.Now()
	}
	oauth, err := encodeOAuth(c.OAuth)
	if err != nil {
		return fmt.Errorf("create cluster %q: %w", c.Name, err)
	}
	_, err = d.w.ExecContext(ctx, `INSERT INTO clusters (`+clusterColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		c.Name, strings.Join(c.BootstrapServers, ","), c.SecurityProtocol, c.SASLMechanism, c.Username,
		c.PasswordCiphertext, c.CAPEM, c.ClientCertPEM, oauth, c.CredentialsCiphertext, c.CreatedAt.Unix())
	if isConstraint(err) {
		return fmt.Errorf("cluster %q: %w", c.Name, ErrExists)
	}
	if err != nil {
		return fmt.Errorf("create cluster %q: %w", c.Name, err)
	}
	return nil
}

// Cluster implements Clusters.
func (d *DB) Cluster(ctx context.Context, name string) (Cluster, error) {
	return queryOne(ctx, d.db, fmt.Sprintf("cluster %q", name), scanCluster, `SELECT `+clusterReadColumns+` FROM clusters WHERE name = ?`, name)
}

// ListClusters implements Clusters.
func (d *DB) ListClusters(ctx context.Context) ([]Cluster, error) {
	return queryAll(ctx, d.db, "list clusters", scanCluster, `SELECT `+clusterReadColumns+` FROM clusters ORDER BY name`)
}

// DeleteCluster implements Clusters.
func (d *DB) DeleteCluster(ctx context.Context, name string) error {
	err := execOne(ctx, d.w, "delete", fmt.Sprintf("cluster %q", name), `DELETE FROM clusters WHERE name = ?`, name)
	if isForeignKey(err) {
		return fmt.Errorf("cluster %q: %w: tasks or Kafka Connect clusters use it", name, ErrReferenced)
	}
	return err
}

// SetSmartConnect implements Clusters.
func (d *DB) SetSmartConnect(ctx context.Context, cluster string, sc SmartConnect) error {
	var engine any
	if sc.ConnectCluster != "" {
		engine = sc.ConnectCluster
	}
	err := execOne(ctx, d.w, "set Smart Connect of", fmt.Sprintf("cluster %q", cluster),
		`UPDATE clusters SET smart_connect_enabled = ?, smart_connect_engine = ? WHERE name = ?`, sc.Enabled, engine, cluster)
	if isForeignKey(err) {
		return fmt.Errorf("Connect cluster %q: %w", sc.ConnectCluster, ErrNotFound)
	}
	return err
}

// encodeOAuth is the oauth column: "" for none, never the client secret.
func encodeOAuth(o cluster.OAuth) (string, error) {
	o.ClientSecret = ""
	if o == (cluster.OAuth{}) {
		return "", nil
	}
	b, err := json.Marshal(o)
	return string(b), err
}

type scanner interface{ Scan(dest ...any) error }

func scanCluster(s scanner) (Cluster, error) {
	var c Cluster
	var servers string
	var created int64
	var engine sql.NullString
	var oauth string
	if err := s.Scan(&c.Name, &servers, &c.SecurityProtocol, &c.SASLMechanism, &c.Username,
		&c.PasswordCiphertext, &c.CAPEM, &c.ClientCertPEM, &oauth, &c.CredentialsCiphertext, &created, &c.SmartConnect.Enabled, &engine); err != nil {
		return Cluster{}, err
	}
	if oauth != "" {
		if err := json.Unmarshal([]byte(oauth), &c.OAuth); err != nil {
			return Cluster{}, fmt.Errorf("decode the OAuth settings of cluster %q: %w", c.Name, err)
		}
	}
	c.SmartConnect.ConnectCluster = engine.String
	if servers != "" {
		c.BootstrapServers = strings.Split(servers, ",")
	}
	c.CreatedAt = unixTime(created)
	return c, nil
}
