package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/task"
	"github.com/kmirror/kmirror/views"
)

// dashboardPages are the dashboard (every task) and the task import from
// the API's JSON.
type dashboardPages struct{ s *Server }

func (h *dashboardPages) routes(g *echo.Group) {
	g.GET("/dashboard", h.dashboardPage)
	// Under /dashboard, not /tasks: "import" is a valid task name.
	g.GET("/dashboard/import", h.importTaskPage, h.s.requireRole(service.RoleOperator))
	g.POST("/dashboard/import", h.importTask)
}

// dashboardState is the filter bucket of a task: starting and degraded
// count as running, anything else not paused or running is failed.
func dashboardState(state task.State) string {
	switch {
	case state.Copying():
		return "running"
	case state == task.StatePaused:
		return "paused"
	}
	return "failed"
}

// dashboardPage lists every task, failed first, then by name; ?state= and
// ?q= (part of the name, any case) filter it.
func (h *dashboardPages) dashboardPage(c echo.Context) error {
	list, err := h.s.svc.ListTasks(c.Request().Context())
	if err != nil {
		return err
	}
	f := views.DashboardFilter{State: c.QueryParam("state"), Query: strings.TrimSpace(c.QueryParam("q"))}
	if !slices.Contains([]string{"", "running", "paused", "failed"}, f.State) {
		f.State = ""
	}
	v := views.DashboardView{Filter: f}
	q := strings.ToLower(f.Query)
	for _, info := range list {
		st := dashboardState(info.Status.State)
		v.Counts.Total++
		switch st {
		case "running":
			v.Counts.Running++
		case "paused":
			v.Counts.Paused++
		default:
			v.Counts.Failed++
		}
		if (f.State != "" && st != f.State) || (q != "" && !strings.Contains(strings.ToLower(info.Name), q)) {
			continue
		}
		row := views.DashboardRow{Info: taskModel(info)}
		// The sampler only samples running tasks: a paused or failed task's
		// last rate is history, not its throughput now.
		if st == "running" {
			row.Rate, _, row.RateKnown = h.s.series(info.Name).Rate()
		}
		v.Rows = append(v.Rows, row)
	}
	// Failed first: they need someone; ListTasks already orders by name.
	slices.SortStableFunc(v.Rows, func(a, b views.DashboardRow) int {
		fa, fb := dashboardState(a.Info.Status.State) == "failed", dashboardState(b.Info.Status.State) == "failed"
		switch {
		case fa && !fb:
			return -1
		case fb && !fa:
			return 1
		}
		return 0
	})
	return Render(c, http.StatusOK, views.Dashboard(h.s.PageData(c, tr(c, "dashboard.title"), "/dashboard"), v))
}

func (h *dashboardPages) importTaskPage(c echo.Context) error {
	return Render(c, http.StatusOK, views.ImportPage(h.s.PageData(c, tr(c, "import.title"), "/dashboard"), views.ImportForm{}))
}

// importTask creates a task from pasted API JSON through the same service
// as the API and the form; problems come back by field.
func (h *dashboardPages) importTask(c echo.Context) error {
	raw := c.FormValue("task_json")
	var in task.Task
	// A masked password is refused by the service, as for the API and CLI.
	err := decodeTaskJSON([]byte(raw), &in)
	form := views.ImportForm{}
	form.JSON, form.PasswordRemoved = withoutSecrets(raw, in.Peer.Secrets())
	var info service.TaskInfo
	if err == nil {
		info, err = h.s.svc.CreateTask(c.Request().Context(), in)
	}
	if err != nil {
		e := service.AsError(err)
		if e.Code == service.CodeInternal || e.Code == service.CodeForbidden {
			return err
		}
		form.Problems = problemsView(e.Problems)
		if len(e.Problems) == 0 {
			form.Message = e.Message
		}
		if IsHTMX(c) {
			return Render(c, http.StatusUnprocessableEntity, views.ImportFormView(CSRFToken(c), form))
		}
		return Render(c, http.StatusUnprocessableEntity, views.ImportPage(h.s.PageData(c, tr(c, "import.title"), "/dashboard"), form))
	}
	h.s.flash(c, createdBanners(c, info)...)
	return Redirect(c, views.TaskPath(info.Name, ""))
}

// secretValue is the string value of a JSON member holding a secret (a
// password, a client key or its password, an OAuth client secret). Keys
// match case-insensitively, as encoding/json matches them.
var secretValue = regexp.MustCompile(`(?i)("(?:password|client_key_pem|client_key_password|client_secret)"\s*:\s*)"(?:[^"\\]|\\.)*"`)

// withoutSecrets is the pasted JSON to show again after a refusal, with
// every secret blanked: a page never echoes one back (it would sit in the
// browser's history and caches). decoded are the secrets the JSON decoded
// to; should one still appear (a key spelled with escapes), nothing is
// echoed. removed says a secret was taken out, so the form asks for it.
func withoutSecrets(raw string, decoded cluster.Secrets) (echo string, removed bool) {
	out := secretValue.ReplaceAllStringFunc(raw, func(m string) string {
		sub := secretValue.FindStringSubmatch(m)
		if strings.HasSuffix(m, `""`) && len(m) == len(sub[1])+2 {
			return m // already empty
		}
		removed = true
		return sub[1] + `""`
	})
	for _, d := range decoded.Values() {
		if d != task.PasswordMask && strings.Contains(out, d) {
			return "", true
		}
	}
	return out, removed
}

// decodeTaskJSON reads one task the way the API does: unknown fields and
// trailing data are errors, with the API's messages.
func decodeTaskJSON(raw []byte, v *task.Task) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		// The API's words, about what was pasted rather than a request body.
		return &service.Error{Code: service.CodeInvalidRequest, Message: strings.Replace(describeJSONError(err), "the body", "the JSON", 1)}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &service.Error{Code: service.CodeInvalidRequest, Message: "the JSON must hold exactly one task object"}
	}
	return nil
}
