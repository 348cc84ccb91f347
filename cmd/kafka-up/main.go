// Command kafka-up starts two local Apache Kafka clusters for development,
// prints how to reach them and stops them on Ctrl-C. Each is a single node,
// or with -brokers N, N brokers and a KRaft controller. With --fetch-only
// it only fetches the Kafka jars into the cache (CI runs this first).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/kafkatest"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "kafka-up:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("kafka-up", flag.ContinueOnError)
	fetchOnly := fs.Bool("fetch-only", false, "fetch the Kafka jars into the cache and exit")
	n := fs.Int("n", 2, "number of clusters to start")
	heap := fs.Int("heap-mb", 1024, "JVM heap of each broker in MiB")
	acls := fs.Bool("acls", false, "enable ACLs (alice may do everything, bob nothing)")
	brokers := fs.Int("brokers", 1, "brokers per cluster; more than 1 adds a KRaft controller and sets the replication factors to it")
	minISR := fs.Int("min-isr", 0, "min.insync.replicas of every broker (0: Kafka's default, 1)")
	props := propsFlag{}
	fs.Var(props, "prop", "a broker property `key=value`, e.g. offsets.retention.minutes=1 (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if *fetchOnly {
		j, err := kafkatest.EnsureJars(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "Apache Kafka %s jars in %s\n", j.Version, j.Dir)
		return nil
	}
	if *n < 1 {
		return errors.New("-n must be at least 1")
	}
	if *brokers < 1 || *minISR < 0 || *minISR > *brokers {
		return fmt.Errorf("-brokers %d -min-isr %d: need at least 1 broker and 0 <= min-isr <= brokers", *brokers, *minISR)
	}

	clusters := make([]*kafkatest.Cluster, *n)
	errs := make([]error, *n)
	var wg sync.WaitGroup
	for i := range *n {
		wg.Go(func() {
			clusters[i], errs[i] = kafkatest.Start(ctx,
				kafkatest.Name(fmt.Sprintf("kafka%d", i+1)), kafkatest.HeapMB(*heap), kafkatest.ACLs(*acls),
				kafkatest.Brokers(*brokers), kafkatest.MinInsyncReplicas(*minISR), kafkatest.BrokerProps(props))
		})
	}
	wg.Wait()
	defer func() {
		for _, c := range clusters {
			if c != nil {
				if err := c.Stop(); err != nil {
					slog.Warn("stop", "cluster", c.Name(), "err", err)
				}
				_ = c.Remove()
			}
		}
	}()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, c := range clusters {
		describe(out, c)
	}
	fmt.Fprintln(out, "Press Ctrl-C to stop the clusters.")
	<-ctx.Done()
	fmt.Fprintln(out, "stopping...")
	return nil
}

func describe(out io.Writer, c *kafkatest.Cluster) {
	fmt.Fprintf(out, "\n%s (Apache Kafka %s, cluster id %s, files in %s)\n", c.Name(), c.Version(), c.ID(), c.Dir())
	for _, p := range []string{cluster.Plaintext, cluster.SASLPlaintext, cluster.SASLSSL, cluster.SSL, kafkatest.ListenerMTLS} {
		fmt.Fprintf(out, "  %-15s %s\n", p, c.Bootstrap(p))
	}
	fmt.Fprintf(out, "  %-15s SSL, and %s (SASL_SSL), require a client certificate signed by the CA below\n", "", kafkatest.ListenerMTLS)
	if cert, err := c.CA().ClientCert(kafkatest.Alice); err == nil {
		certFile, keyFile := filepath.Join(c.Dir(), "config", "alice.pem"), filepath.Join(c.Dir(), "config", "alice.key")
		if os.WriteFile(certFile, []byte(cert.ChainPEM), 0o600) == nil && os.WriteFile(keyFile, []byte(cert.KeyPEM), 0o600) == nil {
			fmt.Fprintf(out, "  client cert     %s, key %s (CN=alice)\n", certFile, keyFile)
		}
	}
	if idp, err := kafkatest.Identity(); err == nil {
		fmt.Fprintf(out, "  OAUTHBEARER     token endpoint %s, client %s/%s (on SASL_PLAINTEXT, SASL_SSL, %s)\n",
			idp.TokenURL(), kafkatest.AliceOAuth.ID, kafkatest.AliceOAuth.Secret, kafkatest.ListenerMTLS)
	}
	var users []string
	for _, u := range kafkatest.Users() {
		users = append(users, u.Name+"/"+u.Password)
	}
	fmt.Fprintf(out, "  SASL users      %s (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)\n", strings.Join(users, ", "))
	fmt.Fprintf(out, "  CA certificate  %s\n", c.CAFile())
	if ids := c.BrokerIDs(); len(ids) > 1 {
		fmt.Fprintf(out, "  brokers         %v, controller 100\n", ids)
		for _, id := range ids {
			fmt.Fprintf(out, "  broker %d log    %s/server.log\n", id, c.BrokerLogDir(id))
		}
		return
	}
	fmt.Fprintf(out, "  broker log      %s/server.log\n", c.LogDir())
}

// propsFlag collects repeated -prop key=value flags.
type propsFlag map[string]string

func (p propsFlag) String() string { return fmt.Sprint(map[string]string(p)) }

func (p propsFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q is not key=value", s)
	}
	p[k] = v
	return nil
}
