package web

import (
	"context"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/views"
)

// smartConnectPages serve an instance's Smart Connect section: the task list
// with its actions, and the create-task form with inline validation and the
// connectivity check (the original product's flow).
type smartConnectPages struct {
	s *Server
}

func newSmartConnectPages(s *Server) *smartConnectPages {
	return &smartConnectPages{s: s}
}

func (h *smartConnectPages) routes(g *echo.Group) {
	const base = "/instances/:name/smart-connect"
	g.GET(base, h.list)
	g.GET(base+"/rows", h.rows)
	g.GET(base+"/new", h.newForm, h.s.requireRole(service.RoleOperator))
	g.POST(base, h.create)
	g.POST(base+"/validate", h.validate)
	g.POST(base+"/check", h.check)
	g.POST(base+"/settings", h.settings)
	g.GET(base+"/:task/:action", h.confirm, h.s.requireRole(service.RoleOperator))
	g.POST(base+"/:task/:action", h.act)
}

// view gathers the instance and its tasks with their rates.
func (h *smartConnectPages) view(ctx context.Context, name string) (views.SmartConnectView, error) {
	info, err := h.s.svc.Cluster(ctx, name)
	if err != nil {
		return views.SmartConnectView{}, err
	}
	tasks, err := h.s.svc.TasksOfCluster(ctx, name)
	if err != nil {
		return views.SmartConnectView{}, err
	}
	v := views.SmartConnectView{Cluster: clusterView(info), Tasks: make([]views.TaskRow, len(tasks))}
	for i, t := range tasks {
		row := views.TaskRow{Info: taskModel(t)}
		// The history sampler is the one owner of rates: the dashboard and
		// the task page read it too. A task that does not copy has no rate
		// now, whatever it had.
		if t.Status.State.Copying() {
			row.RecordsPerSecond, row.RateWindow, row.RateKnown = h.s.series(t.Name).Rate()
		}
		v.Tasks[i] = row
	}
	return v, nil
}

func (h *smartConnectPages) list(c echo.Context) error {
	return h.renderList(c, http.StatusOK, views.SmartConnectSettingsForm{})
}

// renderList renders the whole section; settings is the Smart Connect
// setting form after a refused change, or its zero value.
func (h *smartConnectPages) renderList(c echo.Context, status int, settings views.SmartConnectSettingsForm) error {
	ctx := c.Request().Context()
	v, err := h.view(ctx, c.Param("name"))
	if err != nil {
		return err
	}
	if v.ConnectClusters, err = h.s.connectClusterNames(ctx); err != nil {
		return err
	}
	v.Settings = settings
	p := h.s.instancePage(c, tr(c, "task.smart_connect")+" · "+v.Cluster.Name, v.Cluster.Name, "smart-connect")
	return Render(c, status, views.SmartConnectList(p, v))
}

// settings turns Smart Connect on or off and picks its default engine, in
// one change; a refused one comes back with the service's messages by the
// fields.
func (h *smartConnectPages) settings(c echo.Context) error {
	name := c.Param("name")
	var posted struct {
		Enabled bool   `form:"enabled"`
		Engine  string `form:"engine"`
	}
	if err := decodeForm(c, &posted); err != nil {
		return err
	}
	in := service.SmartConnect{Enabled: posted.Enabled, Engine: posted.Engine}
	if _, err := h.s.svc.SetSmartConnect(c.Request().Context(), name, in); err != nil {
		e := service.AsError(err)
		if e.Code == service.CodeInternal || e.Code == service.CodeForbidden || e.Code == service.CodeNotFound {
			return err
		}
		f := views.SmartConnectSettingsForm{Submitted: true, Enabled: in.Enabled, Engine: in.Engine, Errors: fieldErrors(e.Problems)}
		if len(e.Problems) == 0 {
			f.Message = e.Message
		}
		return h.renderList(c, http.StatusUnprocessableEntity, f)
	}
	msg := tr(c, "sc.settings_disabled", "Name", name)
	if in.Enabled {
		msg = tr(c, "sc.settings_enabled", "Name", name, "Engine", views.EngineLabel(c.Request().Context(), in.Engine))
	}
	h.s.flash(c, views.Flash{Kind: views.FlashSuccess, Message: msg})
	return Redirect(c, views.InstancePath(name, "smart-connect"))
}

// rows is the list's self-refreshing body.
func (h *smartConnectPages) rows(c echo.Context) error {
	v, err := h.view(c.Request().Context(), c.Param("name"))
	if err != nil {
		return err
	}
	return Render(c, http.StatusOK, views.TaskRows(CSRFToken(c), v))
}

// confirm asks before an action when the browser runs no JavaScript (with
// it, htmx asks through hx-confirm and posts directly).
func (h *smartConnectPages) confirm(c echo.Context) error {
	name, tname, action := c.Param("name"), c.Param("task"), c.Param("action")
	if _, offered := taskActionDone[action]; !offered {
		return echo.ErrNotFound
	}
	if _, err := h.ownTask(c.Request().Context(), name, tname); err != nil {
		return err
	}
	p := h.s.instancePage(c, views.ActionLabel(c.Request().Context(), action)+" "+tname, name, "smart-connect")
	return Render(c, http.StatusOK, views.TaskActionConfirm(p, name, tname, action))
}

func (h *smartConnectPages) act(c echo.Context) error {
	ctx := c.Request().Context()
	name, tname, action := c.Param("name"), c.Param("task"), c.Param("action")
	if _, offered := taskActionDone[action]; !offered {
		return echo.ErrNotFound
	}
	if _, err := h.ownTask(ctx, name, tname); err != nil {
		return err
	}
	done, _, err := h.s.runTaskAction(c, tname, action)
	kind, msg := views.FlashSuccess, done
	if err != nil {
		e := service.AsError(err)
		if e.Code == service.CodeInternal || e.Code == service.CodeForbidden {
			return err
		}
		kind, msg = views.FlashError, e.Message
	}
	h.s.flash(c, views.Flash{Kind: kind, Message: msg})
	return Redirect(c, views.InstancePath(name, "smart-connect"))
}

// ownTask finds a task of this instance: a task of another instance is not
// found here, so a URL cannot act on it under the wrong instance.
func (h *smartConnectPages) ownTask(ctx context.Context, cluster, name string) (service.TaskInfo, error) {
	t, err := h.s.svc.Task(ctx, name)
	if err != nil {
		return t, err
	}
	if t.Current.Cluster != cluster {
		return t, &service.Error{Code: service.CodeNotFound, Message: fmt.Sprintf("instance %q has no task named %q", cluster, name)}
	}
	return t, nil
}
