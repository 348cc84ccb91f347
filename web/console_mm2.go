package web

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/views"
)

// mm2Pages are MirrorMaker 2 adoption (a Connect cluster's MM2 page) and
// the mm2.properties import. The service decides who may act.
type mm2Pages struct{ s *Server }

func (h *mm2Pages) routes(g *echo.Group) {
	g.GET("/connect-clusters/:name/mm2", h.mm2Page)
	g.POST("/connect-clusters/:name/mm2/adopt", h.adoptMM2)
	g.GET("/dashboard/import-mm2", h.importMM2Page, h.s.requireRole(service.RoleOperator))
	g.POST("/dashboard/import-mm2", h.importMM2)
}

func (h *mm2Pages) mm2Page(c echo.Context) error {
	return h.renderMM2(c, http.StatusOK, views.AdoptForm{})
}

// renderMM2 shows the page, with form (a refused adoption) by its flow.
func (h *mm2Pages) renderMM2(c echo.Context, status int, form views.AdoptForm) error {
	ctx := c.Request().Context()
	name := c.Param("name")
	v := views.MM2View{ConnectCluster: name, Form: form}
	list, err := h.s.svc.ListAdoptable(ctx, name)
	if err != nil {
		e := service.AsError(err)
		if e.Code == service.CodeInternal || e.Code == service.CodeForbidden {
			return err
		}
		v.Message = e.Message // not found, or Connect away: said on the page
		if status == http.StatusOK {
			status = e.Code.HTTPStatus()
		}
	}
	v.Candidates = mm2Candidates(list)
	if v.Instances, err = h.s.instanceNames(ctx); err != nil {
		return err
	}
	if v.ConnectClusters, err = h.s.connectClusterNames(ctx); err != nil {
		return err
	}
	return Render(c, status, views.MM2Page(h.s.PageData(c, tr(c, "mm2.title", "Name", name), "/connect-clusters"), v))
}

// adoptFormInput is an adopt form as posted: the service's request.
type adoptFormInput struct {
	SourceConnector string `form:"source_connector"`
	Name            string `form:"name,trim"`
	Current         string `form:"current"`
	Engine          string `form:"engine"`
	Bidirectional   bool   `form:"bidirectional"`
}

// importMM2FormInput is the import form as posted: the service's request.
type importMM2FormInput struct {
	Properties string `form:"properties"`
	Flow       string `form:"flow,trim"`
	Name       string `form:"name,trim"`
	Current    string `form:"current"`
	Engine     string `form:"engine"`
	StartOver  bool   `form:"start_over"`
}

// adoptMM2 adopts one MM2 flow; a refusal shows the page again with the
// messages by the flow's form.
func (h *mm2Pages) adoptMM2(c echo.Context) error {
	var f adoptFormInput
	if err := decodeForm(c, &f); err != nil {
		return err
	}
	in := service.AdoptRequest(f)
	res, err := h.s.svc.AdoptMM2(c.Request().Context(), c.Param("name"), in)
	if err != nil {
		e := service.AsError(err)
		if e.Code == service.CodeInternal || e.Code == service.CodeForbidden {
			return err
		}
		form := views.AdoptForm{SourceConnector: in.SourceConnector, Name: in.Name, Current: in.Current, Engine: in.Engine,
			Bidirectional: in.Bidirectional, Errors: fieldErrors(e.Problems)}
		if len(e.Problems) == 0 {
			form.Message = e.Message
		}
		return h.renderMM2(c, e.Code.HTTPStatus(), form)
	}
	msg := tr(c, "mm2.adopted", "Name", res.Task.Name, "Partitions", fmt.Sprint(res.Partitions))
	banners := []views.Flash{{Kind: views.FlashSuccess, Message: msg}}
	if len(res.NotDeleted) > 0 {
		banners = append(banners, views.Flash{Kind: views.FlashError,
			Message: tr(c, "mm2.not_deleted", "Connectors", strings.Join(res.NotDeleted, "; "))})
	}
	h.s.flash(c, banners...)
	return Redirect(c, views.TaskPath(res.Task.Name, ""))
}

func (h *mm2Pages) importMM2Page(c echo.Context) error {
	f, err := h.importMM2Form(c, views.ImportMM2Form{})
	if err != nil {
		return err
	}
	return Render(c, http.StatusOK, views.ImportMM2Page(h.s.PageData(c, tr(c, "import_mm2.title"), "/dashboard"), f))
}

// importMM2Form fills the selects of the import form.
func (h *mm2Pages) importMM2Form(c echo.Context, f views.ImportMM2Form) (views.ImportMM2Form, error) {
	var err error
	if f.Instances, err = h.s.instanceNames(c.Request().Context()); err != nil {
		return f, err
	}
	f.ConnectClusters, err = h.s.connectClusterNames(c.Request().Context())
	return f, err
}

// importMM2 imports one flow of a pasted mm2.properties; a refusal shows
// the form again with the messages by field, secrets taken out.
func (h *mm2Pages) importMM2(c echo.Context) error {
	var f importMM2FormInput
	if err := decodeForm(c, &f); err != nil {
		return err
	}
	in := service.ImportRequest(f)
	res, err := h.s.svc.ImportMM2Properties(c.Request().Context(), in)
	if err != nil {
		e := service.AsError(err)
		if e.Code == service.CodeInternal || e.Code == service.CodeForbidden {
			return err
		}
		f := views.ImportMM2Form{Flow: in.Flow, Name: in.Name, Current: in.Current, Engine: in.Engine, StartOver: in.StartOver,
			Errors: fieldErrors(e.Problems)}
		f.Properties, f.SecretsRemoved = service.RedactedProperties(in.Properties)
		if len(e.Problems) == 0 {
			f.Message = e.Message
		}
		if f, err = h.importMM2Form(c, f); err != nil {
			return err
		}
		return Render(c, e.Code.HTTPStatus(), views.ImportMM2Page(h.s.PageData(c, tr(c, "import_mm2.title"), "/dashboard"), f))
	}
	h.s.flash(c, views.Flash{Kind: views.FlashSuccess,
		Message: tr(c, "import_mm2.imported", "Name", res.Task.Name, "Partitions", fmt.Sprint(res.Partitions))})
	return Redirect(c, views.TaskPath(res.Task.Name, ""))
}

// mm2Candidates are the page's rows for the service's candidates.
func mm2Candidates(cs []service.AdoptCandidate) []views.MM2Candidate {
	return viewsOf(cs, func(c service.AdoptCandidate) views.MM2Candidate {
		topics := strings.Join(c.Task.Rules.Topics, ", ")
		if c.Task.Rules.TopicsRegex != "" {
			topics = c.Task.Rules.TopicsRegex
		}
		return views.MM2Candidate{SourceConnector: c.Source, Flow: c.Flow,
			Connectors: strings.Join(c.Connectors, ", "), State: c.State, Direction: c.Task.Rules.Direction,
			Topics: topics, Problems: problemsView(c.Problems), Reverse: c.Reverse}
	})
}
