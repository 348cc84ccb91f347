package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kmirror/kmirror/internal/switchover"
)

// Switchovers stores tasks' switchovers (docs/SWITCHOVER.md).
type Switchovers interface {
	// CreateSwitchover stores s under a new id, which it returns; it fails
	// with ErrExists while the task has a switchover that has not ended,
	// and with ErrNotFound for an unknown task.
	CreateSwitchover(ctx context.Context, s switchover.Switchover) (int64, error)
	// UpdateSwitchover writes s over the stored one with its id.
	UpdateSwitchover(ctx context.Context, s switchover.Switchover) error
	// LatestSwitchover is the task's newest; ErrNotFound when none.
	LatestSwitchover(ctx context.Context, task string) (switchover.Switchover, error)
	// OpenSwitchovers are those that have not ended, oldest first.
	OpenSwitchovers(ctx context.Context) ([]switchover.Switchover, error)
	// PreparedFailback is the task's switchover whose way back is
	// prepared; ErrNotFound when none.
	PreparedFailback(ctx context.Context, task string) (switchover.Switchover, error)
	// WentHome are the task's switchovers whose way back went home,
	// oldest first.
	WentHome(ctx context.Context, task string) ([]switchover.Switchover, error)
}

var _ Switchovers = (*DB)(nil)

// CreateSwitchover implements Switchovers.
func (d *DB) CreateSwitchover(ctx context.Context, s switchover.Switchover) (int64, error) {
	body, err := json.Marshal(s)
	if err != nil {
		return 0, fmt.Errorf("encode switchover of %q: %w", s.Task, err)
	}
	res, err := d.w.ExecContext(ctx, `INSERT INTO switchovers (task, state, body, created_at, updated_at) VALUES (?, ?, ?, ?, ?)`,
		s.Task, string(s.State), string(body), s.CreatedAt.Unix(), s.UpdatedAt.Unix())
	switch {
	case isForeignKey(err):
		return 0, fmt.Errorf("task %q: %w", s.Task, ErrNotFound)
	case isConstraint(err):
		return 0, fmt.Errorf("an open switchover of task %q: %w", s.Task, ErrExists)
	case err != nil:
		return 0, fmt.Errorf("create switchover of %q: %w", s.Task, err)
	}
	return res.LastInsertId()
}

// UpdateSwitchover implements Switchovers.
func (d *DB) UpdateSwitchover(ctx context.Context, s switchover.Switchover) error {
	body, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode switchover %d: %w", s.ID, err)
	}
	return execOne(ctx, d.w, "update", fmt.Sprintf("switchover %d", s.ID),
		`UPDATE switchovers SET state = ?, body = ?, updated_at = ? WHERE id = ?`, string(s.State), string(body), s.UpdatedAt.Unix(), s.ID)
}

// LatestSwitchover implements Switchovers.
func (d *DB) LatestSwitchover(ctx context.Context, task string) (switchover.Switchover, error) {
	return queryOne(ctx, d.db, fmt.Sprintf("switchover of task %q", task), scanSwitchover,
		`SELECT id, body FROM switchovers WHERE task = ? ORDER BY id DESC LIMIT 1`, task)
}

// OpenSwitchovers implements Switchovers.
func (d *DB) OpenSwitchovers(ctx context.Context) ([]switchover.Switchover, error) {
	return queryAll(ctx, d.db, "list open switchovers", scanSwitchover,
		`SELECT id, body FROM switchovers WHERE state IN ('running', 'waiting') ORDER BY id`)
}

// PreparedFailback implements Switchovers.
func (d *DB) PreparedFailback(ctx context.Context, task string) (switchover.Switchover, error) {
	return queryOne(ctx, d.db, fmt.Sprintf("prepared failback of task %q", task), scanSwitchover,
		`SELECT id, body FROM switchovers WHERE task = ? AND json_extract(body, '$.failback.state') = ? ORDER BY id DESC LIMIT 1`,
		task, string(switchover.FailbackPrepared))
}

// WentHome implements Switchovers.
func (d *DB) WentHome(ctx context.Context, task string) ([]switchover.Switchover, error) {
	return queryAll(ctx, d.db, fmt.Sprintf("list the ways home of task %q", task), scanSwitchover,
		`SELECT id, body FROM switchovers WHERE task = ? AND json_extract(body, '$.failback.state') = ? ORDER BY id`,
		task, string(switchover.FailbackHome))
}

func scanSwitchover(s scanner) (switchover.Switchover, error) {
	var id int64
	var body string
	if err := s.Scan(&id, &body); err != nil {
		return switchover.Switchover{}, err
	}
	var sw switchover.Switchover
	if err := json.Unmarshal([]byte(body), &sw); err != nil {
		return sw, fmt.Errorf("decode switchover %d: %w", id, err)
	}
	sw.ID = id
	return sw, nil
}
