package store

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// ConnectCluster is a registered Kafka Connect cluster as stored: the
// basic-auth password, the client key and the bearer token only sealed
// (see internal/secrets), never in clear.
type ConnectCluster struct {
	Name               string
	URLs               []string
	Username           string
	PasswordCiphertext []byte // nil when there is none
	CAPEM              string
	// ClientCertPEM is the client certificate presented to https workers
	// ("" for none); its private key is ClientKeyCiphertext.
	ClientCertPEM         string
	ClientKeyCiphertext   []byte // nil when there is none
	BearerTokenCiphertext []byte // nil when there is none
	KafkaCluster          string // the registered Kafka cluster its workers write to
	ConfigProvider        string // a config provider the workers define, or ""
	// AutoRestart: kmirror restarts its tasks' failed connectors and
	// tasks there, with back-off.
	AutoRestart bool
	CreatedAt   time.Time
}

// ConnectClusters stores registered Kafka Connect clusters.
type ConnectClusters interface {
	// CreateConnectCluster fails with ErrExists when the name is taken and
	// with ErrNotFound when its Kafka cluster is not registered.
	CreateConnectCluster(ctx context.Context, c ConnectCluster) error
	// ConnectCluster fails with ErrNotFound for an unknown name.
	ConnectCluster(ctx context.Context, name string) (ConnectCluster, error)
	// ListConnectClusters returns every Connect cluster ordered by name.
	ListConnectClusters(ctx context.Context) ([]ConnectCluster, error)
	// DeleteConnectCluster fails with ErrNotFound for an unknown name and
	// with ErrReferenced while a task or a cluster's Smart Connect uses it.
	DeleteConnectCluster(ctx context.Context, name string) error
}

var _ ConnectClusters = (*DB)(nil)

const connectClusterColumns = `name, urls, username, password_ciphertext, ca_pem, kafka_cluster, config_provider, created_at,
	client_cert_pem, client_key_ciphertext, bearer_token_ciphertext, auto_restart`

// CreateConnectCluster implements ConnectClusters.
func (d *DB) CreateConnectCluster(ctx context.Context, c ConnectCluster) error {
	if c.CreatedAt.IsZero() {
		c.CreatedAt = time.Now()
	}
	_, err := d.w.ExecContext(ctx, `INSERT INTO connect_clusters (`+connectClusterColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		c.Name, strings.Join(c.URLs, ","), c.Username, c.PasswordCiphertext, c.CAPEM, c.KafkaCluster,
		c.ConfigProvider, c.CreatedAt.Unix(), c.ClientCertPEM, c.ClientKeyCiphertext, c.BearerTokenCiphertext, c.AutoRestart)
	switch {
	case isForeignKey(err):
		return fmt.Errorf("Kafka cluster %q of Connect cluster %q: %w", c.KafkaCluster, c.Name, ErrNotFound)
	case isConstraint(err):
		return fmt.Errorf("Connect cluster %q: %w", c.Name, ErrExists)
	case err != nil:
		return fmt.Errorf("create Connect cluster %q: %w", c.Name, err)
	}
	return nil
}

// ConnectCluster implements ConnectClusters.
func (d *DB) ConnectCluster(ctx context.Context, name string) (ConnectCluster, error) {
	return queryOne(ctx, d.db, fmt.Sprintf("Connect cluster %q", name), scanConnectCluster,
		`SELECT `+connectClusterColumns+` FROM connect_clusters WHERE name = ?`, name)
}

// ListConnectClusters implements ConnectClusters.
func (d *DB) ListConnectClusters(ctx context.Context) ([]ConnectCluster, error) {
	return queryAll(ctx, d.db, "list Connect clusters", scanConnectCluster, `SELECT `+connectClusterColumns+` FROM connect_clusters ORDER BY name`)
}

// DeleteConnectCluster implements ConnectClusters.
func (d *DB) DeleteConnectCluster(ctx context.Context, name string) error {
	err := execOne(ctx, d.w, "delete", fmt.Sprintf("Connect cluster %q", name), `DELETE FROM connect_clusters WHERE name = ?`, name)
	if isForeignKey(err) {
		return fmt.Errorf("Connect cluster %q: %w: delete or move its tasks and pick another engine for the clusters that default to it first", name, ErrReferenced)
	}
	return err
}

func scanConnectCluster(s scanner) (ConnectCluster, error) {
	var c ConnectCluster
	var urls string
	var created int64
	if err := s.Scan(&c.Name, &urls, &c.Username, &c.PasswordCiphertext, &c.CAPEM, &c.KafkaCluster,
		&c.ConfigProvider, &created, &c.ClientCertPEM, &c.ClientKeyCiphertext, &c.BearerTokenCiphertext, &c.AutoRestart); err != nil {
		return ConnectCluster{}, err
	}
	if urls != "" {
		c.URLs = strings.Split(urls, ",")
	}
	c.CreatedAt = unixTime(created)
	return c, nil
}
