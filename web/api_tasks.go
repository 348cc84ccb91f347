package web

import (
	"context"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/task"
)

// taskList is the body of GET /api/v1/tasks.
type taskList struct {
	Tasks []service.TaskInfo `json:"tasks"`
}

func (s *Server) registerTaskAPI() {
	s.api.GET("/tasks", s.apiListTasks)
	s.api.POST("/tasks", s.apiCreateTask)
	s.api.POST("/tasks/validate", s.apiValidateTask)
	s.api.GET("/tasks/:name", s.apiGetTask)
	s.api.DELETE("/tasks/:name", s.apiDeleteTask)
	s.api.POST("/tasks/:name/pause", s.apiTaskAction((*service.Service).PauseTask))
	s.api.POST("/tasks/:name/resume", s.apiTaskAction((*service.Service).ResumeTask))
	s.api.POST("/tasks/:name/restart", s.apiTaskAction((*service.Service).RestartTask))
	s.api.POST("/tasks/:name/failover", s.apiFailover)
	s.api.POST("/tasks/:name/move", s.apiMoveTask)
	s.api.POST("/tasks/import-mm2", s.apiImportMM2)
	s.api.POST("/connectivity", s.apiConnectivity)
}

// moveRequest is the body of POST /api/v1/tasks/{name}/move.
type moveRequest struct {
	Engine string `json:"engine"`
}

// apiMoveTask moves a task to another engine, its progress handed over.
func (s *Server) apiMoveTask(c echo.Context) error {
	var in moveRequest
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	info, err := s.svc.MoveTask(c.Request().Context(), c.Param("name"), in.Engine)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, info)
}

// apiImportMM2 turns one flow of a dedicated MirrorMaker's mm2.properties
// into a task continuing from MirrorMaker's offsets.
func (s *Server) apiImportMM2(c echo.Context) error {
	var in service.ImportRequest
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	res, err := s.svc.ImportMM2Properties(c.Request().Context(), in)
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
func (s *Server) apiFailover(c echo.Context) error {
	var in failoverRequest
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	res, err := s.svc.Failover(c.Request().Context(), c.Param("name"), in.Group)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}

func (s *Server) apiListTasks(c echo.Context) error {
	list, err := s.svc.ListTasks(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, taskList{Tasks: list})
}

func (s *Server) apiGetTask(c echo.Context) error {
	info, err := s.svc.Task(c.Request().Context(), c.Param("name"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, info)
}

func (s *Server) apiCreateTask(c echo.Context) error {
	var in task.Task
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	info, err := s.svc.CreateTask(c.Request().Context(), in)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, "/api/v1/tasks/"+url.PathEscape(info.Name))
	return c.JSON(http.StatusCreated, info)
}

func (s *Server) apiDeleteTask(c echo.Context) error {
	if err := s.svc.DeleteTask(c.Request().Context(), c.Param("name")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// apiTaskAction answers pause, resume and restart with the task as it is
// afterwards.
func (s *Server) apiTaskAction(do func(*service.Service, context.Context, string) (service.TaskInfo, error)) echo.HandlerFunc {
	return func(c echo.Context) error {
		info, err := do(s.svc, c.Request().Context(), c.Param("name"))
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, info)
	}
}

// apiValidateTask is the dry run: 200 with ok, problems, warnings and the
// topic preview whenever the body is a task, valid or not.
func (s *Server) apiValidateTask(c echo.Context) error {
	var in task.Task
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	res, err := s.svc.ValidateTaskDryRun(c.Request().Context(), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}

// apiConnectivity answers 200 whether the check passed or not (/api/v1/openapi.json); a
// task whose connection fields are unusable is a 422.
func (s *Server) apiConnectivity(c echo.Context) error {
	var in task.Task
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	res, err := s.svc.Connectivity(c.Request().Context(), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}
