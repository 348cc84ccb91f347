package views_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/kmirror/kmirror/internal/i18n"
	"github.com/kmirror/kmirror/internal/task"
	"github.com/kmirror/kmirror/views"
)

func richTask() views.TaskView {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return views.TaskView{
		Task: views.TaskInfo{
			Name: "orders-dr", Type: "kafka-replication",
			Current:      task.Current{Cluster: "east", Alias: "A"},
			Peer:         views.PeerInfo{Peer: task.Peer{Alias: "B", ConfigType: "cluster", Cluster: "west"}},
			Rules:        task.Rules{Direction: "push", Topics: []string{"orders"}, Tasks: 2, SyncConsumerOffsets: true, ReplicationFactor: 3, StartOffset: "earliest", Compression: "lz4"},
			DesiredState: "running",
			Status: views.TaskStatus{State: "FAILED", Reason: "partition orders-1 failed", Flows: []views.FlowStatus{{
				Flow: "A->B", State: "FAILED", Reason: "partition orders-1 failed", Records: 1200, LagRecords: 7,
				Partitions: []views.PartitionStatus{
					{Topic: "orders", Target: "orders", Partition: 0, NextOffset: 600, EndOffset: 605, Lag: 5},
					{Topic: "orders", Target: "orders", Partition: 1, NextOffset: 98, EndOffset: 100, Lag: 2, Failed: true,
						Reason: "record at offset 98 is 2 MiB, more than the target's max.message.bytes 1 MiB: raise it on the target topic, then restart the task"},
				},
				Checkpoints: &views.CheckpointStatus{LastRun: at, Groups: []string{"billing", "audit"}, Committed: []string{"billing"},
					Skipped: []string{"audit: active on the target"}},
			}}},
			LastAction:     views.LastAction{Action: "restart", By: "alice", At: at},
			InternalTopics: []task.InternalTopic{{Cluster: "current", Topic: "mm2-offset-syncs.B.internal"}, {Cluster: "peer", Topic: "A.checkpoints.internal"}},
		},
		Chart:  map[string]any{"task": "orders-dr", "every_seconds": 5, "flows": []any{}},
		Errors: []views.RecentError{{At: at, Flow: "A->B", Message: "broker 2 went away"}},
	}
}

func render(t *testing.T, ctx context.Context, v views.TaskView) *goquery.Document {
	t.Helper()
	var buf bytes.Buffer
	if err := views.TaskPage(views.Page{Title: v.Task.Name, CSRF: "tok", User: "admin", Charts: true}, v).Render(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestTaskPageDetails(t *testing.T) {
	doc := render(t, context.Background(), richTask())
	by := func(id string) *goquery.Selection { return doc.Find(`[data-testid="` + id + `"]`) }

	if got := by("partition-reason-headline").Text(); !strings.Contains(got, "max.message.bytes") {
		t.Errorf("failed partition reason %q", got)
	}
	row := doc.Find(`[data-testid="partition-row"][data-partition="orders-1"]`)
	if !row.HasClass("failed") || row.Find(`[data-testid="partition-end"]`).Text() != "100" ||
		row.Find(`[data-testid="partition-next"]`).Text() != "98" || row.Find(`[data-testid="partition-lag"]`).Text() != "2" ||
		row.Find(`[data-testid="partition-target"]`).Text() != "orders" {
		t.Errorf("partition row %q", row.Text())
	}
	if got := by("offset-sync-groups").Text(); got != "billing, audit" {
		t.Errorf("groups %q", got)
	}
	if got := by("offset-sync-committed").Text(); got != "billing" {
		t.Errorf("committed %q", got)
	}
	if got := by("offset-sync-skipped").Text(); !strings.Contains(got, "active on the target") {
		t.Errorf("skipped %q", got)
	}
	if got := by("offset-sync-last-run").Text(); got != "2026-01-02 03:04:05 UTC" {
		t.Errorf("last run %q", got)
	}
	if got := by("recent-error").Text(); !strings.Contains(got, "broker 2 went away") {
		t.Errorf("recent errors %q", got)
	}
	if by("internal-topic").Length() != 2 {
		t.Error("internal topics missing")
	}
	if got := by("task-last-action").Text(); got != "Last action: Restart by alice at 2026-01-02 03:04:05 UTC" {
		t.Errorf("last action %q", got)
	}
	if doc.Find(`link[href="/static/uPlot-1.6.32.min.css"]`).Length() != 1 {
		t.Error("uPlot CSS not loaded")
	}
}

func TestTaskPageInTraditionalChinese(t *testing.T) {
	ctx := i18n.WithLocalizer(context.Background(), i18n.Default().Localizer("zh-TW", ""))
	doc := render(t, ctx, richTask())
	if got := doc.Find(`[data-testid="task-state"]`).Text(); got != "異常" {
		t.Errorf("state %q", got)
	}
	if got := doc.Find(`[data-testid="param-direction"]`).Text(); got != "推送" {
		t.Errorf("direction %q", got)
	}
	if !strings.Contains(doc.Find(`[data-testid="task-params"]`).Text(), "同步消費進度") {
		t.Error("parameter labels are not the original product's words")
	}
	if doc.Find("html").AttrOr("lang", "") != "zh-TW" {
		t.Error("html lang")
	}
}

func TestExportTaskMasksPassword(t *testing.T) {
	info := richTask().Task
	info.Peer = views.PeerInfo{Peer: task.Peer{Alias: "B", ConfigType: "address", Address: []string{"h:1"}, Password: "secret"}, PasswordSet: true}
	if got := views.ExportTask(info).Peer.Password; got != views.PasswordMask {
		t.Errorf("exported password %q", got)
	}
	info.Peer.PasswordSet = false
	if got := views.ExportTask(info).Peer.Password; got != "" {
		t.Errorf("no password exported as %q", got)
	}
}

// The task page's heading points the arrow the way records go.
func TestTaskPageArrowFollowsTheDirection(t *testing.T) {
	for _, c := range []struct {
		direction task.Direction
		arrow     string
	}{
		{task.DirectionPush, "east (A) → west (B)"},
		{task.DirectionPull, "east (A) ← west (B)"},
		{task.DirectionBidirectional, "east (A) ↔ west (B)"},
	} {
		v := richTask()
		v.Task.Rules.Direction = c.direction
		doc := render(t, context.Background(), v)
		if got := strings.Join(strings.Fields(doc.Find(`[data-testid="task-sides"]`).Text()), " "); !strings.HasSuffix(got, c.arrow) {
			t.Errorf("%s task headed %q, want ...%q", c.direction, got, c.arrow)
		}
	}
}
