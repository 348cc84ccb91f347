package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/kmirror/kmirror/internal/apiclient"
	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/task"
)

const instanceUsage = `Usage:
  kmirror instance add -f cluster.json            register a Kafka instance (API shape of POST /api/v1/clusters)
  kmirror instance add --name N --bootstrap h:p[,h:p] [--security-protocol P --sasl-mechanism M --username U --ca-file F]
                       [--client-cert-file F --client-key-file F]
                       [--oauth-token-endpoint URL --oauth-client-id ID --oauth-scope S --oauth-audience A]
                                                  (secrets come from the environment, never a flag:
                                                  KMIRROR_KAFKA_PASSWORD, KMIRROR_KAFKA_KEY_PASSWORD,
                                                  KMIRROR_OAUTH_CLIENT_SECRET)
  kmirror instance list
  kmirror instance remove NAME
  kmirror instance smart-connect NAME --enable|--disable [--engine embedded|connect:<name>]

Flags of every command: --server URL (default http://127.0.0.1:8080), -o table|json.
The API token comes from KMIRROR_TOKEN.
`

const taskUsage = `Usage:
  kmirror task create -f task.json      create a Smart Connect task and start it
  kmirror task list
  kmirror task show NAME
  kmirror task delete NAME
  kmirror task pause|resume|restart NAME
  kmirror task reapply NAME             put kmirror's configuration back on connectors of a task on Kafka
                                        Connect that were changed outside kmirror (DRIFTED)
  kmirror task check -f task.json       connectivity check of both clusters, step by step
  kmirror task validate -f task.json    dry run: every problem and the topics that would be replicated
  kmirror task failover NAME --group G  translate group G's offsets and commit them to the target now
  kmirror task switchover NAME (--group G... | --all-groups) [--direction A->B] [--no-follow]
                                        move consumers to the copy: preflight, producers stopped, drain,
                                        groups translated and committed on the target (docs/SWITCHOVER.md)
  kmirror task switchover NAME --show   the task's newest switchover, its steps and report
  kmirror task failback NAME            prepare the way back after a done switchover; then
                                        kmirror task switchover NAME --direction B->A ... goes home
  kmirror task move NAME --engine E     run the task on engine E (embedded or connect:<name>), its progress
                                        handed over (docs/CONNECT.md); a failed move leaves it where it was
  kmirror task import-mm2 FILE --task NAME [--flow A->B] [--current I] [--engine E] [--start-over]
                                        run a flow of a stopped dedicated MirrorMaker 2 (its mm2.properties)
                                        as a task continuing from MirrorMaker's offsets (--start-over: copy
                                        everything again where no progress of MirrorMaker's is found)

Flags of every command: --server URL (default http://127.0.0.1:8080), -o table|json.
The API token comes from KMIRROR_TOKEN.
`

// adminCmd is what every admin command shares.
type adminCmd struct {
	fs     *flag.FlagSet
	server string
	output string
	file   string
	group  string
	engine string
	client *apiclient.Client
	stdout io.Writer
}

func newAdminCmd(name string, stderr, stdout io.Writer, withFile bool) *adminCmd {
	a := &adminCmd{fs: flag.NewFlagSet("kmirror "+name, flag.ContinueOnError), stdout: stdout}
	a.fs.SetOutput(stderr)
	a.fs.StringVar(&a.server, "server", "http://127.0.0.1:8080", "URL of the kmirror server")
	a.fs.StringVar(&a.output, "o", "table", "output: table or json")
	if withFile {
		a.fs.StringVar(&a.file, "f", "", "JSON file with the request body (- for standard input)")
	}
	return a
}

// parse parses flags given before or after the positional arguments.
func (a *adminCmd) parse(args []string, getenv func(string) string) ([]string, error) {
	var pos []string
	for {
		if err := a.fs.Parse(args); err != nil {
			return nil, err
		}
		if a.fs.NArg() == 0 {
			break
		}
		pos = append(pos, a.fs.Arg(0))
		args = a.fs.Args()[1:]
	}
	if a.output != "table" && a.output != "json" {
		return nil, fmt.Errorf("-o %q: use table or json", a.output)
	}
	a.client = apiclient.New(a.server, strings.TrimSpace(getenv("KMIRROR_TOKEN")))
	return pos, nil
}

func (a *adminCmd) body() ([]byte, error) {
	if a.file == "" {
		return nil, errors.New("give the request body with -f file.json")
	}
	var b []byte
	var err error
	if a.file == "-" {
		b, err = io.ReadAll(os.Stdin)
	} else {
		b, err = os.ReadFile(a.file)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", a.file, err)
	}
	return b, nil
}

// bodyOr is the request body: the -f file when given, else build's value
// as JSON (a command's flags).
func (a *adminCmd) bodyOr(build func() (any, error)) ([]byte, error) {
	if a.file != "" {
		return a.body()
	}
	v, err := build()
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// readCA reads a --ca-file flag's PEM; "" when none is given.
func readCA(path string) (string, error) { return readPEM("CA", path) }

// readPEM reads a PEM file given by a flag; "" is none.
func readPEM(what, path string) (string, error) {
	if path == "" {
		return "", nil
	}
	pem, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read %s file: %w", what, err)
	}
	return string(pem), nil
}

// subcommand splits "COMMAND SUB ARGS...": the usage goes to stderr for
// help (sub "") and for no sub at all (an error).
func subcommand(args []string, command, usage string, stderr io.Writer) (sub string, rest []string, err error) {
	if len(args) == 0 || args[0] == "-h" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return "", nil, fmt.Errorf("no %s command given", command)
		}
		return "", nil, nil
	}
	return args[0], args[1:], nil
}

// named parses a command that takes exactly one NAME of what, and gives
// the API path pathFmt with it.
func (a *adminCmd) named(rest []string, getenv func(string) string, what, pathFmt string) (name, path string, err error) {
	pos, err := a.parse(rest, getenv)
	if err != nil {
		return "", "", err
	}
	if name, err = oneName(pos, what); err != nil {
		return "", "", err
	}
	return name, apiclient.Path(pathFmt, name), nil
}

// call sends one request and prints its answer (see print).
func (a *adminCmd) call(ctx context.Context, method, path string, body []byte, table func(io.Writer, json.RawMessage) error) error {
	raw, err := a.client.Do(ctx, method, path, body)
	if err != nil {
		return err
	}
	return a.print(raw, table)
}

// remove is a "remove NAME" command: DELETE path (with NAME) and a line
// saying it is done ("<what> NAME removed", or done instead of removed).
func (a *adminCmd) remove(ctx context.Context, rest []string, getenv func(string) string, what, path string, done ...string) error {
	name, path, err := a.named(rest, getenv, what, path)
	if err != nil {
		return err
	}
	if _, err := a.client.Do(ctx, http.MethodDelete, path, nil); err != nil {
		return err
	}
	verb := "removed"
	if len(done) > 0 {
		verb = done[0]
	}
	fmt.Fprintf(a.stdout, "%s %s %s\n", what, name, verb)
	return nil
}

// rowsOf decodes an answer holding one row, or with list a list of rows
// under key.
func rowsOf[T any](raw json.RawMessage, list bool, key string) ([]T, error) {
	if !list {
		var r T
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("decode answer: %w", err)
		}
		return []T{r}, nil
	}
	var l map[string][]T
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, fmt.Errorf("decode answer: %w", err)
	}
	return l[key], nil
}

func oneName(pos []string, what string) (string, error) {
	if len(pos) != 1 {
		return "", fmt.Errorf("give exactly one %s name", what)
	}
	return pos[0], nil
}

// print writes raw as indented JSON with -o json, else calls table.
func (a *adminCmd) print(raw json.RawMessage, table func(w io.Writer, raw json.RawMessage) error) error {
	if a.output == "json" || table == nil {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("decode answer: %w", err)
		}
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	if err := table(tw, raw); err != nil {
		return err
	}
	return tw.Flush()
}

func instanceCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	sub, rest, err := subcommand(args, "instance", instanceUsage, stderr)
	if sub == "" {
		return err
	}
	if sub == "smart-connect" {
		return smartConnectCommand(ctx, rest, getenv, stdout, stderr)
	}
	a := newAdminCmd("instance "+sub, stderr, stdout, sub == "add")
	switch sub {
	case "add":
		var in cluster.Settings
		var bootstrap, caFile, certFile, keyFile string
		a.fs.StringVar(&in.Name, "name", "", "instance name")
		a.fs.StringVar(&bootstrap, "bootstrap", "", "bootstrap servers, comma-separated host:port")
		a.fs.StringVar(&in.SecurityProtocol, "security-protocol", "", "PLAINTEXT, SASL_PLAINTEXT, SASL_SSL or SSL")
		a.fs.StringVar(&in.SASLMechanism, "sasl-mechanism", "", "SCRAM-SHA-512, PLAIN, SCRAM-SHA-256 or OAUTHBEARER")
		a.fs.StringVar(&in.Username, "username", "", "SASL user name (PLAIN, SCRAM; the password from $KMIRROR_KAFKA_PASSWORD)")
		a.fs.StringVar(&caFile, "ca-file", "", "PEM file of the CA that signed the brokers' certificates")
		a.fs.StringVar(&certFile, "client-cert-file", "", "PEM file of the client certificate chain (SSL, SASL_SSL)")
		a.fs.StringVar(&keyFile, "client-key-file", "", "PEM file of the client certificate's private key (its password, if encrypted, from $KMIRROR_KAFKA_KEY_PASSWORD)")
		a.fs.StringVar(&in.OAuth.TokenEndpoint, "oauth-token-endpoint", "", "OAUTHBEARER: the identity provider's token endpoint URL")
		a.fs.StringVar(&in.OAuth.ClientID, "oauth-client-id", "", "OAUTHBEARER: the OAuth client id (the secret from $KMIRROR_OAUTH_CLIENT_SECRET)")
		a.fs.StringVar(&in.OAuth.Scope, "oauth-scope", "", "OAUTHBEARER: scopes to ask for, space-separated (optional)")
		a.fs.StringVar(&in.OAuth.Audience, "oauth-audience", "", "OAUTHBEARER: the audience to ask for (optional)")
		if _, err := a.parse(rest, getenv); err != nil {
			return err
		}
		body, err := a.bodyOr(func() (any, error) {
			if bootstrap != "" {
				in.BootstrapServers = strings.Split(bootstrap, ",")
			}
			// Secrets from the environment, never from flags: a command
			// line is visible to every local user and kept in shell history.
			// Each only where its flags ask for it, so a variable left in
			// the environment does not turn into a setting the cluster
			// does not use.
			switch {
			case in.UsesOAuth():
				in.OAuth.ClientSecret = getenv("KMIRROR_OAUTH_CLIENT_SECRET")
			case in.UsesPassword():
				in.Password = getenv("KMIRROR_KAFKA_PASSWORD")
			}
			if keyFile != "" {
				in.ClientKeyPassword = getenv("KMIRROR_KAFKA_KEY_PASSWORD")
			}
			var err error
			if in.CAPEM, err = readPEM("CA", caFile); err != nil {
				return nil, err
			}
			if in.ClientCertPEM, err = readPEM("client certificate", certFile); err != nil {
				return nil, err
			}
			in.ClientKeyPEM, err = readPEM("client key", keyFile)
			return in, err
		})
		if err != nil {
			return err
		}
		return a.call(ctx, http.MethodPost, "/api/v1/clusters", body, instanceTable(false))
	case "list":
		if _, err := a.parse(rest, getenv); err != nil {
			return err
		}
		return a.call(ctx, http.MethodGet, "/api/v1/clusters", nil, instanceTable(true))
	case "remove":
		return a.remove(ctx, rest, getenv, "instance", "/api/v1/clusters/%s")
	default:
		fmt.Fprint(stderr, instanceUsage)
		return fmt.Errorf("unknown instance command %q", sub)
	}
}

type clusterRow struct {
	Name             string   `json:"name"`
	BootstrapServers []string `json:"bootstrap_servers"`
	SecurityProtocol string   `json:"security_protocol"`
	SASLMechanism    string   `json:"sasl_mechanism"`
	Username         string   `json:"username"`
	TasksUsed        int      `json:"tasks_used"`
	TasksLimit       int      `json:"tasks_limit"`
}

func instanceTable(list bool) func(io.Writer, json.RawMessage) error {
	return func(w io.Writer, raw json.RawMessage) error {
		rows, err := rowsOf[clusterRow](raw, list, "clusters")
		if err != nil {
			return err
		}
		fmt.Fprintln(w, "NAME\tBOOTSTRAP\tAUTH\tTASKS")
		for _, r := range rows {
			auth := r.SecurityProtocol
			if r.Username != "" {
				auth += " " + r.SASLMechanism + " as " + r.Username
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%d/%d\n", r.Name, strings.Join(r.BootstrapServers, ","), auth, r.TasksUsed, r.TasksLimit)
		}
		return nil
	}
}

func taskCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	sub, rest, err := subcommand(args, "task", taskUsage, stderr)
	if sub == "" {
		return err
	}
	withFile := sub == "create" || sub == "check" || sub == "validate"
	a := newAdminCmd("task "+sub, stderr, stdout, withFile)
	switch sub {
	case "failover":
		a.fs.StringVar(&a.group, "group", "", "consumer group to fail over")
	case "move":
		a.fs.StringVar(&a.engine, "engine", "", "engine to move the task to: embedded or connect:<name>")
	case "import-mm2":
		a.fs.StringVar(&a.engine, "engine", "", "engine of the new task: embedded or connect:<name> (default: its instance's Smart Connect engine)")
	}
	var sw switchoverFlags
	if sub == "switchover" {
		sw.register(a)
	}
	var importReq struct {
		flow, task, current string
		startOver           bool
	}
	if sub == "import-mm2" {
		a.fs.BoolVar(&importReq.startOver, "start-over", false, "copy every topic from its first record when MirrorMaker's offsets topic is missing or holds no progress of the flow (refused without it)")
		a.fs.StringVar(&importReq.flow, "flow", "", "the flow to import, SOURCE->TARGET (may be left out when the file enables one)")
		a.fs.StringVar(&importReq.task, "task", "", "name of the new task")
		a.fs.StringVar(&importReq.current, "current", "", "instance the task belongs to (default: the target's)")
	}
	pos, err := a.parse(rest, getenv)
	if err != nil {
		return err
	}
	switch sub {
	case "create", "check", "validate":
		if len(pos) > 0 {
			return fmt.Errorf("task %s takes the task from -f, not %q", sub, pos)
		}
		body, err := a.body()
		if err != nil {
			return err
		}
		path, table := "/api/v1/tasks", taskTable(false)
		switch sub {
		case "check":
			path, table = "/api/v1/connectivity", checkTable
		case "validate":
			path, table = "/api/v1/tasks/validate", validateTable
		}
		raw, err := a.client.Do(ctx, http.MethodPost, path, body)
		if err != nil {
			return err
		}
		if err := a.print(raw, table); err != nil {
			return err
		}
		// Scripts branch on the exit status.
		var ok struct {
			OK *bool `json:"ok"`
		}
		if json.Unmarshal(raw, &ok) == nil && ok.OK != nil && !*ok.OK {
			return fmt.Errorf("task %s: not ok", sub)
		}
		return nil
	case "list":
		return a.call(ctx, http.MethodGet, "/api/v1/tasks", nil, taskTable(true))
	case "failover":
		name, err := oneName(pos, "task")
		if err != nil {
			return err
		}
		if a.group == "" {
			return errors.New("failover needs --group G")
		}
		body, _ := json.Marshal(map[string]string{"group": a.group})
		return a.call(ctx, http.MethodPost, apiclient.Path("/api/v1/tasks/%s/failover", name), body, failoverTable)
	case "switchover":
		name, err := oneName(pos, "task")
		if err != nil {
			return err
		}
		return sw.run(ctx, a, name)
	case "failback":
		name, err := oneName(pos, "task")
		if err != nil {
			return err
		}
		return a.call(ctx, http.MethodPost, apiclient.Path("/api/v1/tasks/%s/failback", name), nil, switchoverTable)
	case "move":
		name, err := oneName(pos, "task")
		if err != nil {
			return err
		}
		// Required here although the API reads "" as embedded: a move
		// should say where to.
		if a.engine == "" {
			return errors.New("move needs --engine embedded|connect:<name>")
		}
		body, _ := json.Marshal(map[string]string{"engine": a.engine})
		return a.call(ctx, http.MethodPost, apiclient.Path("/api/v1/tasks/%s/move", name), body, taskTable(false))
	case "import-mm2":
		file, err := oneName(pos, "mm2.properties file")
		if err != nil {
			return err
		}
		text, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("read %s: %w", file, err)
		}
		body, _ := json.Marshal(map[string]any{"properties": string(text), "flow": importReq.flow,
			"name": importReq.task, "current": importReq.current, "engine": a.engine, "start_over": importReq.startOver})
		return a.call(ctx, http.MethodPost, "/api/v1/tasks/import-mm2", body, importTable)
	case "show", "delete", "pause", "resume", "restart", "reapply":
		name, err := oneName(pos, "task")
		if err != nil {
			return err
		}
		method, path := http.MethodPost, apiclient.Path("/api/v1/tasks/%s/", name)+sub
		switch sub {
		case "show":
			method, path = http.MethodGet, apiclient.Path("/api/v1/tasks/%s", name)
		case "delete":
			method, path = http.MethodDelete, apiclient.Path("/api/v1/tasks/%s", name)
		}
		raw, err := a.client.Do(ctx, method, path, nil)
		if err != nil {
			return err
		}
		if sub == "delete" {
			fmt.Fprintf(stdout, "task %s deleted\n", name)
			return nil
		}
		return a.print(raw, taskTable(false))
	default:
		fmt.Fprint(stderr, taskUsage)
		return fmt.Errorf("unknown task command %q", sub)
	}
}

type taskRow struct {
	Name    string `json:"name"`
	Current struct {
		Cluster string `json:"cluster"`
		Alias   string `json:"alias"`
	} `json:"current"`
	Peer struct {
		Alias   string   `json:"alias"`
		Cluster string   `json:"cluster"`
		Address []string `json:"address"`
	} `json:"peer"`
	Rules struct {
		Direction string `json:"direction"`
	} `json:"rules"`
	Engine string `json:"engine"`
	Status struct {
		State  task.State `json:"state"`
		Reason string     `json:"reason"`
		Flows  []struct {
			Flow       string     `json:"flow"`
			State      task.State `json:"state"`
			Records    int64      `json:"records"`
			LagRecords int64      `json:"lag_records"`
			LagSeconds float64    `json:"lag_seconds"`
		} `json:"flows"`
	} `json:"status"`
	Warnings []string `json:"warnings"`
}

func (r taskRow) peer() string {
	if r.Peer.Cluster != "" {
		return r.Peer.Cluster
	}
	return strings.Join(r.Peer.Address, ",")
}

func taskTable(list bool) func(io.Writer, json.RawMessage) error {
	return func(w io.Writer, raw json.RawMessage) error {
		rows, err := rowsOf[taskRow](raw, list, "tasks")
		if err != nil {
			return err
		}
		fmt.Fprintln(w, "NAME\tCURRENT\tDIRECTION\tPEER\tENGINE\tSTATE\tRECORDS\tLAG\tREASON")
		for _, r := range rows {
			var records, lag int64
			for _, f := range r.Status.Flows {
				records += f.Records
				lag += f.LagRecords
			}
			fmt.Fprintf(w, "%s\t%s (%s)\t%s\t%s (%s)\t%s\t%s\t%d\t%d\t%s\n", r.Name, r.Current.Cluster, r.Current.Alias,
				r.Rules.Direction, r.peer(), r.Peer.Alias, r.Engine, r.Status.State, records, lag, r.Status.Reason)
		}
		if !list && len(rows) == 1 {
			for _, f := range rows[0].Status.Flows {
				fmt.Fprintf(w, "  flow %s\t%s\trecords %d\tlag %d (%.1fs)\n", f.Flow, f.State, f.Records, f.LagRecords, f.LagSeconds)
			}
			for _, warn := range rows[0].Warnings {
				fmt.Fprintf(w, "warning: %s\n", warn)
			}
		}
		return nil
	}
}

func checkTable(w io.Writer, raw json.RawMessage) error {
	var res struct {
		OK       bool `json:"ok"`
		Clusters []struct {
			Role    string `json:"role"`
			Cluster string `json:"cluster"`
			OK      bool   `json:"ok"`
			Steps   []struct {
				Name    string `json:"name"`
				OK      bool   `json:"ok"`
				Skipped bool   `json:"skipped"`
				Message string `json:"message"`
			} `json:"steps"`
		} `json:"clusters"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	fmt.Fprintln(w, "ROLE\tCLUSTER\tSTEP\tRESULT\tMESSAGE")
	for _, c := range res.Clusters {
		for _, s := range c.Steps {
			result := "FAILED"
			switch {
			case s.OK:
				result = "ok"
			case s.Skipped:
				result = "skipped"
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", c.Role, c.Cluster, s.Name, result, s.Message)
		}
	}
	return nil
}

func validateTable(w io.Writer, raw json.RawMessage) error {
	var res struct {
		OK       bool                `json:"ok"`
		Problems []apiclient.Problem `json:"problems"`
		Warnings []string            `json:"warnings"`
		Flows    []struct {
			Flow   string `json:"flow"`
			Error  string `json:"error"`
			Topics []struct {
				Source string `json:"source"`
				Target string `json:"target"`
			} `json:"topics"`
		} `json:"flows"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	if res.OK {
		fmt.Fprintln(w, "the task is valid")
	}
	for _, p := range res.Problems {
		fmt.Fprintf(w, "problem\t%s\t%s\n", p.Field, p.Message)
	}
	for _, warn := range res.Warnings {
		fmt.Fprintf(w, "warning\t\t%s\n", warn)
	}
	for _, f := range res.Flows {
		if f.Error != "" {
			fmt.Fprintf(w, "flow %s\t\t%s\n", f.Flow, f.Error)
		}
		for _, t := range f.Topics {
			fmt.Fprintf(w, "flow %s\t%s\t-> %s\n", f.Flow, t.Source, t.Target)
		}
	}
	return nil
}

// failoverTable prints, per partition, where the group continues on the
// target and whether that was committed.
func importTable(w io.Writer, raw json.RawMessage) error {
	var res struct {
		Task struct {
			Name   string `json:"name"`
			Engine string `json:"engine"`
		} `json:"task"`
		Partitions   int    `json:"partitions"`
		OffsetsTopic string `json:"offsets_topic"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	fmt.Fprintf(w, "task %s created on %s: %d partitions continue from MirrorMaker's offsets (%s)\n",
		res.Task.Name, res.Task.Engine, res.Partitions, res.OffsetsTopic)
	return nil
}

func failoverTable(w io.Writer, raw json.RawMessage) error {
	var res struct {
		Task    string `json:"task"`
		Group   string `json:"group"`
		Results []struct {
			Checkpoints []struct {
				Topic            string `json:"topic"`
				Partition        int32  `json:"partition"`
				UpstreamOffset   int64  `json:"upstream_offset"`
				DownstreamOffset int64  `json:"downstream_offset"`
			} `json:"checkpoints"`
			Committed map[string]int64 `json:"committed"`
			Skipped   []string         `json:"skipped"`
			Notes     []string         `json:"notes"`
		} `json:"results"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	fmt.Fprintf(w, "TARGET TOPIC\tPARTITION\tSOURCE OFFSET\tTARGET OFFSET\tCOMMITTED\n")
	for _, r := range res.Results {
		for _, c := range r.Checkpoints {
			_, done := r.Committed[fmt.Sprintf("%s/%d", c.Topic, c.Partition)]
			fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%v\n", c.Topic, c.Partition, c.UpstreamOffset, c.DownstreamOffset, done)
		}
		for _, s := range r.Skipped {
			fmt.Fprintf(w, "skipped: %s\t\t\t\t\n", s)
		}
		for _, s := range r.Notes {
			fmt.Fprintf(w, "note: %s\t\t\t\t\n", s)
		}
	}
	return nil
}

// failoverCommand is `kmirror failover --task T --group G`: the same as
// `kmirror task failover T --group G`.
func failoverCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	rest := make([]string, 0, len(args))
	var name string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case (a == "--task" || a == "-task") && i+1 < len(args):
			name = args[i+1]
			i++
		case strings.HasPrefix(a, "--task="), strings.HasPrefix(a, "-task="):
			name = a[strings.Index(a, "=")+1:]
		default:
			rest = append(rest, a)
		}
	}
	if name == "" {
		return errors.New("failover needs --task T --group G")
	}
	return taskCommand(ctx, append([]string{"failover", name}, rest...), getenv, stdout, stderr)
}
