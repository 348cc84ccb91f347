package views_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/kmirror/kmirror/internal/i18n"
	"github.com/kmirror/kmirror/views"
)

func TestEngineChoicesAndLabels(t *testing.T) {
	for _, tc := range []struct {
		clusters []string
		selected string
		want     []string
	}{
		{nil, "", []string{"embedded"}},
		{[]string{"c1", "c2"}, "connect:c2", []string{"embedded", "connect:c1", "connect:c2"}},
		// A refused value stays choosable, so the form shows what was sent.
		{[]string{"c1"}, "connect:gone", []string{"embedded", "connect:c1", "connect:gone"}},
	} {
		if got := views.EngineChoices(tc.clusters, tc.selected); !slices.Equal(got, tc.want) {
			t.Errorf("EngineChoices(%v, %q) = %v, want %v", tc.clusters, tc.selected, got, tc.want)
		}
	}
	zh := i18n.WithLocalizer(context.Background(), i18n.Default().Localizer("zh-TW", ""))
	for _, tc := range []struct {
		ctx           context.Context
		engine, label string
	}{
		{context.Background(), "", "In-process (kmirror)"},
		{context.Background(), "embedded", "In-process (kmirror)"},
		{context.Background(), "connect:west-connect", "Kafka Connect cluster west-connect"},
		{zh, "embedded", "內置引擎（kmirror）"},
		{zh, "connect:west-connect", "Kafka Connect集群 west-connect"},
	} {
		if got := views.EngineLabel(tc.ctx, tc.engine); got != tc.label {
			t.Errorf("EngineLabel(%q) = %q, want %q", tc.engine, got, tc.label)
		}
	}
}

func renderSmartConnect(t *testing.T, v views.SmartConnectView) *goquery.Document {
	t.Helper()
	var buf bytes.Buffer
	if err := views.SmartConnectList(views.Page{Title: "Smart Connect", CSRF: "tok", User: "admin"}, v).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestSmartConnectListSetting(t *testing.T) {
	on := views.ClusterInfo{Name: "east", TasksLimit: 18, SmartConnect: views.SmartConnect{Enabled: true, Engine: "connect:c1"}}
	doc := renderSmartConnect(t, views.SmartConnectView{Cluster: on, ConnectClusters: []string{"c1"}})
	if doc.Find(`[data-testid="create-task"]`).Length() != 1 || doc.Find(`[data-testid="create-task-disabled"]`).Length() != 0 {
		t.Error("enabled: want the create button, not the reason")
	}
	if got := doc.Find(`#sc-engine option[selected]`).AttrOr("value", ""); got != "connect:c1" {
		t.Errorf("engine select shows %q", got)
	}
	if doc.Find(`input[name="enabled"][checked]`).Length() != 1 {
		t.Error("enabled checkbox not checked")
	}

	off := on
	off.SmartConnect = views.SmartConnect{Enabled: false, Engine: "embedded"}
	refused := views.SmartConnectSettingsForm{Submitted: true, Enabled: true, Engine: "connect:gone",
		Errors: views.FieldErrors{"engine": {"no Kafka Connect cluster named \"gone\" is registered: register it first, or choose embedded"}}}
	doc = renderSmartConnect(t, views.SmartConnectView{Cluster: off, Settings: refused})
	if doc.Find(`[data-testid="create-task"]`).Length() != 0 || !strings.Contains(doc.Find(`[data-testid="create-task-disabled"]`).Text(), "--enable") {
		t.Error("disabled: want the way to enable it instead of the create button")
	}
	if got := doc.Find(`[data-testid="sc-status"]`).AttrOr("data-enabled", ""); got != "false" {
		t.Errorf("status data-enabled %q", got)
	}
	// The form shows the refused choice, the status the stored one.
	if got := doc.Find(`#sc-engine option[selected]`).AttrOr("value", ""); got != "connect:gone" {
		t.Errorf("refused engine not kept: %q", got)
	}
	if doc.Find(`input[name="enabled"][checked]`).Length() != 1 {
		t.Error("refused enabled not kept")
	}
	if doc.Find(`[data-testid="error-engine"]`).Length() != 1 || doc.Find(`[data-testid="sc-no-connect-cluster"]`).Length() != 1 {
		t.Error("engine message or the no-Connect-cluster hint missing")
	}
}

// An exported task keeps its engine, so its copy runs where it runs.
func TestExportTaskKeepsTheEngine(t *testing.T) {
	info := views.TaskInfo{Name: "orders-dr", Engine: "connect:west-connect"}
	if got := views.ExportTask(info).Engine; got != "connect:west-connect" {
		t.Errorf("exported engine %q", got)
	}
	if !strings.Contains(views.ExportJSON(info), `"engine": "connect:west-connect"`) {
		t.Errorf("export JSON lacks the engine:\n%s", views.ExportJSON(info))
	}
}
