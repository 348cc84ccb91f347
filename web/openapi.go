package web

import (
	"net/http"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/switchover"
	"github.com/kmirror/kmirror/internal/task"
)

// apiOp documents one JSON API route. The OpenAPI document is generated
// from this table and from the Go types the handlers read and write, so the
// schemas cannot drift from the code; a test checks that the table and the
// router list the same routes.
type apiOp struct {
	method, path string // echo's path syntax (:name)
	summary      string
	request      any // a value of the body type, or nil
	status       int // on success
	response     any // a value of the answer type, or nil for no body
	errors       []int
	public       bool // no bearer token needed
}

var apiOps = []apiOp{
	{method: http.MethodGet, path: "/api/v1/clusters", summary: "List registered clusters (instances)", status: 200, response: clusterList{}, errors: []int{401}},
	{method: http.MethodPost, path: "/api/v1/clusters", summary: "Register a cluster", request: cluster.Settings{}, status: 201, response: service.ClusterInfo{}, errors: []int{400, 401, 403, 422}},
	{method: http.MethodGet, path: "/api/v1/clusters/:name", summary: "Show a registered cluster (never its password)", status: 200, response: service.ClusterInfo{}, errors: []int{401, 404}},
	{method: http.MethodDelete, path: "/api/v1/clusters/:name", summary: "Remove a cluster no task uses", status: 204, errors: []int{401, 403, 404, 409}},
	{method: http.MethodPut, path: "/api/v1/clusters/:name/smart-connect", summary: "Enable or disable Smart Connect on a cluster and choose the engine its new tasks run on (embedded or connect:<name>)", request: service.SmartConnect{}, status: 200, response: service.ClusterInfo{}, errors: []int{400, 401, 403, 404, 422}},
	{method: http.MethodGet, path: "/api/v1/connect-clusters", summary: "List registered Kafka Connect clusters", status: 200, response: connectClusterList{}, errors: []int{401}},
	{method: http.MethodPost, path: "/api/v1/connect-clusters", summary: "Register a Kafka Connect cluster (REST URLs, optional basic auth or bearer token, client certificate and CA, the Kafka cluster its workers write to)", request: service.ConnectClusterSettings{}, status: 201, response: service.ConnectClusterInfo{}, errors: []int{400, 401, 403, 422}},
	{method: http.MethodGet, path: "/api/v1/connect-clusters/:name", summary: "Show a registered Kafka Connect cluster (never its password, client key or bearer token, only whether each is set)", status: 200, response: service.ConnectClusterInfo{}, errors: []int{401, 404}},
	{method: http.MethodDelete, path: "/api/v1/connect-clusters/:name", summary: "Remove a Kafka Connect cluster no task runs on", status: 204, errors: []int{401, 403, 404, 409}},
	{method: http.MethodPost, path: "/api/v1/connect-clusters/:name/check", summary: "Check whether kmirror can run tasks on a Kafka Connect cluster: each worker answers, the MirrorMaker 2 connectors are installed, connectors may set their own client settings; each verdict says what to do when it fails; 200 whether the check passed or not", status: 200, response: service.ConnectClusterCheck{}, errors: []int{401, 403, 404}},

	{method: http.MethodGet, path: "/api/v1/connect-clusters/:name/mm2", summary: "List the MirrorMaker 2 connectors on a Kafka Connect cluster that kmirror did not create, by flow, each with the task adopting it would create and the MM2 settings that keep it from being adopted", status: 200, response: adoptableList{}, errors: []int{401, 403, 404}},
	{method: http.MethodPost, path: "/api/v1/connect-clusters/:name/mm2/adopt", summary: "Adopt MirrorMaker 2 connectors as a kmirror task without copying again: the task is checked as on create, the MM2 connectors are stopped, their offsets handed to the task's engine, the task started and the MM2 connectors deleted (listed in the answer); 502 adopt_failed names the step that failed, the MM2 connectors running on", request: service.AdoptRequest{}, status: 201, response: service.AdoptResult{}, errors: []int{400, 401, 403, 404, 422, 502}},

	{method: http.MethodGet, path: "/api/v1/tasks", summary: "List Smart Connect tasks with their status", status: 200, response: taskList{}, errors: []int{401}},
	{method: http.MethodPost, path: "/api/v1/tasks", summary: "Create a task and start it; every broken rule is reported at once", request: task.Task{}, status: 201, response: service.TaskInfo{}, errors: []int{400, 401, 403, 422}},
	{method: http.MethodPost, path: "/api/v1/tasks/validate", summary: "Dry run: every problem, warnings, and the topics each flow would replicate with their target names (200 whether valid or not)", request: task.Task{}, status: 200, response: service.ValidationResult{}, errors: []int{400, 401, 403}},
	{method: http.MethodGet, path: "/api/v1/tasks/:name", summary: "Show a task (the peer password never, only password_set) and its status", status: 200, response: service.TaskInfo{}, errors: []int{401, 404}},
	{method: http.MethodDelete, path: "/api/v1/tasks/:name", summary: "Stop a task gracefully and delete it", status: 204, errors: []int{401, 403, 404}},
	{method: http.MethodPost, path: "/api/v1/tasks/:name/pause", summary: "Stop a task gracefully and keep it stopped", status: 200, response: service.TaskInfo{}, errors: []int{401, 403, 404}},
	{method: http.MethodPost, path: "/api/v1/tasks/:name/resume", summary: "Start a paused task from its committed progress", status: 200, response: service.TaskInfo{}, errors: []int{401, 403, 404}},
	{method: http.MethodPost, path: "/api/v1/tasks/:name/restart", summary: "Stop and start a task, clearing partitions that failed for good", status: 200, response: service.TaskInfo{}, errors: []int{401, 403, 404}},
	{method: http.MethodPost, path: "/api/v1/tasks/:name/reapply", summary: "Write kmirror's configuration again over connectors of a task on Kafka Connect that were changed outside kmirror (DRIFTED); the others are left running as they are", status: 200, response: service.TaskInfo{}, errors: []int{400, 401, 403, 404}},
	{method: http.MethodPost, path: "/api/v1/tasks/:name/switchover", summary: "Start a switchover of the task (docs/SWITCHOVER.md): preflight, producers stopped, drain, every selected group translated and committed on the target; answered with its first step worked, then carried on in the background (one open switchover per task)", request: switchover.Request{}, status: 201, response: switchover.Switchover{}, errors: []int{400, 401, 403, 404}},
	{method: http.MethodPost, path: "/api/v1/tasks/:name/failback", summary: "Prepare the way back after the task's done switchover (push tasks with the source header): the task also copies back what is written on the target from the switchover point on and translates groups back; a planned switchover in the reverse direction then moves everyone home", status: 200, response: switchover.Switchover{}, errors: []int{400, 401, 403, 404}},
	{method: http.MethodGet, path: "/api/v1/tasks/:name/switchover", summary: "The task's newest switchover: its state, steps and report per group and partition", status: 200, response: switchover.Switchover{}, errors: []int{401, 403, 404}},
	{method: http.MethodPost, path: "/api/v1/tasks/:name/failover", summary: "Translate one consumer group's offsets and commit them to the target now, so its consumers can move there without missing a record (task must sync consumer offsets; groups active on the target are left alone)", request: failoverRequest{}, status: 200, response: service.FailoverResult{}, errors: []int{400, 401, 403, 404}},
	{method: http.MethodPost, path: "/api/v1/tasks/:name/move", summary: "Move a task to another engine (\"embedded\" or \"connect:<name>\") without copying again: it stops where it runs, its progress is handed over, it starts on the new engine if it ran; 502 move_failed names the step that failed, the task staying where it was", request: moveRequest{}, status: 200, response: service.TaskInfo{}, errors: []int{400, 401, 403, 404, 422, 502}},
	{method: http.MethodPost, path: "/api/v1/tasks/import-mm2", summary: "Import one flow of a dedicated MirrorMaker 2 (its mm2.properties text) as a task that continues from MirrorMaker's offsets (stop MirrorMaker first); every setting is mapped or a problem naming it", request: service.ImportRequest{}, status: 201, response: service.ImportResult{}, errors: []int{400, 401, 403, 422, 502}},
	{method: http.MethodPost, path: "/api/v1/connectivity", summary: "Check both clusters of a task step by step (tcp, tls, sasl, metadata, permissions); 200 whether the check passed or not", request: task.Task{}, status: 200, response: service.ConnectivityResult{}, errors: []int{400, 401, 403, 422}},
	{method: http.MethodGet, path: "/api/v1/users", summary: "List console users (admin)", status: 200, response: userList{}, errors: []int{401, 403}},
	{method: http.MethodPost, path: "/api/v1/users", summary: "Add a console user with a role: viewer, operator or admin (admin)", request: service.NewUser{}, status: 201, response: service.UserInfo{}, errors: []int{400, 401, 403, 422}},
	{method: http.MethodPatch, path: "/api/v1/users/:name", summary: "Change a user's role and/or reset their password (which ends their sessions); not the last admin's role (admin)", request: service.UserChange{}, status: 200, response: service.UserInfo{}, errors: []int{400, 401, 403, 404, 422}},
	{method: http.MethodDelete, path: "/api/v1/users/:name", summary: "Remove a console user and end their sessions; not the last admin (admin)", status: 204, errors: []int{400, 401, 403, 404}},
	{method: http.MethodGet, path: "/api/v1/tokens", summary: "List API tokens, never the tokens themselves (admin)", status: 200, response: tokenList{}, errors: []int{401, 403}},
	{method: http.MethodPost, path: "/api/v1/tokens", summary: "Make an API token with a role; the answer is the only time the token is shown (admin)", request: service.NewToken{}, status: 201, response: service.CreatedToken{}, errors: []int{400, 401, 403, 422}},
	{method: http.MethodDelete, path: "/api/v1/tokens/:name", summary: "Revoke an API token at once (admin)", status: 204, errors: []int{401, 403, 404}},
	{method: http.MethodGet, path: "/api/v1/audit", summary: "Audit log of changes and sign-ins, newest first; query actor, action and outcome (prefixes), before (id), limit (admin)", status: 200, response: auditList{}, errors: []int{401, 403}},
	{method: http.MethodGet, path: "/api/v1/audit/export", summary: "The whole audit log (same filters) as JSON lines, application/x-ndjson (admin)", status: 200, response: service.AuditEntry{}, errors: []int{401, 403}},
	{method: http.MethodGet, path: "/api/v1/destination-policy", summary: "Which Kafka addresses operators may give as a task's peer: any, registered instances only, or also addresses inside networks", status: 200, response: service.DestinationPolicy{}, errors: []int{401}},
	{method: http.MethodPut, path: "/api/v1/destination-policy", summary: "Set the destination policy; audited (admin)", request: service.DestinationPolicy{}, status: 200, response: service.DestinationPolicy{}, errors: []int{400, 401, 403}},
	{method: http.MethodGet, path: "/api/v1/openapi.json", summary: "This document", status: 200, response: map[string]any{}, public: true},
}

var (
	openAPIOnce sync.Once
	openAPIDoc  map[string]any
)

func (s *Server) openAPI(c echo.Context) error {
	openAPIOnce.Do(func() { openAPIDoc = buildOpenAPI(apiOps) })
	return c.JSON(http.StatusOK, openAPIDoc)
}

// buildOpenAPI makes an OpenAPI 3.0 document of ops.
func buildOpenAPI(ops []apiOp) map[string]any {
	g := &schemaGen{schemas: map[string]any{}, names: map[reflect.Type]string{}}
	errRef := g.schema(reflect.TypeOf(apiErrorBody{}))
	paths := map[string]any{}
	for _, op := range ops {
		path, params := openAPIPath(op.path)
		item, _ := paths[path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[path] = item
		}
		o := map[string]any{"summary": op.summary, "operationId": operationID(op)}
		if len(params) > 0 {
			var ps []any
			for _, p := range params {
				ps = append(ps, map[string]any{"name": p, "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
			}
			o["parameters"] = ps
		}
		if op.request != nil {
			o["requestBody"] = map[string]any{"required": true, "content": map[string]any{
				"application/json": map[string]any{"schema": g.schema(reflect.TypeOf(op.request))}}}
		}
		resp := map[string]any{}
		ok := map[string]any{"description": http.StatusText(op.status)}
		if op.response != nil {
			ok["content"] = map[string]any{"application/json": map[string]any{"schema": g.schema(reflect.TypeOf(op.response))}}
		}
		resp[strconv.Itoa(op.status)] = ok
		for _, code := range op.errors {
			resp[strconv.Itoa(code)] = map[string]any{"description": http.StatusText(code),
				"content": map[string]any{"application/json": map[string]any{"schema": errRef}}}
		}
		o["responses"] = resp
		if op.public {
			o["security"] = []any{}
		}
		item[strings.ToLower(op.method)] = o
	}
	return map[string]any{
		"openapi": "3.0.3",
		"info": map[string]any{"title": "kmirror API", "version": "1",
			"description": "Registered Kafka clusters and Smart Connect tasks replicating between them. Errors are " +
				"{\"error\": {\"code\", \"message\", \"problems\": [{\"field\", \"message\"}]}} with a stable code."},
		"paths":    paths,
		"security": []any{map[string]any{"bearer": []any{}}},
		"components": map[string]any{
			"schemas":         g.schemas,
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}},
		},
	}
}

// openAPIPath turns /tasks/:name into /tasks/{name} and lists the params.
func openAPIPath(p string) (string, []string) {
	parts := strings.Split(p, "/")
	var params []string
	for i, s := range parts {
		if strings.HasPrefix(s, ":") {
			params = append(params, s[1:])
			parts[i] = "{" + s[1:] + "}"
		}
	}
	return strings.Join(parts, "/"), params
}

func operationID(op apiOp) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(op.method))
	for _, s := range strings.FieldsFunc(strings.TrimPrefix(op.path, "/api/v1"), func(r rune) bool { return r == '/' || r == '.' || r == ':' }) {
		b.WriteString(strings.ToUpper(s[:1]) + s[1:])
	}
	return b.String()
}

// schemaGen derives JSON schemas from Go types as encoding/json sees them:
// named structs become components, fields take their json names, and a field
// without omitempty is required.
type schemaGen struct {
	schemas map[string]any
	names   map[reflect.Type]string
}

// schemaNames overrides names that would be ambiguous in the document.
var schemaNames = map[reflect.Type]string{
	reflect.TypeOf(cluster.Settings{}): "ClusterSettings",
	reflect.TypeOf(apiErrorBody{}):     "ErrorBody",
	reflect.TypeOf(apiError{}):         "Error",
}

var timeType = reflect.TypeOf(time.Time{})

func (g *schemaGen) schema(t reflect.Type) map[string]any {
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t.Kind() == reflect.Pointer:
		return g.schema(t.Elem())
	}
	switch t.Kind() {
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "format": "byte"}
		}
		return map[string]any{"type": "array", "items": g.schema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.schema(t.Elem())}
	case reflect.Struct:
		name := schemaNames[t]
		if name == "" {
			name = t.Name()
		}
		if name == "" {
			return g.object(t)
		}
		if _, done := g.names[t]; !done {
			g.names[t] = name
			g.schemas[name] = map[string]any{} // placeholder against recursion
			g.schemas[name] = g.object(t)
		}
		return map[string]any{"$ref": "#/components/schemas/" + name}
	default:
		return map[string]any{}
	}
}

func (g *schemaGen) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []string
	g.fields(t, props, &required)
	o := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

func (g *schemaGen) fields(t reflect.Type, props map[string]any, required *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				g.fields(ft, props, required)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		props[name] = g.schema(f.Type)
		if !strings.Contains(opts, "omitempty") {
			*required = append(*required, name)
		}
	}
}

// APIRoutes lists the router's JSON API routes as "METHOD /api/v1/path",
// with OpenAPI's {param} syntax, sorted.
func (s *Server) APIRoutes() []string {
	var out []string
	for _, r := range s.e.Routes() {
		if !strings.HasPrefix(r.Path, "/api/v1/") {
			continue
		}
		switch r.Method {
		case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		default:
			continue // echo's not-found catch-alls of the group
		}
		p, _ := openAPIPath(r.Path)
		out = append(out, r.Method+" "+p)
	}
	sort.Strings(out)
	return out
}
