package views_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/kmirror/kmirror/views"
)

func TestInstancesPage(t *testing.T) {
	p := views.Page{Title: "Instances", CSRF: "tok", User: "admin",
		Nav:     []views.NavItem{{Label: "Instances", Href: "/instances", Active: true, TestID: "nav-instances"}},
		Flashes: []views.Flash{{Kind: views.FlashSuccess, Message: "Instance east added."}}}
	clusters := []views.ClusterInfo{{Name: "east", BootstrapServers: []string{"a:1", "b:2"}, SecurityProtocol: "SASL_SSL",
		SASLMechanism: "PLAIN", Username: "u", PasswordSet: true, TasksUsed: 3, TasksLimit: 18}}
	form := views.ClusterForm{Name: "<x>", Errors: views.FieldErrors{"name": {"bad name"}}}
	var buf bytes.Buffer
	if err := views.Instances(p, clusters, form).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	by := func(id string) *goquery.Selection { return doc.Find(`[data-testid="` + id + `"]`) }
	if got := by("cluster-tasks").Text(); got != "3 / 18" {
		t.Errorf("tasks %q", got)
	}
	if got := by("cluster-bootstrap").Text(); got != "a:1, b:2" {
		t.Errorf("bootstrap %q", got)
	}
	if got := by("flash-success").Text(); got != "Instance east added." {
		t.Errorf("flash %q", got)
	}
	if got := by("error-name").Text(); got != "bad name" {
		t.Errorf("field error %q", got)
	}
	if v, _ := doc.Find("#name").Attr("value"); v != "<x>" {
		t.Errorf("typed name not kept (escaped): %q", v)
	}
	if !by("nav-instances").HasClass("active") {
		t.Error("active nav entry not marked")
	}
	if n := doc.Find(`input[name="_csrf"]`).Length(); n < 3 {
		t.Errorf("%d forms carry _csrf, want sign-out, remove and add", n)
	}
}

func TestSignInPageHasNoNavigation(t *testing.T) {
	var buf bytes.Buffer
	if err := views.SignIn(views.Page{Title: "Sign in", CSRF: "tok"}, views.SignInForm{Error: "wrong"}).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Find(`[data-testid="sidenav"]`).Length() != 0 || doc.Find(`[data-testid="signout"]`).Length() != 0 {
		t.Error("sign-in page shows navigation or sign-out")
	}
	if doc.Find(`[data-testid="signin-error"]`).Text() != "wrong" {
		t.Error("error not shown")
	}
}
