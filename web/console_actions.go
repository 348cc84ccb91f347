package web

import (
	"github.com/labstack/echo/v4"

	"github.com/kmirror/kmirror/views"
)

// taskActionDone lists the actions the console offers on a task, each with
// the id of the banner shown after it. The Smart Connect list and the task
// page both act through runTaskAction.
var taskActionDone = map[string]string{
	views.ActionPause:   "action.done.pause",
	views.ActionResume:  "action.done.resume",
	views.ActionRestart: "action.done.restart",
	views.ActionReapply: "action.done.reapply",
	views.ActionDelete:  "action.done.delete",
}

// runTaskAction pauses, resumes, restarts or deletes a task for the
// signed-in user and returns the banner saying so. ok is false for an
// action the console does not offer.
func (s *Server) runTaskAction(c echo.Context, name, action string) (done string, ok bool, err error) {
	id, ok := taskActionDone[action]
	if !ok {
		return "", false, nil
	}
	ctx := c.Request().Context()
	switch action {
	case views.ActionPause:
		_, err = s.svc.PauseTask(ctx, name)
	case views.ActionResume:
		_, err = s.svc.ResumeTask(ctx, name)
	case views.ActionRestart:
		_, err = s.svc.RestartTask(ctx, name)
	case views.ActionReapply:
		_, err = s.svc.ReapplyTask(ctx, name)
	case views.ActionDelete:
		err = s.svc.DeleteTask(ctx, name) // its charts go with it (New wires the history)
	}
	return tr(c, id, "Name", name), true, err
}
