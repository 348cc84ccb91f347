package web

import "testing"

func TestLocalPathKeepsRedirectsOnSite(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/instances", "/instances"},
		{"/dashboard?q=a&b=%2F", "/dashboard?q=a&b=%2F"},
		{"/", "/"},
		{"", "/"},
		{"instances", "/"},
		{"//evil.example", "/"},
		{"///evil.example", "/"},
		{"https://evil.example/", "/"},
		{"/\\evil.example", "/"},
		{"\\/evil.example", "/"},
		{"/\t/evil.example", "/"}, // what /lang?next=/%09/evil.example decodes to
		{"/\t/x", "/"},
		{"/\n/evil.example", "/"},
		{"/\r/evil.example", "/"},
		{"/\x00/evil.example", "/"},
		{"/\x1f/x", "/"},
		{"/\x7f/x", "/"},
		{" //evil.example", "/"},
		{"/%09/evil.example", "/%09/evil.example"}, // still encoded: a path on this site
		{"javascript:alert(1)", "/"},
	} {
		if got := localPath(tc.in); got != tc.want {
			t.Errorf("localPath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
