// Package apiclient is a small client of kmirror's JSON API (its shapes: /api/v1/openapi.json) for
// the admin commands of the kmirror CLI. It speaks the API's shapes as raw
// JSON so the CLI can print them as they are (-o json) or as tables.
package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client calls one kmirror server.
type Client struct {
	// BaseURL is the server, like http://127.0.0.1:8080.
	BaseURL string
	// Token is the API's bearer token (KMIRROR_TOKEN).
	Token string
	HTTP  *http.Client
}

// New returns a Client with a timeout long enough for a connectivity check
// of two clusters.
func New(baseURL, token string) *Client {
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), Token: token, HTTP: &http.Client{Timeout: 2 * time.Minute}}
}

// Problem is one broken rule of an Error.
type Problem struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error is an error answer of the API.
type Error struct {
	Status   int
	Code     string    `json:"code"`
	Message  string    `json:"message"`
	Problems []Problem `json:"problems"`
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Message)
	if e.Code != "" {
		fmt.Fprintf(&b, " (%s)", e.Code)
	}
	for _, p := range e.Problems {
		fmt.Fprintf(&b, "\n  %s: %s", p.Field, p.Message)
	}
	return b.String()
}

// Do sends a request with an optional JSON body and returns the answer's
// body; a 4xx or 5xx answer is an *Error.
func (c *Client) Do(ctx context.Context, method, path string, body []byte) (json.RawMessage, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, r)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reach kmirror at %s: %w (is kmirror serve running? pass --server)", c.BaseURL, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("read answer of %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 400 {
		var eb struct {
			Error *Error `json:"error"`
		}
		if json.Unmarshal(raw, &eb) == nil && eb.Error != nil {
			eb.Error.Status = resp.StatusCode
			if resp.StatusCode == http.StatusUnauthorized {
				eb.Error.Message += " (set KMIRROR_TOKEN to the server's API token)"
			}
			return nil, eb.Error
		}
		return nil, &Error{Status: resp.StatusCode, Message: fmt.Sprintf("%s %s: %s", method, path, resp.Status)}
	}
	return raw, nil
}

// Path escapes a name for a URL path.
func Path(format string, names ...string) string {
	args := make([]any, len(names))
	for i, n := range names {
		args[i] = url.PathEscape(n)
	}
	return fmt.Sprintf(format, args...)
}
