package web

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

func TestDecodeForm(t *testing.T) {
	type input struct {
		Name     string   `form:"name,trim"`
		Password string   `form:"password"`
		On       bool     `form:"on"`
		Rows     []string `form:"row"`
		Ignored  string
	}
	for _, tc := range []struct {
		name string
		form url.Values
		want input
	}{
		{name: "empty", form: url.Values{}, want: input{}},
		{name: "trimmed only when the tag says so", form: url.Values{"name": {"  east "}, "password": {" secret "}},
			want: input{Name: "east", Password: " secret "}},
		{name: "a checkbox is true only as true", form: url.Values{"on": {"on"}}, want: input{}},
		{name: "checked", form: url.Values{"on": {"true"}}, want: input{On: true}},
		{name: "every value of a list, the first of a string", form: url.Values{"row": {"a", "", "b"}, "name": {"x", "y"}},
			want: input{Name: "x", Rows: []string{"a", "", "b"}}},
		{name: "untagged fields are left alone", form: url.Values{"Ignored": {"x"}}, want: input{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tc.form.Encode()))
			req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationForm)
			c := echo.New().NewContext(req, httptest.NewRecorder())
			var got input
			if err := decodeForm(c, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
