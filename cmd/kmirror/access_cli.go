package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/kmirror/kmirror/internal/service"
)

const userUsage = `Usage:
  kmirror user list
  kmirror user add --name N --role viewer|operator|admin   (the password is read from standard input)
  kmirror user remove NAME

Flags of every command: --server URL (default http://127.0.0.1:8080), -o table|json.
The API token (an admin's) comes from KMIRROR_TOKEN.
`

const tokenUsage = `Usage:
  kmirror token list
  kmirror token create --name N --role viewer|operator|admin [--expires-in 720h]
                                   (prints the token: the only time it is shown)
  kmirror token revoke NAME

Flags of every command: --server URL (default http://127.0.0.1:8080), -o table|json.
The API token (an admin's) comes from KMIRROR_TOKEN.
`

// userCommand manages console users over the JSON API.
func userCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	sub, rest, err := subcommand(args, "user", userUsage, stderr)
	if sub == "" {
		return err
	}
	a := newAdminCmd("user "+sub, stderr, stdout, false)
	switch sub {
	case "list":
		if _, err := a.parse(rest, getenv); err != nil {
			return err
		}
		return a.call(ctx, http.MethodGet, "/api/v1/users", nil, namedRoleTable("users", "NAME\tROLE\tCREATED"))
	case "add":
		var name, role string
		a.fs.StringVar(&name, "name", "", "user name")
		a.fs.StringVar(&role, "role", "viewer", "viewer, operator or admin")
		if _, err := a.parse(rest, getenv); err != nil {
			return err
		}
		line, err := bufio.NewReader(io.LimitReader(stdin, 4096)).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read the password from standard input: %w", err)
		}
		body, err := json.Marshal(map[string]string{"name": name, "role": role, "password": strings.TrimRight(line, "\r\n")})
		if err != nil {
			return err
		}
		if _, err := a.client.Do(ctx, http.MethodPost, "/api/v1/users", body); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "user %s added as %s\n", name, role)
		return nil
	case "remove":
		return a.remove(ctx, rest, getenv, "user", "/api/v1/users/%s")
	default:
		fmt.Fprint(stderr, userUsage)
		return fmt.Errorf("unknown user command %q", sub)
	}
}

// tokenCommand manages API tokens over the JSON API.
func tokenCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	sub, rest, err := subcommand(args, "token", tokenUsage, stderr)
	if sub == "" {
		return err
	}
	a := newAdminCmd("token "+sub, stderr, stdout, false)
	switch sub {
	case "list":
		if _, err := a.parse(rest, getenv); err != nil {
			return err
		}
		return a.call(ctx, http.MethodGet, "/api/v1/tokens", nil, tokenTable)
	case "create":
		var name, role, expiresIn string
		a.fs.StringVar(&name, "name", "", "token name (who or what uses it)")
		a.fs.StringVar(&role, "role", "viewer", "viewer, operator or admin")
		a.fs.StringVar(&expiresIn, "expires-in", "", "how long it works, e.g. 720h; empty: until revoked (it always ends with the account that made it)")
		if _, err := a.parse(rest, getenv); err != nil {
			return err
		}
		body, err := json.Marshal(service.NewToken{Name: name, Role: service.Role(role), ExpiresIn: expiresIn})
		if err != nil {
			return err
		}
		raw, err := a.client.Do(ctx, http.MethodPost, "/api/v1/tokens", body)
		if err != nil {
			return err
		}
		return a.print(raw, func(w io.Writer, raw json.RawMessage) error {
			var t struct{ Token string }
			if err := json.Unmarshal(raw, &t); err != nil {
				return fmt.Errorf("decode answer: %w", err)
			}
			// The token alone on stdout, so it can be captured; the rest
			// for the reader.
			fmt.Fprintln(w, t.Token)
			return nil
		})
	case "revoke":
		return a.remove(ctx, rest, getenv, "token", "/api/v1/tokens/%s", "revoked")
	default:
		fmt.Fprint(stderr, tokenUsage)
		return fmt.Errorf("unknown token command %q", sub)
	}
}

// namedRoleTable prints {"<key>": [{"name", "role", "created_at"}]}.
func namedRoleTable(key, header string) func(io.Writer, json.RawMessage) error {
	return func(w io.Writer, raw json.RawMessage) error {
		var l map[string][]struct {
			Name      string `json:"name"`
			Role      string `json:"role"`
			CreatedAt string `json:"created_at"`
		}
		if err := json.Unmarshal(raw, &l); err != nil {
			return fmt.Errorf("decode answer: %w", err)
		}
		fmt.Fprintln(w, header)
		for _, r := range l[key] {
			fmt.Fprintf(w, "%s\t%s\t%s\n", r.Name, r.Role, r.CreatedAt)
		}
		return nil
	}
}

// tokenTable prints GET /api/v1/tokens: who owns each token, when it ends
// and when it was last used.
func tokenTable(w io.Writer, raw json.RawMessage) error {
	var l struct{ Tokens []service.TokenInfo }
	if err := json.Unmarshal(raw, &l); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	when := func(t *time.Time, none string) string {
		if t == nil {
			return none
		}
		return t.UTC().Format(time.RFC3339)
	}
	fmt.Fprintln(w, "NAME\tROLE\tOWNER\tCREATED\tEXPIRES\tLAST USED")
	for _, t := range l.Tokens {
		owner := t.Owner
		if owner == "" {
			owner = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, t.Role, owner, t.CreatedAt.UTC().Format(time.RFC3339),
			when(t.ExpiresAt, "never"), when(t.LastUsedAt, "never"))
	}
	return nil
}
