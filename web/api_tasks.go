package web

import (
	"context"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/switchover"
	"github.com/kmirror/kmirror/internal/task"
)

// taskList is the body of GET /api/v1/tasks.
type taskList struct {
	Tasks []service.TaskInfo `json:"tasks"`
}

// tasksAPI are the tasks: create (or only validate), list, show, act on,
// fail over, move between engines, import from MirrorMaker 2, and the
// connectivity check of a task's clusters.
type tasksAPI struct{ s *Server }

func (h *tasksAPI) routes(g *echo.Group) {
	g.GET("/tasks", h.apiListTasks)
	g.POST("/tasks", h.apiCreateTask)
	g.POST("/tasks/validate", h.apiValidateTask)
	g.GET("/tasks/:name", h.apiGetTask)
	g.DELETE("/tasks/:name", h.apiDeleteTask)
	g.POST("/tasks/:name/pause", h.apiTaskAction((*service.Service).PauseTask))
	g.POST("/tasks/:name/resume", h.apiTaskAction((*service.Service).ResumeTask))
	g.POST("/tasks/:name/restart", h.apiTaskAction((*service.Service).RestartTask))
	g.POST("/tasks/:name/reapply", h.apiTaskAction((*service.Service).ReapplyTask))
	g.POST("/tasks/:name/failover", h.apiFailover)
	g.POST("/tasks/:name/switchover", h.apiStartSwitchover)
	g.GET("/tasks/:name/switchover", h.apiGetSwitchover)
	g.POST("/tasks/:name/failback", h.apiPrepareFailback)
	g.POST("/tasks/:name/move", h.apiMoveTask)
	g.POST("/tasks/import-mm2", h.apiImportMM2)
	g.POST("/connectivity", h.apiConnectivity)
}

// moveRequest is the body of POST /api/v1/tasks/{name}/move.
type moveRequest struct {
	Engine string `json:"engine"`
}

// apiMoveTask moves a task to another engine, its progress handed over.
func (h *tasksAPI) apiMoveTask(c echo.Context) error {
	var in moveRequest
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	info, err := h.s.svc.MoveTask(c.Request().Context(), c.Param("name"), in.Engine)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, info)
}

// apiImportMM2 turns one flow of a dedicated MirrorMaker's mm2.properties
// into a task continuing from MirrorMaker's offsets.
func (h *tasksAPI) apiImportMM2(c echo.Context) error {
	var in service.ImportRequest
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	res, err := h.s.svc.ImportMM2Properties(c.Request().Context(), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, res)
}

// failoverRequest is the body of POST /api/v1/tasks/{name}/failover.
type failoverRequest struct {
	Group string `json:"group"`
}

// apiFailover translates one group's offsets and commits them to the target
// now (the failover helper).
func (h *tasksAPI) apiFailover(c echo.Context) error {
	var in failoverRequest
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	res, err := h.s.svc.Failover(c.Request().Context(), c.Param("name"), in.Group)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}

// apiStartSwitchover starts a switchover of the task (docs/SWITCHOVER.md)
// and answers it with its first step worked.
func (h *tasksAPI) apiStartSwitchover(c echo.Context) error {
	var in switchover.Request
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	sw, err := h.s.svc.StartSwitchover(c.Request().Context(), c.Param("name"), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, sw)
}

// apiPrepareFailback prepares the way back after the task's switchover and
// answers that switchover with its failback.
func (h *tasksAPI) apiPrepareFailback(c echo.Context) error {
	sw, err := h.s.svc.PrepareFailback(c.Request().Context(), c.Param("name"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, sw)
}

// apiGetSwitchover answers the task's newest switchover.
func (h *tasksAPI) apiGetSwitchover(c echo.Context) error {
	sw, err := h.s.svc.Switchover(c.Request().Context(), c.Param("name"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, sw)
}

func (h *tasksAPI) apiListTasks(c echo.Context) error {
	list, err := h.s.svc.ListTasks(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, taskList{Tasks: list})
}

func (h *tasksAPI) apiGetTask(c echo.Context) error {
	info, err := h.s.svc.Task(c.Request().Context(), c.Param("name"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, info)
}

func (h *tasksAPI) apiCreateTask(c echo.Context) error {
	var in task.Task
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	info, err := h.s.svc.CreateTask(c.Request().Context(), in)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, "/api/v1/tasks/"+url.PathEscape(info.Name))
	return c.JSON(http.StatusCreated, info)
}

func (h *tasksAPI) apiDeleteTask(c echo.Context) error {
	if err := h.s.svc.DeleteTask(c.Request().Context(), c.Param("name")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// apiTaskAction answers pause, resume and restart with the task as it is
// afterwards.
func (h *tasksAPI) apiTaskAction(do func(*service.Service, context.Context, string) (service.TaskInfo, error)) echo.HandlerFunc {
	return func(c echo.Context) error {
		info, err := do(h.s.svc, c.Request().Context(), c.Param("name"))
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, info)
	}
}

// apiValidateTask is the dry run: 200 with ok, problems, warnings and the
// topic preview whenever the body is a task, valid or not.
func (h *tasksAPI) apiValidateTask(c echo.Context) error {
	var in task.Task
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	res, err := h.s.svc.ValidateTaskDryRun(c.Request().Context(), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}

// apiConnectivity answers 200 whether the check passed or not (/api/v1/openapi.json); a
// task whose connection fields are unusable is a 422.
func (h *tasksAPI) apiConnectivity(c echo.Context) error {
	var in task.Task
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	res, err := h.s.svc.Connectivity(c.Request().Context(), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}
