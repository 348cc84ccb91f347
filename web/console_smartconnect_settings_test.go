package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/kmirror/kmirror/internal/service"
)

func settingsForm(csrf string, enabled bool, engine string) url.Values {
	v := url.Values{"_csrf": {csrf}, "engine": {engine}}
	if enabled {
		v.Set("enabled", "true")
	}
	return v
}

func optionValues(s *goquery.Selection) []string {
	var out []string
	s.Find("option").Each(func(_ int, o *goquery.Selection) { out = append(out, o.AttrOr("value", "")) })
	return out
}

func TestSmartConnectSettingEnablesAndPicksTheEngine(t *testing.T) {
	e := newTaskEnv(t)
	e.addConnectCluster("east-connect", "east")
	e.signIn(e.client, "admin", adminPassword)
	const path = "/instances/east/smart-connect"

	p := e.get(e.client, path)
	st := p.testid("sc-status")
	if st.AttrOr("data-enabled", "") != "true" || st.AttrOr("data-engine", "") != "embedded" || !strings.Contains(st.Text(), "In-process") {
		t.Fatalf("status of a new instance: %q %v", st.Text(), st.Nodes[0].Attr)
	}
	if got := optionValues(p.testid("field-engine")); strings.Join(got, ",") != "embedded,connect:east-connect" {
		t.Errorf("engine choices %q", got)
	}
	if p.testid("create-task").Length() != 1 {
		t.Error("enabled, yet no create-task button")
	}

	p = e.postForm(e.client, path+"/settings", settingsForm(p.csrf(t), true, "connect:east-connect"), nil)
	if p.url != path || !strings.Contains(p.testid("flash-success").Text(), "Kafka Connect cluster east-connect") {
		t.Fatalf("set engine: %d at %s, flash %q", p.status, p.url, p.testid("flash-success").Text())
	}
	if got := p.testid("sc-status").AttrOr("data-engine", ""); got != "connect:east-connect" {
		t.Errorf("engine after the change %q", got)
	}
	if got := p.doc.Find(`#sc-engine option[selected]`).AttrOr("value", ""); got != "connect:east-connect" {
		t.Errorf("engine select shows %q", got)
	}

	// A refused change keeps what was chosen, the message by the field.
	p = e.postForm(e.client, path+"/settings", settingsForm(p.csrf(t), true, "connect:nowhere"), nil)
	if p.status != http.StatusUnprocessableEntity || !strings.Contains(p.testid("error-engine").Text(), `no Kafka Connect cluster named "nowhere"`) {
		t.Fatalf("unknown engine: %d %q", p.status, p.testid("error-engine").Text())
	}
	if got := p.doc.Find(`#sc-engine option[selected]`).AttrOr("value", ""); got != "connect:nowhere" {
		t.Errorf("refused engine not kept: %q", got)
	}
	if got := p.testid("sc-status").AttrOr("data-engine", ""); got != "connect:east-connect" {
		t.Errorf("a refused change changed the engine to %q", got)
	}

	// Disabled: the page says how to enable it instead of offering create.
	p = e.postForm(e.client, path+"/settings", settingsForm(p.csrf(t), false, "embedded"), nil)
	if p.testid("sc-status").AttrOr("data-enabled", "") != "false" || p.testid("flash-success").Text() != "Smart Connect disabled on east." {
		t.Fatalf("disable: %q", p.testid("flash-success").Text())
	}
	if p.testid("create-task").Length() != 0 || !strings.Contains(p.testid("create-task-disabled").Text(), "kmirror instance smart-connect east --enable") {
		t.Errorf("disabled: create %d, hint %q", p.testid("create-task").Length(), p.testid("create-task-disabled").Text())
	}
	if p.doc.Find(`input[name="enabled"][checked]`).Length() != 0 {
		t.Error("the checkbox still shows enabled")
	}
}

func TestSmartConnectSettingIsAdminOnly(t *testing.T) {
	e := newTaskEnv(t)
	e.addUser("otto", service.RoleOperator)
	b := e.newBrowser()
	e.signIn(b, "otto", "otto-password")
	p := e.get(b, "/instances/east/smart-connect")
	if p.testid("sc-status").Length() != 1 || p.testid("sc-settings-form").Length() != 0 {
		t.Fatalf("operator: status %d, form %d", p.testid("sc-status").Length(), p.testid("sc-settings-form").Length())
	}
	if p := e.postForm(b, "/instances/east/smart-connect/settings", settingsForm(p.csrf(t), false, "embedded"), nil); p.status != http.StatusForbidden {
		t.Errorf("disable as operator: %d, want 403", p.status)
	}
	if p := e.get(b, "/instances/east/smart-connect"); p.testid("sc-status").AttrOr("data-enabled", "") != "true" {
		t.Error("an operator disabled Smart Connect")
	}
}

func TestSmartConnectSettingInTraditionalChinese(t *testing.T) {
	e := newTaskEnv(t)
	e.signIn(e.client, "admin", adminPassword)
	e.get(e.client, "/lang?to=zh-TW&next=/instances")
	p := e.get(e.client, "/instances/east/smart-connect")
	p = e.postForm(e.client, "/instances/east/smart-connect/settings", settingsForm(p.csrf(t), true, "connect:nowhere"), nil)
	if got := p.testid("error-engine").Text(); !strings.Contains(got, "不存在名為") {
		t.Errorf("engine message %q", got)
	}
	if got := p.testid("sc-status").Text(); !strings.Contains(got, "內置引擎") {
		t.Errorf("status %q", got)
	}
}
