package web

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"

	"github.com/labstack/echo/v4"
)

// decodeForm reads a posted console form (and the query, as FormValue
// does) into the struct dst points to, by each field's `form` tag: a
// string takes the input's first value as sent, or trimmed when the tag
// says ",trim"; a []string takes every value; a bool is a checkbox, true
// when its value is "true". Rules about the values are the service's: it
// answers with problems by field.
func decodeForm(c echo.Context, dst any) error {
	params, err := c.FormParams()
	if err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, "the form could not be read: "+err.Error()).SetInternal(err)
	}
	v := reflect.ValueOf(dst).Elem()
	t := v.Type()
	for i := range t.NumField() {
		name, opt, _ := strings.Cut(t.Field(i).Tag.Get("form"), ",")
		if name == "" {
			continue
		}
		values := params[name]
		first := ""
		if len(values) > 0 {
			first = values[0]
		}
		switch f := v.Field(i); f.Kind() {
		case reflect.String:
			if opt == "trim" {
				first = strings.TrimSpace(first)
			}
			f.SetString(first)
		case reflect.Bool:
			f.SetBool(first == "true")
		case reflect.Slice:
			f.Set(reflect.ValueOf(append([]string(nil), values...)))
		default:
			panic(fmt.Sprintf("decodeForm: field %s is a %s", t.Field(i).Name, f.Kind()))
		}
	}
	return nil
}
