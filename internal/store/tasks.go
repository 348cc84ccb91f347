package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/task"
)

// Task is a stored Smart Connect task. Spec never holds the peer's secrets:
// the store clears them before writing; the sealed password travels in
// PeerPasswordCiphertext and the other secrets (client key, its password,
// OAuth client secret) in PeerCredentialsCiphertext.
type Task struct {
	Spec                      task.Task
	PeerPasswordCiphertext    []byte // nil when there is none
	PeerCredentialsCiphertext []byte // nil when there are none
	DesiredState              task.DesiredState
	LastAction                task.Action
	LastActionBy              string
	LastActionAt              time.Time
	LastError                 string
	CreatedAt                 time.Time
}

// Name is the task's name, its key.
func (t Task) Name() string { return t.Spec.Name }

// Tasks stores Smart Connect tasks.
type Tasks interface {
	// CreateTask inserts t after check approved it against every other
	// stored task. Loading the others, check and the insert run in one
	// write transaction, so two concurrent creates cannot both pass a rule
	// that spans tasks (a limit per cluster, a loop). check's error is
	// returned as is; a taken name is ErrExists.
	CreateTask(ctx context.Context, t Task, check func(others []Task) error) error
	// Task fails with ErrNotFound for an unknown name.
	Task(ctx context.Context, name string) (Task, error)
	// ListTasks returns every task ordered by name.
	ListTasks(ctx context.Context) ([]Task, error)
	// DeleteTask fails with ErrNotFound for an unknown name.
	DeleteTask(ctx context.Context, name string) error
	// SetTaskState records an operator's action and the desired state it
	// leads to. It fails with ErrNotFound for an unknown name.
	SetTaskState(ctx context.Context, name string, desired task.DesiredState, action task.Action, by string, at time.Time) error
	// SetTaskError records why the task could not start ("" clears it).
	SetTaskError(ctx context.Context, name, msg string) error
	// SetTaskEngine records the engine a task was moved to, its only
	// change after creation. It fails with ErrNotFound for an unknown name
	// or Connect cluster.
	SetTaskEngine(ctx context.Context, name, engine string) error
	// CountTasks counts the tasks whose current cluster is cluster.
	CountTasks(ctx context.Context, cluster string) (int, error)
	// TasksUsingCluster names the tasks that use cluster on either side.
	TasksUsingCluster(ctx context.Context, cluster string) ([]string, error)
}

var _ Tasks = (*DB)(nil)

const taskColumns = `spec, peer_password_ciphertext, peer_credentials_ciphertext, desired_state, last_action, last_action_by, last_action_at, last_error, created_at`

// CreateTask implements Tasks.
func (d *DB) CreateTask(ctx context.Context, t Task, check func(others []Task) error) error {
	if !t.DesiredState.Valid() {
		return fmt.Errorf("create task %q: desired state %q: use %s or %s", t.Name(), t.DesiredState, task.DesiredRunning, task.DesiredPaused)
	}
	now := time.Now()
	if t.CreatedAt.IsZero() {
		t.CreatedAt = now
	}
	if t.LastActionAt.IsZero() {
		t.LastActionAt = t.CreatedAt
	}
	if t.LastAction == "" {
		t.LastAction = task.ActionCreate
	}
	// The password never goes into the JSON column, whatever the caller
	// passed: it is only stored sealed.
	t.Spec.Peer = t.Spec.Peer.WithSecrets(cluster.Secrets{})
	spec, err := json.Marshal(t.Spec)
	if err != nil {
		return fmt.Errorf("create task %q: encode: %w", t.Name(), err)
	}
	var peer any // NULL for a peer by address
	if t.Spec.Peer.ConfigType == task.PeerByCluster {
		peer = t.Spec.Peer.Cluster
	}

	// The DSN makes every transaction BEGIN IMMEDIATE: the write lock is
	// taken here, before the others are read, so a concurrent create waits
	// for this one to commit and then sees it.
	tx, err := d.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("create task %q: begin: %w", t.Name(), err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit this is a no-op
	if check != nil {
		others, err := listTasks(ctx, tx)
		if err != nil {
			return fmt.Errorf("create task %q: %w", t.Name(), err)
		}
		if err := check(others); err != nil {
			return err
		}
	}
	// The Connect cluster a task runs on has a column of its own so the
	// database refuses to remove that Connect cluster while the task exists.
	var connect any
	if name, ok := t.Spec.ConnectCluster(); ok {
		connect = name
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO tasks (name, current_cluster, peer_cluster, connect_cluster, `+taskColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		t.Name(), t.Spec.Current.Cluster, peer, connect, string(spec), t.PeerPasswordCiphertext, t.PeerCredentialsCiphertext, t.DesiredState,
		t.LastAction, t.LastActionBy, t.LastActionAt.Unix(), t.LastError, t.CreatedAt.Unix())
	switch {
	case isConstraint(err):
		return fmt.Errorf("task %q: %w", t.Name(), ErrExists)
	case isForeignKey(err):
		return fmt.Errorf("create task %q: its current or peer cluster or its Connect cluster is not registered (any more): %w", t.Name(), ErrNotFound)
	case err != nil:
		return fmt.Errorf("create task %q: %w", t.Name(), err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("create task %q: commit: %w", t.Name(), err)
	}
	return nil
}

// Task implements Tasks.
func (d *DB) Task(ctx context.Context, name string) (Task, error) {
	return queryOne(ctx, d.db, fmt.Sprintf("task %q", name), scanTask, `SELECT `+taskColumns+` FROM tasks WHERE name = ?`, name)
}

// ListTasks implements Tasks.
func (d *DB) ListTasks(ctx context.Context) ([]Task, error) {
	return listTasks(ctx, d.db)
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func listTasks(ctx context.Context, q querier) ([]Task, error) {
	return queryAll(ctx, q, "list tasks", scanTask, `SELECT `+taskColumns+` FROM tasks ORDER BY name`)
}

// DeleteTask implements Tasks.
func (d *DB) DeleteTask(ctx context.Context, name string) error {
	return execOne(ctx, d.w, "delete", fmt.Sprintf("task %q", name), `DELETE FROM tasks WHERE name = ?`, name)
}

// SetTaskState implements Tasks.
func (d *DB) SetTaskState(ctx context.Context, name string, desired task.DesiredState, action task.Action, by string, at time.Time) error {
	if !desired.Valid() {
		return fmt.Errorf("task %q: desired state %q: use %s or %s", name, desired, task.DesiredRunning, task.DesiredPaused)
	}
	return execOne(ctx, d.w, "set state of", fmt.Sprintf("task %q", name), `UPDATE tasks SET desired_state = ?, last_action = ?, last_action_by = ?, last_action_at = ?
		WHERE name = ?`, desired, action, by, at.Unix(), name)
}

// SetTaskError implements Tasks.
func (d *DB) SetTaskError(ctx context.Context, name, msg string) error {
	if _, err := d.w.ExecContext(ctx, `UPDATE tasks SET last_error = ? WHERE name = ?`, msg, name); err != nil {
		return fmt.Errorf("record error of task %q: %w", name, err)
	}
	return nil
}

// CountTasks implements Tasks.
func (d *DB) CountTasks(ctx context.Context, cluster string) (int, error) {
	var n int
	if err := d.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM tasks WHERE current_cluster = ?`, cluster).Scan(&n); err != nil {
		return 0, fmt.Errorf("count tasks of cluster %q: %w", cluster, err)
	}
	return n, nil
}

// TasksUsingCluster implements Tasks.
func (d *DB) TasksUsingCluster(ctx context.Context, cluster string) ([]string, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT name FROM tasks WHERE current_cluster = ? OR peer_cluster = ? ORDER BY name`, cluster, cluster)
	if err != nil {
		return nil, fmt.Errorf("tasks using cluster %q: %w", cluster, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("tasks using cluster %q: %w", cluster, err)
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

func scanTask(s scanner) (Task, error) {
	var t Task
	var spec string
	var actionAt, created int64
	if err := s.Scan(&spec, &t.PeerPasswordCiphertext, &t.PeerCredentialsCiphertext, &t.DesiredState, &t.LastAction, &t.LastActionBy,
		&actionAt, &t.LastError, &created); err != nil {
		return Task{}, err
	}
	if err := json.Unmarshal([]byte(spec), &t.Spec); err != nil {
		return Task{}, fmt.Errorf("decode task spec: %w", err)
	}
	t.LastActionAt = unixTime(actionAt)
	t.CreatedAt = unixTime(created)
	return t, nil
}

// SetTaskEngine implements Tasks.
func (d *DB) SetTaskEngine(ctx context.Context, name, engine string) error {
	tx, err := d.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("move task %q: begin: %w", name, err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit this is a no-op
	var raw string
	err = tx.QueryRowContext(ctx, `SELECT spec FROM tasks WHERE name = ?`, name).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("task %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("move task %q: %w", name, err)
	}
	var spec task.Task
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		return fmt.Errorf("move task %q: stored spec: %w", name, err)
	}
	spec.Engine = engine
	b, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	var connect any
	if c, ok := spec.ConnectCluster(); ok {
		connect = c
	}
	_, err = tx.ExecContext(ctx, `UPDATE tasks SET spec = ?, connect_cluster = ? WHERE name = ?`, string(b), connect, name)
	if isForeignKey(err) {
		return fmt.Errorf("Kafka Connect cluster %v: %w", connect, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("move task %q: %w", name, err)
	}
	return tx.Commit()
}
