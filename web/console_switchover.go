package web

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/switchover"
	"github.com/kmirror/kmirror/views"
)

// switchoverPages are a task's Switchover page, its polled progress and
// the form that starts one.
type switchoverPages struct{ s *Server }

func (h *switchoverPages) routes(g *echo.Group) {
	g.GET("/tasks/:name/switchover", h.page)
	g.GET("/tasks/:name/switchover/progress", h.progress)
	g.POST("/tasks/:name/switchover", h.start)
	g.POST("/tasks/:name/failback", h.failback)
}

// view is the page's model: the task's flows and its newest switchover.
func (h *switchoverPages) view(c echo.Context) (views.SwitchoverView, error) {
	ctx := c.Request().Context()
	info, err := h.s.svc.Task(ctx, c.Param("name"))
	if err != nil {
		return views.SwitchoverView{}, err
	}
	choices, err := h.s.svc.SwitchoverChoices(ctx, info.Name)
	if err != nil {
		return views.SwitchoverView{}, err
	}
	v := views.SwitchoverView{Task: info.Name, Flows: choices.Directions}
	sw, err := h.s.svc.Switchover(ctx, info.Name)
	switch {
	case err == nil:
		m := switchoverModel(sw)
		m.CanFailback = choices.CanFailback
		v.Current = &m
	case service.AsError(err).Code != service.CodeNotFound:
		return v, err
	}
	return v, nil
}

func (h *switchoverPages) page(c echo.Context) error {
	v, err := h.view(c)
	if err != nil {
		return err
	}
	return Render(c, http.StatusOK, views.SwitchoverPage(h.s.PageData(c, tr(c, "switchover.title", "Name", v.Task), ""), v))
}

// progress is the checklist alone, for the page's polling.
func (h *switchoverPages) progress(c echo.Context) error {
	v, err := h.view(c)
	if err != nil {
		return err
	}
	if v.Current == nil {
		return echo.NewHTTPError(http.StatusNotFound)
	}
	return Render(c, http.StatusOK, views.SwitchoverProgress(v.Task, *v.Current))
}

// start starts a switchover from the form; a refusal shows the form again
// with the reason and the fields' problems.
func (h *switchoverPages) start(c echo.Context) error {
	name := c.Param("name")
	form := views.SwitchoverForm{Mode: c.FormValue("mode"), Groups: c.FormValue("groups"), AllGroups: c.FormValue("all_groups") == "true", Direction: c.FormValue("direction")}
	req := switchover.Request{Mode: switchover.Mode(form.Mode), Direction: form.Direction, Groups: switchover.Groups{All: form.AllGroups}}
	if !form.AllGroups {
		for _, line := range strings.Split(form.Groups, "\n") {
			if g := strings.TrimSpace(line); g != "" {
				req.Groups.Names = append(req.Groups.Names, g)
			}
		}
	}
	_, err := h.s.svc.StartSwitchover(c.Request().Context(), name, req)
	if err != nil {
		e := service.AsError(err)
		if e.Code == service.CodeInternal || e.Code == service.CodeNotFound || e.Code == service.CodeForbidden {
			return err
		}
		v, verr := h.view(c)
		if verr != nil {
			return verr
		}
		v.Form, v.Error, v.Problems = form, e.Message, map[string]string{}
		for _, p := range e.Problems {
			v.Problems[p.Field] = p.Message
		}
		return Render(c, http.StatusUnprocessableEntity, views.SwitchoverPage(h.s.PageData(c, tr(c, "switchover.title", "Name", name), ""), v))
	}
	h.s.flash(c, views.Flash{Kind: views.FlashSuccess, Message: tr(c, "action.done.switchover", "Name", name)})
	return Redirect(c, views.TaskPath(name, "switchover"))
}

// failback prepares the way back; a refusal comes back as a banner.
func (h *switchoverPages) failback(c echo.Context) error {
	name := c.Param("name")
	if _, err := h.s.svc.PrepareFailback(c.Request().Context(), name); err != nil {
		e := service.AsError(err)
		if e.Code == service.CodeInternal || e.Code == service.CodeNotFound || e.Code == service.CodeForbidden {
			return err
		}
		h.s.flash(c, views.Flash{Kind: views.FlashError, Message: e.Message})
		return Redirect(c, views.TaskPath(name, "switchover"))
	}
	h.s.flash(c, views.Flash{Kind: views.FlashSuccess, Message: tr(c, "action.done.failback", "Name", name)})
	return Redirect(c, views.TaskPath(name, "switchover"))
}

// switchoverModel is a switchover as the page shows it.
func switchoverModel(sw switchover.Switchover) views.SwitchoverModel {
	m := views.SwitchoverModel{ID: sw.ID, Mode: string(sw.Mode), Direction: sw.Direction, State: string(sw.State), CreatedBy: sw.CreatedBy}
	if sw.Failback != nil {
		m.Failback = string(sw.Failback.State)
	}
	for _, s := range sw.Steps {
		m.Steps = append(m.Steps, views.SwitchoverStepModel{Name: s.Name, State: string(s.State), Message: s.Message})
	}
	for _, g := range sw.Report.Groups {
		gm := views.SwitchoverGroupModel{Group: g.Group, Notes: g.Notes}
		for _, p := range g.Partitions {
			gm.Partitions = append(gm.Partitions, views.SwitchoverPartitionModel{Topic: p.Topic, TargetTopic: p.TargetTopic, Partition: p.Partition,
				SourceOffset: p.SourceOffset, TargetOffset: p.TargetOffset, Exact: p.Exact, MayReadAgain: p.MayReadAgain, MayBeLost: p.MayBeLost})
		}
		m.Groups = append(m.Groups, gm)
	}
	return m
}
