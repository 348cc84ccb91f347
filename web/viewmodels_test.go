package web

import (
	"reflect"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/history"
	"github.com/kmirror/kmirror/internal/service"
)

// fill sets every field reachable from v to a non-zero value: a string
// "x", a number 1, true, a slice of one filled element, a filled pointee.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0))
		v.Set(s)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem())
		v.Set(p)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Unix(1, 0)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	default:
		// Left zero: zeroFields reports it if a view model copies one.
	}
}

func filled[T any]() T {
	var v T
	fill(reflect.ValueOf(&v).Elem())
	return v
}

// zeroFields lists the paths of the fields left zero in v.
func zeroFields(v reflect.Value, path string) []string {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			if v.Interface().(time.Time).IsZero() {
				return []string{path}
			}
			return nil
		}
		var out []string
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				out = append(out, zeroFields(v.Field(i), path+"."+v.Type().Field(i).Name)...)
			}
		}
		return out
	case reflect.Slice, reflect.Pointer:
		if v.IsNil() {
			return []string{path}
		}
		if v.Kind() == reflect.Pointer {
			return zeroFields(v.Elem(), path)
		}
		var out []string
		for i := range v.Len() {
			out = append(out, zeroFields(v.Index(i), path)...)
		}
		return out
	case reflect.Interface:
		if v.IsNil() {
			return []string{path}
		}
		return nil
	default:
		if v.IsZero() {
			return []string{path}
		}
		return nil
	}
}

// The view models carry everything the service's answers give them: a
// field added to a view model but not copied here shows up.
func TestViewModelsCopyEveryField(t *testing.T) {
	for _, tc := range []struct {
		name string
		view any
		// zero are the fields left empty on purpose.
		zero []string
	}{
		// The peer's secrets are never rendered.
		{name: "task", view: taskModel(filled[service.TaskInfo]()), zero: []string{".Peer.Peer.Password", ".Peer.Peer.ClientKeyPEM", ".Peer.Peer.ClientKeyPassword"}},
		{name: "task page", view: taskPageModel(filled[service.TaskInfo](), filled[history.TaskSeries]()),
			// MoveTo, CertWarnings and Switchover: by the handler, for the
			// caller, the task's clusters and its newest switchover.
			zero: []string{".Task.Peer.Peer.Password", ".Task.Peer.Peer.ClientKeyPEM", ".Task.Peer.Peer.ClientKeyPassword", ".CertWarnings", ".MoveTo", ".Switchover"}},
		{name: "problems", view: problemsView(filled[service.Problems]())},
		{name: "preview", view: previewView(filled[[]service.FlowPreview]())},
		{name: "connectivity", view: connectivityView(filled[service.ConnectivityResult]())},
		{name: "cluster", view: clusterView(filled[service.ClusterInfo]())},
		{name: "health", view: healthView(filled[service.ClusterHealth]())},
		{name: "connect clusters", view: connectClusterViews(filled[[]service.ConnectClusterInfo]())},
		{name: "users", view: userViews(filled[[]service.UserInfo]())},
		{name: "tokens", view: tokenViews(filled[[]service.TokenInfo]())},
		{name: "audit", view: auditViews(filled[[]service.AuditEntry]())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := zeroFields(reflect.ValueOf(tc.view), "")
			if !reflect.DeepEqual(got, tc.zero) {
				t.Errorf("fields left empty: %v, want %v", got, tc.zero)
			}
		})
	}
}
