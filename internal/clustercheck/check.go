// Package clustercheck checks, step by step, that kmirror can use a Kafka
// cluster with given settings: tcp, tls (SSL and SASL_SSL: the handshake,
// the broker's certificate, and whether it accepts the client certificate),
// sasl (SASL protocols only; for OAUTHBEARER a token first), metadata and
// permissions. Each step reports ok and a
// message a user can act on; steps after a failed one are reported as
// skipped, never run, so the first failure is the one to fix.
//
// Explain is the same vocabulary for the rest of kmirror: it turns a sarama
// connection error into one that says what failed and what to do. Live
// answers the service's other questions of a live cluster in it (Describe:
// brokers and topics; TopicConfigs), with short-lived clients.
package clustercheck

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
)

// Step names, in the order they run (docs/TASKS.md, Connectivity check; the API reports them by these names).
const (
	StepTCP         = "tcp"
	StepTLS         = "tls"
	StepSASL        = "sasl"
	StepMetadata    = "metadata"
	StepPermissions = "permissions"
)

// Step is one step's outcome. Skipped steps have OK false and say which
// earlier step stopped them.
type Step struct {
	Name    string `json:"name"`
	OK      bool   `json:"ok"`
	Skipped bool   `json:"skipped,omitempty"`
	Message string `json:"message"`
}

// Metadata is what the metadata step learnt about the cluster.
type Metadata struct {
	Brokers      int    `json:"brokers"`
	ControllerID int32  `json:"controller_id"`
	KafkaVersion string `json:"kafka_version,omitempty"`
}

// Result is a cluster's check: OK only when every step passed.
type Result struct {
	OK       bool      `json:"ok"`
	Steps    []Step    `json:"steps"`
	Metadata *Metadata `json:"metadata,omitempty"`
}

// Failed is the first failed step, or nil.
func (r Result) Failed() *Step {
	for i := range r.Steps {
		if !r.Steps[i].OK && !r.Steps[i].Skipped {
			return &r.Steps[i]
		}
	}
	return nil
}

// Timeouts of one network operation; the whole check also ends with ctx
// and with Limits.Deadline.
const (
	dialTimeout = 5 * time.Second
	ioTimeout   = 10 * time.Second
)

// Limits bound what one check may do, so that a check of a cluster with
// hundreds of brokers, or of an address that accepts connections and then
// says nothing, answers in bounded time without a burst of connections.
type Limits struct {
	// Deadline is the most the whole check takes; a step still running
	// then fails as not finished.
	Deadline time.Duration
	// ParallelDials is the most connections opened at once.
	ParallelDials int
	// Brokers is the most bootstrap servers and advertised brokers
	// contacted; the rest are named as not checked.
	Brokers int
}

// DefaultLimits are Check's: a user waits for the answer, and a sample of
// brokers shows a wrong advertised.listeners as well as all of them.
var DefaultLimits = Limits{Deadline: 30 * time.Second, ParallelDials: 8, Brokers: 16}

// Steps lists the steps Check runs for these settings, in order.
func Steps(s cluster.Settings) []string {
	steps := []string{StepTCP}
	if s.UsesTLS() {
		steps = append(steps, StepTLS)
	}
	if s.UsesSASL() {
		steps = append(steps, StepSASL)
	}
	return append(steps, StepMetadata, StepPermissions)
}

// Check runs the steps against the cluster within DefaultLimits. It never
// returns an error: a failure is a failed step with its reason.
func Check(ctx context.Context, s cluster.Settings) Result {
	return CheckWithin(ctx, s, DefaultLimits)
}

// CheckWithin is Check within other limits; a zero field takes the
// default's.
func CheckWithin(ctx context.Context, s cluster.Settings, lim Limits) Result {
	if lim.Deadline <= 0 {
		lim.Deadline = DefaultLimits.Deadline
	}
	if lim.ParallelDials <= 0 {
		lim.ParallelDials = DefaultLimits.ParallelDials
	}
	if lim.Brokers <= 0 {
		lim.Brokers = DefaultLimits.Brokers
	}
	ctx, cancel := context.WithTimeout(ctx, lim.Deadline)
	defer cancel()
	c := &checker{s: s, lim: lim}
	// A step abandoned at the deadline still owns the client until it
	// returns (its own timeouts end it); close after it.
	defer func() { go func() { c.running.Wait(); c.close() }() }()
	run := map[string]func(context.Context) (string, error){
		StepTCP:         c.tcp,
		StepTLS:         c.tls,
		StepSASL:        c.sasl,
		StepMetadata:    c.metadata,
		StepPermissions: c.permissions,
	}
	var r Result
	failed := ""
	for _, name := range Steps(s) {
		if failed != "" {
			r.Steps = append(r.Steps, Step{Name: name, Skipped: true, Message: fmt.Sprintf("not run: the %s step failed", failed)})
			continue
		}
		if err := ctx.Err(); err != nil {
			failed = name
			r.Steps = append(r.Steps, Step{Name: name, Message: fmt.Sprintf("not finished: %v", err)})
			continue
		}
		msg, err := c.step(ctx, run[name])
		if err != nil {
			failed = name
			r.Steps = append(r.Steps, Step{Name: name, Message: err.Error()})
			continue
		}
		r.Steps = append(r.Steps, Step{Name: name, OK: true, Message: msg})
	}
	r.OK = failed == ""
	if !c.abandoned {
		r.Metadata = c.meta
	}
	return r
}

type checker struct {
	s         cluster.Settings
	lim       Limits
	reachable []string // bootstrap servers that accepted a TCP connection
	client    sarama.Client
	meta      *Metadata
	running   sync.WaitGroup // the step in progress, abandoned or not
	abandoned bool           // a step outlived the deadline and may still write
}

// step runs one step until it ends or ctx does. sarama takes no context, so
// a step past the deadline is abandoned (it ends on its own timeouts), and
// no later step runs: they would share its state.
func (c *checker) step(ctx context.Context, run func(context.Context) (string, error)) (string, error) {
	type outcome struct {
		msg string
		err error
	}
	done := make(chan outcome, 1)
	c.running.Add(1)
	go func() {
		defer c.running.Done()
		msg, err := run(ctx)
		done <- outcome{msg, err}
	}()
	select {
	case o := <-done:
		return o.msg, o.err
	case <-ctx.Done():
		c.abandoned = true
		return "", fmt.Errorf("not finished within the check's %s: the cluster answers too slowly or not at all — check the address, the listener's protocol and the network", c.lim.Deadline)
	}
}

// eachLimited runs f for 0..n-1, at most limit at a time, and waits.
func eachLimited(n, limit int, f func(i int)) {
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			f(i)
		})
	}
	wg.Wait()
}

func (c *checker) close() {
	if c.client != nil {
		_ = c.client.Close()
	}
}

// config is the product's sarama config with the check's short timeouts:
// a user waits for the answer.
func (c *checker) config() (*sarama.Config, error) {
	cfg, err := c.s.Config("kmirror-connectivity-check")
	if err != nil {
		return nil, err
	}
	cfg.Net.DialTimeout = dialTimeout
	cfg.Net.ReadTimeout = ioTimeout
	cfg.Net.WriteTimeout = ioTimeout
	cfg.Metadata.Retry.Max = 0
	// A fresh cluster answers COORDINATOR_NOT_AVAILABLE until it has made
	// its offsets topic; retry briefly rather than report a false failure.
	cfg.Admin.Retry.Max = 20
	cfg.Admin.Retry.Backoff = 250 * time.Millisecond
	cfg.Admin.Timeout = ioTimeout
	return cfg, nil
}

func (c *checker) tcp(ctx context.Context) (string, error) {
	if len(c.s.BootstrapServers) == 0 {
		return "", errors.New("no bootstrap servers given — give at least one host:port")
	}
	for _, addr := range c.s.BootstrapServers {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return "", fmt.Errorf("bootstrap server %q is not host:port — write it like broker1.example.com:9092", addr)
		}
	}
	addrs := c.s.BootstrapServers
	var failures []string
	if len(addrs) > c.lim.Brokers {
		failures = append(failures, fmt.Sprintf("%d more bootstrap servers not tried (the check tries %d)", len(addrs)-c.lim.Brokers, c.lim.Brokers))
		addrs = addrs[:c.lim.Brokers]
	}
	errs := make([]error, len(addrs))
	d := net.Dialer{Timeout: dialTimeout}
	eachLimited(len(addrs), c.lim.ParallelDials, func(i int) {
		conn, err := d.DialContext(ctx, "tcp", addrs[i])
		if err != nil {
			errs[i] = Explain(c.s, addrs[i], err)
			return
		}
		conn.Close()
	})
	var firstErr error
	for i, err := range errs {
		if err == nil {
			c.reachable = append(c.reachable, addrs[i])
			continue
		}
		failures = append(failures, err.Error())
		if firstErr == nil {
			firstErr = err
		}
	}
	if len(c.reachable) == 0 {
		if len(failures) == 1 {
			return "", firstErr
		}
		return "", errors.New(strings.Join(failures, "; "))
	}
	msg := "reached " + strings.Join(c.reachable, ", ")
	if len(failures) > 0 {
		msg += "; but " + strings.Join(failures, "; ")
	}
	return msg, nil
}

func (c *checker) tls(ctx context.Context) (string, error) {
	addr := c.reachable[0]
	tc, err := c.s.TLSConfig()
	if err != nil {
		return "", err
	}
	var client string
	if len(tc.Certificates) > 0 {
		leaf := tc.Certificates[0].Leaf
		now := time.Now()
		switch {
		case now.After(leaf.NotAfter):
			return "", fmt.Errorf("the client certificate %q expired on %s — issue a new one and register it again", leaf.Subject.String(), leaf.NotAfter.UTC().Format(time.DateOnly))
		case now.Before(leaf.NotBefore):
			return "", fmt.Errorf("the client certificate %q is not valid before %s — check kmirror's clock or wait", leaf.Subject.String(), leaf.NotBefore.UTC().Format(time.RFC3339))
		}
		client = leaf.Subject.String()
	}
	host, _, _ := net.SplitHostPort(addr)
	tc.ServerName = host // an IP address is checked against the IP SANs
	d := net.Dialer{Timeout: dialTimeout}
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", Explain(c.s, addr, err)
	}
	conn := tls.Client(raw, tc)
	defer conn.Close()
	hctx, cancel := context.WithTimeout(ctx, ioTimeout)
	defer cancel()
	if err := conn.HandshakeContext(hctx); err != nil {
		return "", Explain(c.s, addr, err)
	}
	st := conn.ConnectionState()
	leaf := st.PeerCertificates[0]
	msg := fmt.Sprintf("%s with %s; certificate %q issued by %q, valid until %s",
		tls.VersionName(st.Version), addr, leaf.Subject.CommonName, leaf.Issuer.CommonName, leaf.NotAfter.UTC().Format("2006-01-02"))
	// With TLS 1.3 a broker refuses a client certificate (or its absence)
	// after the client's side of the handshake is done: only an answer to a
	// first request proves it was accepted. ApiVersions is answered before
	// SASL, so it serves both protocols; a SASL listener then expects
	// SaslHandshake, so it is the only request sent.
	if err := c.tlsRequest(addr); err != nil {
		return "", err
	}
	if client != "" {
		msg += fmt.Sprintf("; client certificate %q accepted", client)
	}
	return msg, nil
}

// tlsRequest opens a connection to addr over TLS alone (no SASL): sarama's
// Open sends ApiVersions and reports a connection its answer did not come
// on (a TLS alert) through Connected.
func (c *checker) tlsRequest(addr string) error {
	cfg, err := c.config()
	if err != nil {
		return err
	}
	cfg.Net.SASL.Enable = false
	cfg.ApiVersionsRequest = true
	if err := openBroker(sarama.NewBroker(addr), cfg, true); err != nil {
		return Explain(c.s, addr, err)
	}
	return nil
}

func (c *checker) sasl(ctx context.Context) (string, error) {
	addr := c.reachable[0]
	var token string
	if c.s.UsesOAuth() {
		// The token first, so an identity provider's refusal is named as
		// such, not as a broker's.
		tctx, cancel := context.WithTimeout(ctx, ioTimeout)
		defer cancel()
		until, err := c.s.FetchToken(tctx)
		if err != nil {
			return "", Explain(c.s, addr, err)
		}
		token = fmt.Sprintf("OAuth token obtained from %s", c.s.OAuth.TokenEndpoint)
		if !until.IsZero() {
			token += fmt.Sprintf(" (valid until %s)", until.UTC().Format(time.RFC3339))
		}
	}
	cfg, err := c.config()
	if err != nil {
		return "", err
	}
	if err := openBroker(sarama.NewBroker(addr), cfg, true); err != nil {
		return "", Explain(c.s, addr, err)
	}
	if token != "" {
		return fmt.Sprintf("%s and accepted by the broker for client %s", token, c.s.OAuth.ClientID), nil
	}
	return fmt.Sprintf("authenticated as %s with %s", c.s.Username, c.s.SASLMechanism), nil
}

// openBroker connects (and authenticates) one broker, waiting for the
// outcome: sarama's Open is asynchronous and reports through Connected.
func openBroker(b *sarama.Broker, cfg *sarama.Config, closeAfter bool) error {
	if err := b.Open(cfg); err != nil && !errors.Is(err, sarama.ErrAlreadyConnected) {
		return err
	}
	if _, err := b.Connected(); err != nil {
		return err
	}
	if closeAfter {
		_ = b.Close()
	}
	return nil
}

func (c *checker) metadata(_ context.Context) (string, error) {
	cfg, err := c.config()
	if err != nil {
		return "", err
	}
	client, err := sarama.NewClient(c.reachable, cfg)
	if err != nil {
		return "", Explain(c.s, "", err)
	}
	c.client = client
	brokers := client.Brokers()
	if len(brokers) == 0 {
		return "", errors.New("the cluster returned no brokers in its metadata — check that the brokers have registered (is the cluster healthy?)")
	}
	slices.SortFunc(brokers, func(a, b *sarama.Broker) int { return int(a.ID() - b.ID()) })

	// Clients talk to the addresses brokers advertise, not the bootstrap
	// ones: a wrong advertised.listeners is the classic "works in the check,
	// fails later" mistake, so connect to the brokers now (up to the limit:
	// a misconfiguration is usually cluster-wide).
	contacted := brokers[:min(len(brokers), c.lim.Brokers)]
	errs := make([]error, len(contacted))
	eachLimited(len(contacted), c.lim.ParallelDials, func(i int) {
		b := contacted[i]
		if err := openBroker(b, cfg, false); err != nil {
			errs[i] = fmt.Errorf("broker %d advertises %s, which cannot be used: %v — fix the broker's advertised.listeners or the network", b.ID(), b.Addr(), Explain(c.s, b.Addr(), err))
		}
	})
	if err := errors.Join(errs...); err != nil {
		return "", err
	}

	m := &Metadata{Brokers: len(brokers), ControllerID: -1}
	controller, err := client.Controller()
	if err == nil {
		m.ControllerID = controller.ID()
	} else {
		controller = brokers[0]
	}
	m.KafkaVersion = kafkaVersion(controller)
	c.meta = m

	ids := make([]string, len(brokers))
	for i, b := range brokers {
		ids[i] = fmt.Sprint(b.ID())
	}
	msg := fmt.Sprintf("%d %s (ids %s), controller %d", len(brokers), plural(len(brokers), "broker"), strings.Join(ids, ", "), m.ControllerID)
	if len(contacted) < len(brokers) {
		msg += fmt.Sprintf("; advertised addresses of %d of them checked", len(contacted))
	}
	if m.KafkaVersion != "" {
		msg += ", Kafka " + m.KafkaVersion
	}
	return msg, nil
}

// kafkaVersion asks a broker its finalized metadata.version. Brokers never
// report their software version; metadata.version is a lower bound of it.
func kafkaVersion(b *sarama.Broker) string {
	resp, err := b.ApiVersions(&sarama.ApiVersionsRequest{Version: 3, ClientSoftwareName: "kmirror", ClientSoftwareVersion: "0"})
	if err != nil || resp.FinalizedFeaturesEpoch < 0 {
		return ""
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == "metadata.version" {
			return describeMetadataVersion(f.MaxVersionLevel)
		}
	}
	return ""
}

func (c *checker) permissions(ctx context.Context) (string, error) {
	admin, err := sarama.NewClusterAdminFromClient(c.client)
	if err != nil {
		return "", Explain(c.s, "", err)
	}
	// The admin shares c.client, which close() ends; do not Close it here.
	user := userOrAnonymous(c.s)
	var ok, denied []string

	topics, err := c.client.Topics()
	switch {
	case err != nil:
		denied = append(denied, fmt.Sprintf("cannot list topics: %v", Explain(c.s, "", err)))
	default:
		ok = append(ok, fmt.Sprintf("describe topics: %d visible", len(topics)))
	}

	probe := "kmirror-connectivity-check-" + randomHex(4)
	err = admin.CreateTopic(probe, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: -1}, true)
	switch {
	case err == nil, errors.Is(err, sarama.ErrTopicAlreadyExists):
		ok = append(ok, "create topics: allowed (validated only, nothing created)")
	case errors.Is(err, sarama.ErrTopicAuthorizationFailed), errors.Is(err, sarama.ErrClusterAuthorizationFailed):
		denied = append(denied, fmt.Sprintf("user %s may not create topics — grant it Create on the cluster or on the topics kmirror creates (the target topics and its internal topics), or create them beforehand", user))
	case errors.Is(err, sarama.ErrPolicyViolation):
		ok = append(ok, fmt.Sprintf("create topics: allowed, but the cluster's create-topic policy may refuse some topics (%v)", err))
	default:
		denied = append(denied, fmt.Sprintf("could not check topic creation: %v", Explain(c.s, "", err)))
	}

	// A coordinator that is still loading its offsets (a fresh or just
	// restarted broker) answers OFFSETS_LOAD_IN_PROGRESS, which sarama does
	// not retry: wait for it briefly rather than report a false failure.
	for deadline := time.Now().Add(10 * time.Second); ; {
		_, err = admin.ListConsumerGroupOffsets("kmirror-connectivity-check", nil)
		if !errors.Is(err, sarama.ErrOffsetsLoadInProgress) || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	switch {
	case err == nil:
		ok = append(ok, "read consumer-group offsets: allowed")
	case errors.Is(err, sarama.ErrGroupIDNotFound):
		// Apache Kafka answers offsets of -1 for a group it does not know,
		// other implementations (the embedded clusters) GROUP_ID_NOT_FOUND;
		// either way the request was authorized, which is what is checked.
		ok = append(ok, "read consumer-group offsets: allowed")
	case errors.Is(err, sarama.ErrGroupAuthorizationFailed):
		denied = append(denied, fmt.Sprintf("user %s may not read consumer-group offsets — grant it Describe and Read on the groups kmirror syncs (or turn off sync consumer offsets)", user))
	default:
		denied = append(denied, fmt.Sprintf("could not check consumer-group offsets: %v", Explain(c.s, "", err)))
	}

	if len(denied) > 0 {
		msg := strings.Join(denied, "; ")
		if len(ok) > 0 {
			msg += " (" + strings.Join(ok, "; ") + ")"
		}
		return "", errors.New(msg)
	}
	return strings.Join(ok, "; "), nil
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
