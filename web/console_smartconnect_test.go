package web_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

// taskFormValues is a valid push task from east to the registered west,
// as the create form posts it.
func taskFormValues(csrf, name string) url.Values {
	return url.Values{
		"_csrf": {csrf}, "name": {name}, "type": {"kafka-replication"},
		"current.alias": {"A"}, "peer.alias": {"B"}, "peer.config_type": {"cluster"}, "peer.cluster": {"west"},
		// Hidden by the form for a peer by name; the handler must drop them.
		"peer.address": {"1.2.3.4:9092"}, "peer.security_protocol": {"PLAINTEXT"},
		"rules.direction": {"push"}, "rules.topics_mode": {"list"}, "rules.topics": {"orders\r\npayments\r\n"},
		"rules.tasks": {"2"}, "rules.rename_topics": {"true"}, "rules.replication_factor": {"1"},
		"rules.start_offset": {"earliest"}, "rules.compression": {"lz4"},
		"rules.topic_mappings.source": {"", "", ""}, "rules.topic_mappings.target": {"", "", ""},
	}
}

func TestSmartConnectFlow(t *testing.T) {
	e := newTaskEnv(t)
	e.signIn(e.client, "admin", adminPassword)

	inst := e.get(e.client, "/instances")
	if href, _ := inst.testid("cluster-link").First().Attr("href"); href != "/instances/east" {
		t.Errorf("instance name links to %q", href)
	}
	ov := e.get(e.client, "/instances/east")
	if ov.status != http.StatusOK || ov.testid("instance-health").AttrOr("data-reachable", "") != "true" {
		t.Fatalf("overview: %d %q", ov.status, ov.testid("instance-health").Text())
	}
	if ov.testid("nav-instance-smart-connect").Length() != 1 {
		t.Error("no Smart Connect entry in the left navigation")
	}

	form := e.get(e.client, "/instances/east/smart-connect/new")
	if form.status != http.StatusOK || form.testid("task-form").Length() != 1 {
		t.Fatalf("new form: %d", form.status)
	}
	csrf := form.csrf(t)

	// Inline validation shows only touched fields' problems, by the field.
	bad := taskFormValues(csrf, "x!")
	bad.Set("_touched", "name")
	bad.Set("current.alias", "")
	v := e.postForm(e.client, "/instances/east/smart-connect/validate", bad, http.Header{"Hx-Request": {"true"}})
	if v.status != http.StatusOK || v.testid("error-name").Length() == 0 {
		t.Fatalf("validate: %d\n%s", v.status, v.body)
	}
	if v.testid("error-current.alias").Length() != 0 {
		t.Error("an untouched field is scolded")
	}
	v = e.postForm(e.client, "/instances/east/smart-connect/validate", taskFormValues(csrf, "orders-dr"), http.Header{"Hx-Request": {"true"}})
	if got := v.doc.Find(`[data-testid="preview-pair"][data-source="orders"]`).AttrOr("data-target", ""); got != "A.orders" {
		t.Errorf("preview of orders: target %q, want A.orders", got)
	}

	chk := e.postForm(e.client, "/instances/east/smart-connect/check", taskFormValues(csrf, "orders-dr"), http.Header{"Hx-Request": {"true"}})
	if chk.testid("check-ok").Length() != 1 || chk.testid("check-cluster").Length() != 2 {
		t.Fatalf("check:\n%s", chk.body)
	}

	// A refused create keeps what was typed, with messages by the fields.
	refused := e.postForm(e.client, "/instances/east/smart-connect", bad, nil)
	if refused.status != http.StatusUnprocessableEntity || refused.testid("error-current.alias").Length() == 0 {
		t.Fatalf("refused create: %d\n%s", refused.status, refused.body)
	}
	if v, _ := refused.doc.Find("#f-name").Attr("value"); v != "x!" {
		t.Errorf("typed name not kept: %q", v)
	}

	created := e.postForm(e.client, "/instances/east/smart-connect", taskFormValues(csrf, "orders-dr"), nil)
	if created.url != "/instances/east/smart-connect" || created.testid("flash-success").Text() != "Task orders-dr created successfully" {
		t.Fatalf("create: %d at %s\n%s", created.status, created.url, created.body)
	}
	row := created.doc.Find(`[data-testid="task-row"][data-task="orders-dr"]`)
	if row.Length() != 1 || row.AttrOr("data-state", "") != "RUNNING" {
		t.Fatalf("task row: %q", row.Text())
	}
	if row.Find(`[data-testid="task-pause"]`).Length() != 1 || row.Find(`[data-testid="task-resume"]`).Length() != 0 {
		t.Error("a running task offers resume, or not pause")
	}
	if !strings.Contains(row.Find(`[data-testid="task-last-action"]`).Text(), "Create by admin") {
		t.Errorf("last action %q", row.Find(`[data-testid="task-last-action"]`).Text())
	}

	// The no-JavaScript action forms are GETs: the token must not ride in
	// their URL.
	if n := created.doc.Find(`form[method="get"] input[name="_csrf"]`).Length(); n != 0 {
		t.Errorf("%d GET forms carry the CSRF token into a URL", n)
	}
	// Without JavaScript an action is confirmed on its own page first.
	conf := e.get(e.client, "/instances/east/smart-connect/orders-dr/pause")
	if conf.testid("confirm-form").Length() != 1 {
		t.Fatalf("confirm page: %d", conf.status)
	}
	paused := e.postForm(e.client, "/instances/east/smart-connect/orders-dr/pause", url.Values{"_csrf": {csrf}}, nil)
	row = paused.doc.Find(`[data-testid="task-row"][data-task="orders-dr"]`)
	if row.AttrOr("data-state", "") != "PAUSED" || row.Find(`[data-testid="task-resume"]`).Length() != 1 {
		t.Fatalf("after pause: %q", row.Text())
	}
	// A task is acted on under its own instance only.
	if p := e.postForm(e.client, "/instances/west/smart-connect/orders-dr/delete", url.Values{"_csrf": {csrf}}, nil); p.status != http.StatusNotFound {
		t.Errorf("delete under another instance: %d", p.status)
	}
	deleted := e.postForm(e.client, "/instances/east/smart-connect/orders-dr/delete", url.Values{"_csrf": {csrf}}, nil)
	if deleted.testid("tasks-empty").Length() != 1 || deleted.testid("flash-success").Text() != "Task orders-dr deleted." {
		t.Fatalf("after delete:\n%s", deleted.testid("tasks-table").Text())
	}
}

// Topic mapping messages land on the row they are about, blank rows in
// between notwithstanding.
func TestTaskFormMappingMessagesOnTheirRow(t *testing.T) {
	e := newTaskEnv(t)
	e.signIn(e.client, "admin", adminPassword)
	csrf := e.get(e.client, "/instances/east/smart-connect/new").csrf(t)
	f := taskFormValues(csrf, "mapped-task")
	f.Del("rules.rename_topics")
	f["rules.topic_mappings.source"] = []string{"", "orders", ""}
	f["rules.topic_mappings.target"] = []string{"", "", ""}
	p := e.postForm(e.client, "/instances/east/smart-connect", f, nil)
	if p.status != http.StatusUnprocessableEntity {
		t.Fatalf("status %d", p.status)
	}
	if p.testid("error-rules.topic_mappings[1]").Length() == 0 || p.testid("error-rules.topic_mappings[0]").Length() != 0 {
		t.Errorf("mapping message not on row 2:\n%s", p.testid("mappings").Text())
	}
}

// In Traditional Chinese the flow speaks the original product's words: 開始檢測,
// 立即創建 and the banner 創建xxx任務成功.
// asciiLetters finds an English word.
var asciiLetters = regexp.MustCompile(`[a-z]{3,}`)

func TestSmartConnectInTraditionalChinese(t *testing.T) {
	e := newTaskEnv(t)
	e.signIn(e.client, "admin", adminPassword)
	e.get(e.client, "/lang?to=zh-TW&next=/instances")
	form := e.get(e.client, "/instances/east/smart-connect/new")
	if got := strings.TrimSpace(form.testid("start-check").Text()); got != "開始檢測" {
		t.Errorf("start check button %q", got)
	}
	if got := strings.TrimSpace(form.testid("create-now").Text()); got != "立即創建" {
		t.Errorf("create button %q", got)
	}
	// The topic box's labels, which the script puts on the chip input.
	topics := form.testid("field-rules.topics")
	for _, attr := range []string{"placeholder", "data-label-input", "data-label-name", "data-label-remove"} {
		if v := topics.AttrOr(attr, ""); v == "" || asciiLetters.MatchString(v) && !strings.Contains(v, "Topic") {
			t.Errorf("topics %s %q is not Traditional Chinese", attr, v)
		}
	}
	created := e.postForm(e.client, "/instances/east/smart-connect", taskFormValues(form.csrf(t), "orders-dr"), nil)
	if got := created.testid("flash-success").Text(); got != "創建orders-dr任務成功" {
		t.Errorf("banner %q", got)
	}
}

// The create page shows the original product's constraints (in the chosen language),
// offers the source side's topics to pick from after a validation, notes
// new target topics in the preview, and shows the effective task count of a
// bidirectional task.
func TestTaskFormChoicesConstraintsAndEffectiveTasks(t *testing.T) {
	e := newTaskEnv(t)
	e.signIn(e.client, "admin", adminPassword)
	form := e.get(e.client, "/instances/east/smart-connect/new")
	items := form.testid("constraint")
	if items.Length() != 4 || !strings.Contains(items.First().Text(), "18") || !strings.Contains(items.Last().Text(), "524288") {
		t.Fatalf("constraints: %q", form.testid("constraints").Text())
	}
	// A direction is chosen already, so a first submit cannot fail on it.
	if checked := form.doc.Find(`input[name="rules.direction"][checked]`); checked.Length() != 1 || checked.AttrOr("value", "") != "pull" {
		t.Errorf("new form: %d directions checked (%q), want pull preselected", checked.Length(), checked.AttrOr("value", ""))
	}
	if form.testid("topic-choices").Length() != 1 || form.testid("topic-choices").Find("option").Length() != 0 {
		t.Error("the page has no (empty) topic choices before the first validation")
	}
	if eff := form.testid("tasks-effective"); eff.Length() != 1 || eff.AttrOr("hidden", "none") == "none" ||
		eff.AttrOr("data-format", "") != "{n} × 2 = {total} tasks" {
		t.Errorf("effective tasks on a new form: hidden=%q format=%q", eff.AttrOr("hidden", "none"), eff.AttrOr("data-format", ""))
	}
	csrf := form.csrf(t)

	// Push: the current instance's topics, internal ones left out; the
	// validation answer swaps the list in by id.
	v := e.postForm(e.client, "/instances/east/smart-connect/validate", taskFormValues(csrf, "orders-dr"), http.Header{"Hx-Request": {"true"}})
	var got []string
	v.doc.Find(`datalist#topic-choices[hx-swap-oob] option`).Each(func(_ int, s *goquery.Selection) { got = append(got, s.AttrOr("value", "")) })
	if strings.Join(got, ",") != "orders,payments" {
		t.Errorf("push topic choices %q", got)
	}
	// west has A.orders already; A.payments is created.
	if p := v.doc.Find(`[data-testid="preview-pair"][data-source="payments"]`); p.AttrOr("data-new-target", "") != "true" ||
		!strings.Contains(p.Text(), "created with the source topic's configs") {
		t.Errorf("preview of payments: new=%q %q", p.AttrOr("data-new-target", ""), p.Text())
	}
	pull := taskFormValues(csrf, "orders-dr")
	pull.Set("rules.direction", "pull")
	v = e.postForm(e.client, "/instances/east/smart-connect/validate", pull, http.Header{"Hx-Request": {"true"}})
	got = nil
	v.doc.Find(`datalist#topic-choices option`).Each(func(_ int, s *goquery.Selection) { got = append(got, s.AttrOr("value", "")) })
	if strings.Join(got, ",") != "A.orders,audit" {
		t.Errorf("pull topic choices %q", got)
	}

	// Without htmx the whole page comes back, with the effective count.
	bi := taskFormValues(csrf, "orders-dr")
	bi.Set("rules.direction", "bidirectional")
	bi.Set("rules.tasks", "3")
	page := e.postForm(e.client, "/instances/east/smart-connect/validate", bi, nil)
	if eff := page.testid("tasks-effective"); eff.AttrOr("hidden", "none") != "none" || eff.Text() != "3 × 2 = 6 tasks" {
		t.Errorf("effective tasks: hidden=%q %q", eff.AttrOr("hidden", "none"), eff.Text())
	}

	e.get(e.client, "/lang?to=zh-TW&next=/instances")
	zh := e.get(e.client, "/instances/east/smart-connect/new")
	if c := zh.testid("constraints"); !strings.Contains(c.Text(), "約束與限制") || !strings.Contains(c.Text(), "一個實例最多創建18個Smart Connect任務") ||
		!strings.Contains(c.Text(), "不支持修改任務參數") {
		t.Errorf("zh-TW constraints: %q", c.Text())
	}
}

// han finds a Chinese character: a translated message has some, an English
// one none.
var han = regexp.MustCompile(`\p{Han}`)

// TestTraditionalChineseShowsNoEnglishProblems: the service's validation
// messages appear translated on zh-TW pages: the task form, the instance
// form and the import.
func TestTraditionalChineseShowsNoEnglishProblems(t *testing.T) {
	e := newTaskEnv(t)
	e.signIn(e.client, "admin", adminPassword)
	e.get(e.client, "/lang?to=zh-TW&next=/instances")
	form := e.get(e.client, "/instances/east/smart-connect/new")
	bad := taskFormValues(form.csrf(t), "x")
	for k, v := range map[string]string{"current.alias": "A B", "peer.alias": "", "rules.direction": "", "rules.tasks": "0",
		"rules.replication_factor": "0", "rules.topics": "orders\norders\n__consumer_offsets", "rules.start_offset": "soon"} {
		bad.Set(k, v)
	}
	pages := map[string]page{
		"task form": e.postForm(e.client, "/instances/east/smart-connect", bad, nil),
		"instance form": e.postForm(e.client, "/instances", url.Values{"_csrf": {form.csrf(t)}, "name": {"bad name"},
			"bootstrap_servers": {"nohost"}, "security_protocol": {"SASL_SSL"}, "sasl_mechanism": {"OAUTHBEARER"},
			"oauth.token_endpoint": {"http://idp.example.com/token"}, "client_cert_pem": {"not pem"}}, nil),
		"import": e.postForm(e.client, "/dashboard/import", url.Values{"_csrf": {form.csrf(t)},
			"task_json": {`{"name":"x","rules":{"tasks":0,"direction":"sideways"}}`}}, nil),
	}
	for name, p := range pages {
		msgs := p.doc.Find(`.error, .form-error li, .form-error p, [data-testid="import-problem"]`)
		if p.status != http.StatusUnprocessableEntity || msgs.Length() < 3 {
			t.Fatalf("%s: %d with %d messages, want a 422 with several", name, p.status, msgs.Length())
		}
		msgs.Each(func(_ int, s *goquery.Selection) {
			if text := strings.TrimSpace(s.Text()); text != "" && !han.MatchString(text) {
				t.Errorf("%s: English message on a zh-TW page: %q", name, text)
			}
		})
	}
}

// The form's "when a target topic is deleted or created again" reaches the
// task, and the task page says it; a refused create keeps the choice.
func TestTaskFormOnTargetTopicReplaced(t *testing.T) {
	e := newTaskEnv(t)
	e.signIn(e.client, "admin", adminPassword)
	form := e.get(e.client, "/instances/east/smart-connect/new")
	if got := form.doc.Find(`#f-on-replaced option[selected]`).AttrOr("value", "?"); got != "" {
		t.Fatalf("the form's default is %q, want recopy (\"\")", got)
	}
	v := taskFormValues(form.csrf(t), "keep-on")
	v.Set("rules.on_target_topic_replaced", "continue")
	v.Set("current.alias", "")
	refused := e.postForm(e.client, "/instances/east/smart-connect", v, nil)
	if got := refused.doc.Find(`#f-on-replaced option[selected]`).AttrOr("value", ""); refused.status != http.StatusUnprocessableEntity || got != "continue" {
		t.Fatalf("refused create: %d, choice kept as %q", refused.status, got)
	}
	v.Set("current.alias", "A")
	if p := e.postForm(e.client, "/instances/east/smart-connect", v, nil); p.status != http.StatusOK {
		t.Fatalf("create: %d", p.status)
	}
	code, _, body := e.call(http.MethodGet, "/api/v1/tasks/keep-on", "")
	if code != http.StatusOK || sub(body, "rules")["on_target_topic_replaced"] != "continue" {
		t.Fatalf("the task's rules: %d %v", code, sub(body, "rules"))
	}
	if got := e.get(e.client, "/tasks/keep-on").testid("task-on-target-replaced").Text(); got != "Continue from the progress" {
		t.Fatalf("task page says %q", got)
	}
}
