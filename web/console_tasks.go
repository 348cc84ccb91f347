package web

import (
	"net/http"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/kmirror/kmirror/internal/history"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/task"
	"github.com/kmirror/kmirror/views"
)

// taskPages are a task's page, its polled fragments and chart data, its
// export, and the actions taken from it.
type taskPages struct{ s *Server }

func (h *taskPages) routes(g *echo.Group) {
	g.GET("/tasks/:name", h.taskPage)
	g.GET("/tasks/:name/status", h.taskFragment(views.TaskStatusView))
	g.GET("/tasks/:name/live", h.taskFragment(func(_ string, v views.TaskView) templ.Component { return views.TaskLiveView(v) }))
	g.GET("/tasks/:name/series.json", h.taskSeries, jsonErrors)
	g.GET("/tasks/:name/export.json", h.taskExport)
	g.POST("/tasks/:name/move", h.moveTask)
	g.POST("/tasks/:name/:action", h.taskAction)
}

// series is what the sampler knows of a task; empty without a sampler.
func (s *Server) series(name string) history.TaskSeries {
	if s.history == nil {
		return history.TaskSeries{Task: name, Every: history.DefaultEvery}
	}
	return s.history.Series(name)
}

func (h *taskPages) taskView(c echo.Context) (views.TaskView, error) {
	ctx := c.Request().Context()
	info, err := h.s.svc.Task(ctx, c.Param("name"))
	if err != nil {
		return views.TaskView{}, err
	}
	v := taskPageModel(info, h.s.series(info.Name))
	// The newest switchover beside its link; none (or a kmirror without
	// switchovers) shows nothing there.
	if sw, err := h.s.svc.Switchover(ctx, info.Name); err == nil {
		m := switchoverModel(sw)
		v.Switchover = &m
	}
	if views.Can(ctx, views.Operate) {
		ccs, err := h.s.svc.ListConnectClusters(ctx)
		if err != nil {
			return v, err
		}
		names := make([]string, len(ccs))
		for i, cc := range ccs {
			names[i] = cc.Name
		}
		v.MoveTo = views.MoveTargets(names, info.Engine)
	}
	return v, nil
}

// moveTask moves a task to the engine chosen on its page, then returns
// there with a banner saying what happened (the service's reason when it
// did not).
func (h *taskPages) moveTask(c echo.Context) error {
	name := c.Param("name")
	info, err := h.s.svc.MoveTask(c.Request().Context(), name, c.FormValue("engine"))
	if err != nil {
		e := service.AsError(err)
		if e.Code == service.CodeInternal || e.Code == service.CodeNotFound || e.Code == service.CodeForbidden {
			return err
		}
		// The banner is translated when shown: the refusal's own words
		// (an engine's reason, "runs there already") say the most.
		msg := e.Message
		if len(e.Problems) > 0 {
			msg = e.Problems[0].Message
		}
		h.s.flash(c, views.Flash{Kind: views.FlashError, Message: msg})
		return Redirect(c, views.TaskPath(name, ""))
	}
	h.s.flash(c, views.Flash{Kind: views.FlashSuccess, Message: tr(c, "action.done.move", "Name", name, "Engine", views.EngineLabel(c.Request().Context(), info.Engine))})
	return Redirect(c, views.TaskPath(name, ""))
}

func (h *taskPages) taskPage(c echo.Context) error {
	v, err := h.taskView(c)
	if err != nil {
		return err
	}
	if v.CertWarnings, err = h.certWarnings(c, v.Task); err != nil {
		return err
	}
	p := h.s.PageData(c, v.Task.Name, "")
	p.Charts = true
	return Render(c, http.StatusOK, views.TaskPage(p, v))
}

// certWarnings are the client certificates of a task's clusters that end
// within 30 days or have ended: the peer's by address, and the registered
// clusters' (current, peer by name), read from the service (a store read
// each). Only the whole page shows them, not the parts that poll.
func (h *taskPages) certWarnings(c echo.Context, t views.TaskInfo) ([]views.CertWarning, error) {
	var out []views.CertWarning
	instance := func(name string) error {
		info, err := h.s.svc.Cluster(c.Request().Context(), name)
		if err != nil {
			if service.AsError(err).Code == service.CodeInternal {
				return err
			}
			return nil // gone or not visible: nothing to warn about here
		}
		if cv := clusterView(info); cv.ClientCert != nil && cv.ClientCert.ExpiresSoon {
			out = append(out, views.CertWarning{Instance: info.Name, Cert: *cv.ClientCert})
		}
		return nil
	}
	if err := instance(t.Current.Cluster); err != nil {
		return nil, err
	}
	if t.Peer.ConfigType == task.PeerByCluster {
		if err := instance(t.Peer.Cluster); err != nil {
			return nil, err
		}
	} else if pc := t.Peer.ClientCert; pc != nil && pc.ExpiresSoon {
		out = append(out, views.CertWarning{PeerAlias: t.Peer.Alias, Cert: *pc})
	}
	return out, nil
}

// statusStopPolling is htmx's "stop polling" status: the fragment is
// swapped in and its every-5s trigger ends.
const statusStopPolling = 286

// taskFragment answers a polled part of the task page. A task deleted
// meanwhile ends the polling with a notice instead of an error every 5s.
func (h *taskPages) taskFragment(view func(csrf string, v views.TaskView) templ.Component) echo.HandlerFunc {
	return func(c echo.Context) error {
		v, err := h.taskView(c)
		if service.IsCode(err, service.CodeNotFound) {
			c.Response().Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
			return c.String(statusStopPolling, "")
		}
		if err != nil {
			return err
		}
		return Render(c, http.StatusOK, view(CSRFToken(c), v))
	}
}

// taskSeries is the charts' data: the sampled series in uPlot's layout.
func (h *taskPages) taskSeries(c echo.Context) error {
	name := c.Param("name")
	if _, err := h.s.svc.Task(c.Request().Context(), name); err != nil {
		return err
	}
	noStore(c)
	return c.JSON(http.StatusOK, h.s.series(name).Columns())
}

// taskExport downloads the task as the API's JSON, password masked.
func (h *taskPages) taskExport(c echo.Context) error {
	info, err := h.s.svc.Task(c.Request().Context(), c.Param("name"))
	if err != nil {
		return err
	}
	noStore(c)
	c.Response().Header().Set(echo.HeaderContentDisposition, `attachment; filename="`+info.Name+`.json"`)
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, []byte(views.ExportJSON(taskModel(info))+"\n"))
}

// taskAction pauses, resumes, restarts or deletes a task for the signed-in
// user, then returns to the task page (the dashboard after a delete) with a
// banner saying what happened.
func (h *taskPages) taskAction(c echo.Context) error {
	name, action := c.Param("name"), c.Param("action")
	done, ok, err := h.s.runTaskAction(c, name, action)
	if !ok {
		return echo.NewHTTPError(http.StatusNotFound)
	}
	if err == nil && action == views.ActionDelete {
		h.s.flash(c, views.Flash{Kind: views.FlashSuccess, Message: done})
		return Redirect(c, "/dashboard")
	}
	if err != nil {
		e := service.AsError(err)
		if e.Code == service.CodeInternal || e.Code == service.CodeNotFound || e.Code == service.CodeForbidden {
			return err
		}
		h.s.flash(c, views.Flash{Kind: views.FlashError, Message: e.Message})
		return Redirect(c, views.TaskPath(name, ""))
	}
	h.s.flash(c, views.Flash{Kind: views.FlashSuccess, Message: done})
	return Redirect(c, views.TaskPath(name, ""))
}
