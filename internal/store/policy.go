package store

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// DestinationPolicy is which Kafka addresses operators may give as a
// task's peer: Mode "any", "registered" or "networks" (Networks are CIDRs).
type DestinationPolicy struct {
	Mode      string
	Networks  []string
	ChangedBy string
	ChangedAt time.Time // zero: never changed
}

// Policies keeps the destination policy (one row).
type Policies interface {
	DestinationPolicy(ctx context.Context) (DestinationPolicy, error)
	SetDestinationPolicy(ctx context.Context, p DestinationPolicy) error
}

var _ Policies = (*DB)(nil)

// DestinationPolicy implements Policies.
func (d *DB) DestinationPolicy(ctx context.Context) (DestinationPolicy, error) {
	var p DestinationPolicy
	var networks string
	var at int64
	err := d.db.QueryRowContext(ctx, `SELECT mode, networks, changed_by, changed_at FROM destination_policy WHERE one = 1`).
		Scan(&p.Mode, &networks, &p.ChangedBy, &at)
	if err != nil {
		return DestinationPolicy{}, fmt.Errorf("read the destination policy: %w", err)
	}
	if networks != "" {
		p.Networks = strings.Split(networks, ",")
	}
	if at > 0 {
		p.ChangedAt = unixTime(at)
	}
	return p, nil
}

// SetDestinationPolicy implements Policies.
func (d *DB) SetDestinationPolicy(ctx context.Context, p DestinationPolicy) error {
	_, err := d.w.ExecContext(ctx, `UPDATE destination_policy SET mode = ?, networks = ?, changed_by = ?, changed_at = ? WHERE one = 1`,
		p.Mode, strings.Join(p.Networks, ","), p.ChangedBy, p.ChangedAt.Unix())
	if err != nil {
		return fmt.Errorf("set the destination policy: %w", err)
	}
	return nil
}
