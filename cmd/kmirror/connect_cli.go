package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/kmirror/kmirror/internal/service"
)

const connectUsage = `Usage:
  kmirror connect-cluster add -f connect.json     register a Kafka Connect cluster (API shape of POST /api/v1/connect-clusters)
  kmirror connect-cluster add --name N --url http://h:8083[,http://h2:8083] --kafka-cluster K
                                                  [--username U --ca-file F --config-provider P]
                                                  [--client-cert-file F --client-key-file F] [--bearer-token-file F]
                                                  (the basic-auth password comes from KMIRROR_CONNECT_PASSWORD, never a flag;
                                                  the client key from its file or KMIRROR_CONNECT_CLIENT_KEY, the bearer token
                                                  from its file or KMIRROR_CONNECT_BEARER_TOKEN)
  kmirror connect-cluster list
  kmirror connect-cluster show NAME
  kmirror connect-cluster remove NAME
  kmirror connect-cluster check NAME              can kmirror run tasks on it? each verdict and what to do; exit status 1 when not
  kmirror connect-cluster mm2 NAME                the MirrorMaker 2 connectors on it kmirror did not create, the task each would
                                                  become and what keeps it from being adopted
  kmirror connect-cluster adopt NAME --connector C --task T [--current INSTANCE] [--engine embedded|connect:<name>] [--bidirectional]
                                                  replace MM2 source connector C (with its checkpoint and heartbeat connectors)
                                                  by task T, going on from C's offsets; the MM2 connectors are deleted;
                                                  --bidirectional: C's reverse (REVERSE in mm2) too, as one bidirectional task
  kmirror instance smart-connect NAME --enable|--disable [--engine embedded|connect:<name>]

Flags of every command: --server URL (default http://127.0.0.1:8080), -o table|json.
The API token comes from KMIRROR_TOKEN.
`

func connectClusterCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	sub, rest, err := subcommand(args, "connect-cluster", connectUsage, stderr)
	if sub == "" {
		return err
	}
	a := newAdminCmd("connect-cluster "+sub, stderr, stdout, sub == "add")
	switch sub {
	case "add":
		var in service.ConnectClusterSettings
		var urls, caFile, certFile, keyFile, tokenFile string
		a.fs.StringVar(&in.Name, "name", "", "Connect cluster name")
		a.fs.StringVar(&urls, "url", "", "REST URLs of its workers, comma-separated")
		a.fs.StringVar(&in.KafkaCluster, "kafka-cluster", "", "the registered Kafka cluster (instance) its workers write to")
		a.fs.StringVar(&in.Username, "username", "", "basic-auth user name")
		a.fs.StringVar(&caFile, "ca-file", "", "PEM file of the CA that signed the workers' REST certificates")
		a.fs.StringVar(&certFile, "client-cert-file", "", "PEM file of the client certificate presented to https workers (its chain may follow it)")
		a.fs.StringVar(&keyFile, "client-key-file", "", "PEM file of the client certificate's private key (PKCS#8, PKCS#1 or EC; or KMIRROR_CONNECT_CLIENT_KEY)")
		a.fs.StringVar(&tokenFile, "bearer-token-file", "", "file holding the bearer token sent as Authorization: Bearer (or KMIRROR_CONNECT_BEARER_TOKEN)")
		a.fs.BoolVar(&in.AutoRestart, "auto-restart", false, "restart the failed connectors and tasks of kmirror's tasks there automatically, with back-off")
		a.fs.StringVar(&in.ConfigProvider, "config-provider", "", "a config provider the workers define, for secret references: its name, or a reference with its path and %s for the key, e.g. '${file:/etc/kmirror/kafka.properties:%s}'")
		if _, err := a.parse(rest, getenv); err != nil {
			return err
		}
		body, err := a.bodyOr(func() (any, error) {
			if urls != "" {
				in.URLs = strings.Split(urls, ",")
			}
			in.Password = getenv("KMIRROR_CONNECT_PASSWORD")
			var err error
			if in.CAPEM, err = readCA(caFile); err != nil {
				return nil, err
			}
			if in.ClientCertPEM, err = readFileFlag("--client-cert-file", certFile); err != nil {
				return nil, err
			}
			if in.ClientKeyPEM, err = secretFromFileOrEnv("--client-key-file", keyFile, "KMIRROR_CONNECT_CLIENT_KEY", getenv); err != nil {
				return nil, err
			}
			in.BearerToken, err = secretFromFileOrEnv("--bearer-token-file", tokenFile, "KMIRROR_CONNECT_BEARER_TOKEN", getenv)
			return in, err
		})
		if err != nil {
			return err
		}
		return a.call(ctx, http.MethodPost, "/api/v1/connect-clusters", body, connectTable(false))
	case "list":
		if _, err := a.parse(rest, getenv); err != nil {
			return err
		}
		return a.call(ctx, http.MethodGet, "/api/v1/connect-clusters", nil, connectTable(true))
	case "show":
		_, path, err := a.named(rest, getenv, "Connect cluster", "/api/v1/connect-clusters/%s")
		if err != nil {
			return err
		}
		return a.call(ctx, http.MethodGet, path, nil, connectTable(false))
	case "remove":
		return a.remove(ctx, rest, getenv, "Connect cluster", "/api/v1/connect-clusters/%s")
	case "check":
		name, path, err := a.named(rest, getenv, "Connect cluster", "/api/v1/connect-clusters/%s/check")
		if err != nil {
			return err
		}
		raw, err := a.client.Do(ctx, http.MethodPost, path, nil)
		if err != nil {
			return err
		}
		if err := a.print(raw, connectCheckTable); err != nil {
			return err
		}
		// Scripts branch on the exit status.
		var res service.ConnectClusterCheck
		if err := json.Unmarshal(raw, &res); err != nil {
			return fmt.Errorf("decode answer: %w", err)
		}
		if !res.OK {
			return fmt.Errorf("connect-cluster check: %s is not usable: fix what failed above and check again", name)
		}
		return nil
	case "mm2":
		_, path, err := a.named(rest, getenv, "Connect cluster", "/api/v1/connect-clusters/%s/mm2")
		if err != nil {
			return err
		}
		return a.call(ctx, http.MethodGet, path, nil, adoptableTable)
	case "adopt":
		var in service.AdoptRequest
		a.fs.StringVar(&in.SourceConnector, "connector", "", "the MM2 MirrorSourceConnector to adopt")
		a.fs.StringVar(&in.Name, "task", "", "name of the task it becomes")
		a.fs.StringVar(&in.Current, "current", "", "the registered instance the task belongs to: the source's (push) or the target's (pull); default the target's")
		a.fs.StringVar(&in.Engine, "engine", "", "engine of the task: embedded or connect:<name>; default the instance's Smart Connect engine")
		a.fs.BoolVar(&in.Bidirectional, "bidirectional", false, "adopt the MM2 source connector copying the other way too, as one bidirectional task")
		name, path, err := a.named(rest, getenv, "Connect cluster", "/api/v1/connect-clusters/%s/mm2/adopt")
		if err != nil {
			return err
		}
		if in.SourceConnector == "" || in.Name == "" {
			return errors.New("give --connector (see kmirror connect-cluster mm2 " + name + ") and --task")
		}
		body, err := json.Marshal(in)
		if err != nil {
			return err
		}
		return a.call(ctx, http.MethodPost, path, body, adoptedTable)
	default:
		fmt.Fprint(stderr, connectUsage)
		return fmt.Errorf("unknown connect-cluster command %q", sub)
	}
}

// smartConnectCommand is `kmirror instance smart-connect NAME ...`.
func smartConnectCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	a := newAdminCmd("instance smart-connect", stderr, stdout, false)
	var enable, disable bool
	var in service.SmartConnect
	a.fs.BoolVar(&enable, "enable", false, "enable Smart Connect (tasks may be created)")
	a.fs.BoolVar(&disable, "disable", false, "disable Smart Connect (no new tasks)")
	a.fs.StringVar(&in.Engine, "engine", "embedded", "engine of new tasks: embedded or connect:<name>")
	_, path, err := a.named(args, getenv, "instance", "/api/v1/clusters/%s/smart-connect")
	if err != nil {
		return err
	}
	if enable == disable {
		return errors.New("give exactly one of --enable and --disable")
	}
	in.Enabled = enable
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return a.call(ctx, http.MethodPut, path, body, instanceTable(false))
}

type connectRow struct {
	Name           string   `json:"name"`
	URLs           []string `json:"urls"`
	KafkaCluster   string   `json:"kafka_cluster"`
	Username       string   `json:"username"`
	BearerTokenSet bool     `json:"bearer_token_set"`
	ClientKeySet   bool     `json:"client_key_set"`
}

// readFileFlag reads the file a flag names; "" when none is given.
func readFileFlag(flag, path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", flag, err)
	}
	return string(b), nil
}

// secretFromFileOrEnv reads a secret from the file a flag names or from an
// environment variable, never from the command line (which other users
// of the machine can read); giving both is refused.
func secretFromFileOrEnv(flag, path, env string, getenv func(string) string) (string, error) {
	fromEnv := getenv(env)
	if path != "" && fromEnv != "" {
		return "", fmt.Errorf("give %s or %s, not both", flag, env)
	}
	if path == "" {
		return fromEnv, nil
	}
	return readFileFlag(flag, path)
}

func connectTable(list bool) func(io.Writer, json.RawMessage) error {
	return func(w io.Writer, raw json.RawMessage) error {
		rows, err := rowsOf[connectRow](raw, list, "connect_clusters")
		if err != nil {
			return err
		}
		fmt.Fprintln(w, "NAME\tURLS\tKAFKA CLUSTER\tAUTH")
		for _, r := range rows {
			var auth []string
			if r.Username != "" {
				auth = append(auth, "basic as "+r.Username)
			}
			if r.BearerTokenSet {
				auth = append(auth, "bearer token")
			}
			if r.ClientKeySet {
				auth = append(auth, "client certificate")
			}
			if len(auth) == 0 {
				auth = append(auth, "none")
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", r.Name, strings.Join(r.URLs, ","), r.KafkaCluster, strings.Join(auth, ", "))
		}
		return nil
	}
}

// connectCheckTable prints each worker's answer, then each verdict with
// what to do.
func connectCheckTable(w io.Writer, raw json.RawMessage) error {
	var res service.ConnectClusterCheck
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	fmt.Fprintln(w, "WORKER\tRESULT\tDETAIL")
	for _, wk := range res.Workers {
		if wk.OK {
			fmt.Fprintf(w, "%s\tok\tKafka Connect %s, Kafka cluster id %s\n", wk.URL, wk.Version, wk.KafkaClusterID)
		} else {
			fmt.Fprintf(w, "%s\tFAILED\t%s\n", wk.URL, wk.Error)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "CHECK\tRESULT\tVERDICT")
	for _, c := range res.Checks {
		result := "FAILED"
		switch {
		case c.OK:
			result = "ok"
		case c.Skipped:
			result = "skipped"
		case c.Optional:
			result = "no (optional)"
		}
		verdict := c.Verdict
		if c.Fix != "" {
			verdict += " — to do: " + c.Fix
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", c.Name, result, verdict)
	}
	fmt.Fprintln(w)
	if res.OK {
		fmt.Fprintf(w, "Connect cluster %s is usable\n", res.Name)
	} else {
		fmt.Fprintf(w, "Connect cluster %s is NOT usable\n", res.Name)
	}
	return nil
}

// adoptableTable prints each MM2 flow, the task it would become and its
// problems, one per line below it.
func adoptableTable(w io.Writer, raw json.RawMessage) error {
	var res struct {
		Candidates []service.AdoptCandidate `json:"candidates"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	fmt.Fprintln(w, "SOURCE CONNECTOR\tFLOW\tSTATE\tCONNECTORS\tREVERSE\tTASK\tADOPTABLE")
	for _, c := range res.Candidates {
		t := c.Task
		desc := "-"
		if t.Rules.Direction != "" {
			topics := t.Rules.TopicsRegex
			if topics == "" {
				topics = strings.Join(t.Rules.Topics, ",")
			}
			desc = fmt.Sprintf("%s on %s, topics %s, rename %v, sync offsets %v", t.Rules.Direction, t.Current.Cluster, topics, t.Rules.RenameTopics, t.Rules.SyncConsumerOffsets)
		}
		ok := "yes"
		if len(c.Problems) > 0 {
			ok = "no"
		}
		src := c.Source
		if src == "" {
			src = "-"
		}
		rev := c.Reverse
		if rev == "" {
			rev = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", src, c.Flow, c.State, strings.Join(c.Connectors, ","), rev, desc, ok)
		for _, p := range c.Problems {
			fmt.Fprintf(w, "  %s\t%s\t\t\t\t\t\n", p.Field, p.Message)
		}
	}
	return nil
}

// adoptedTable prints the task created and what became of the MM2
// connectors.
func adoptedTable(w io.Writer, raw json.RawMessage) error {
	var res service.AdoptResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	fmt.Fprintf(w, "task\t%s (%s, %s)\n", res.Task.Name, res.Task.Engine, res.Task.Status.State)
	fmt.Fprintf(w, "partitions handed over\t%d\n", res.Partitions)
	fmt.Fprintf(w, "MM2 connectors deleted\t%s\n", strings.Join(res.Deleted, ", "))
	for _, n := range res.NotDeleted {
		fmt.Fprintf(w, "NOT deleted\t%s\n", n)
	}
	return nil
}
