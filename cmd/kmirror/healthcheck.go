package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"
)

// defaultHealthURL is where `kmirror serve` answers with its default
// --listen; the container image's HEALTHCHECK overrides it by flag.
const defaultHealthURL = "http://127.0.0.1:8080/healthz"

// healthcheckCommand is `kmirror healthcheck`: exit 0 when /healthz answers
// 200. It exists because a FROM scratch image has no curl or wget for a
// container HEALTHCHECK to call.
func healthcheckCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("kmirror healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	def := defaultHealthURL
	if u := getenv("KMIRROR_HEALTHCHECK_URL"); u != "" {
		def = u
	}
	url := fs.String("url", def, "health URL of the server to check (env KMIRROR_HEALTHCHECK_URL)")
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for the answer")
	insecure := fs.Bool("insecure", false, "skip TLS certificate verification (for a server checked over loopback with a certificate issued for its public name)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("healthcheck takes no arguments, got %q", fs.Args())
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
	if err != nil {
		return fmt.Errorf("health URL %q: %w", *url, err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if *insecure {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} // opt-in, for a loopback self-check
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return fmt.Errorf("health check: %w (is kmirror serve running and listening there?)", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health check: %s answered %s: %s", *url, resp.Status, body)
	}
	fmt.Fprintf(stdout, "%s\n", body)
	return nil
}
