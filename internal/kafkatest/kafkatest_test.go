package kafkatest_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/kafkatest"
)

// Two clusters: the harness must run independent ones side by side.
func TestMain(m *testing.M) { kafkatest.Main(m, 2) }

// Every listener and mechanism kmirror supports carries records both ways.
func TestProduceConsumeEveryListener(t *testing.T) {
	c := kafkatest.Shared(t, 0)
	cases := []struct{ protocol, mechanism string }{
		{cluster.Plaintext, ""},
		{cluster.SASLPlaintext, cluster.MechanismPlain},
		{cluster.SASLPlaintext, cluster.MechanismSCRAMSHA256},
		{cluster.SASLPlaintext, cluster.MechanismSCRAMSHA512},
		{cluster.SASLSSL, cluster.MechanismPlain},
		{cluster.SASLSSL, cluster.MechanismSCRAMSHA256},
		{cluster.SASLSSL, cluster.MechanismSCRAMSHA512},
	}
	for _, tc := range cases {
		t.Run(tc.protocol+"/"+tc.mechanism, func(t *testing.T) {
			topic := kafkatest.NewTopic(t, c, 1, nil)
			s := c.Settings(tc.protocol, tc.mechanism)
			roundTrip(t, s, topic, 20)
		})
	}
	// Client certificates: SSL, and SASL_SSL on the listener that requires
	// one too; OAUTHBEARER on both SASL protocols.
	for _, tc := range []struct{ listener, mechanism string }{
		{cluster.SSL, ""},
		{kafkatest.ListenerMTLS, cluster.MechanismSCRAMSHA512},
		{kafkatest.ListenerMTLS, cluster.MechanismOAuthBearer},
	} {
		t.Run(tc.listener+"/cert/"+tc.mechanism, func(t *testing.T) {
			topic := kafkatest.NewTopic(t, c, 1, nil)
			s, err := c.SettingsWithCert(tc.listener, tc.mechanism)
			if err != nil {
				t.Fatal(err)
			}
			if tc.mechanism == cluster.MechanismOAuthBearer {
				o, err := c.SettingsOAuth(cluster.SASLSSL, kafkatest.AliceOAuth)
				if err != nil {
					t.Fatal(err)
				}
				s.Username, s.Password, s.OAuth = "", "", o.OAuth
			}
			roundTrip(t, s, topic, 20)
		})
	}
	for _, protocol := range []string{cluster.SASLPlaintext, cluster.SASLSSL} {
		t.Run(protocol+"/OAUTHBEARER", func(t *testing.T) {
			topic := kafkatest.NewTopic(t, c, 1, nil)
			s, err := c.SettingsOAuth(protocol, kafkatest.AliceOAuth)
			if err != nil {
				t.Fatal(err)
			}
			roundTrip(t, s, topic, 20)
		})
	}
}

// The listeners that require a client certificate refuse a client without
// one, or with one another CA signed; a wrong OAuth secret gets no token.
func TestListenersRefuseWhatTheyShould(t *testing.T) {
	c := kafkatest.Shared(t, 0)
	other, err := kafkatest.NewCA("another CA", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := other.ClientCert(kafkatest.Alice)
	if err != nil {
		t.Fatal(err)
	}
	noCert := c.Settings(cluster.SSL, "")
	noCert.BootstrapServers = c.BootstrapServers(cluster.SSL)
	wrongCA, err := c.SettingsWithCert(cluster.SSL, "")
	if err != nil {
		t.Fatal(err)
	}
	wrongCA.ClientCertPEM, wrongCA.ClientKeyPEM = foreign.ChainPEM, foreign.KeyPEM
	badSecret, err := c.SettingsOAuth(cluster.SASLSSL, kafkatest.AliceOAuth)
	if err != nil {
		t.Fatal(err)
	}
	badSecret.OAuth.ClientSecret = "wrong"
	for name, s := range map[string]cluster.Settings{"no certificate": noCert, "another CA": wrongCA, "wrong client secret": badSecret} {
		t.Run(name, func(t *testing.T) {
			cfg, err := s.Config("kafkatest-test")
			if err != nil {
				t.Fatal(err)
			}
			cfg.Net.DialTimeout, cfg.Net.ReadTimeout = 5*time.Second, 5*time.Second
			cfg.Metadata.Retry.Max = 0
			client, err := sarama.NewClient(s.BootstrapServers, cfg)
			if err == nil {
				client.Close()
				t.Fatal("connected: want a refusal")
			}
			t.Logf("refused as expected: %v", err)
		})
	}
}

// Every user can authenticate with every mechanism (bob too: he has no
// rights only when ACLs are on, which they are not here).
func TestEveryUserAuthenticates(t *testing.T) {
	c := kafkatest.Shared(t, 0)
	for _, u := range kafkatest.Users() {
		for _, mech := range []string{cluster.MechanismPlain, cluster.MechanismSCRAMSHA256, cluster.MechanismSCRAMSHA512} {
			t.Run(u.Name+"/"+mech, func(t *testing.T) {
				cfg, err := c.SettingsAs(cluster.SASLSSL, mech, u).Config("kafkatest-test")
				if err != nil {
					t.Fatal(err)
				}
				client, err := sarama.NewClient([]string{c.Bootstrap(cluster.SASLSSL)}, cfg)
				if err != nil {
					t.Fatalf("%s with %s: %v", u.Name, mech, err)
				}
				client.Close()
			})
		}
	}
}

func TestClustersAreIndependent(t *testing.T) {
	a, b := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	if a.ID() == b.ID() {
		t.Fatalf("both clusters have id %s", a.ID())
	}
	if a.Bootstrap(cluster.Plaintext) == b.Bootstrap(cluster.Plaintext) {
		t.Fatalf("both clusters listen on %s", a.Bootstrap(cluster.Plaintext))
	}
	if a.CAPEM() == b.CAPEM() {
		t.Fatal("both clusters share a CA")
	}
	topic := kafkatest.NewTopic(t, a, 3, map[string]*string{"retention.ms": ptr("3600000")})
	adminB, err := b.Admin()
	if err != nil {
		t.Fatal(err)
	}
	topics, err := adminB.ListTopics()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := topics[topic]; ok {
		t.Fatalf("topic %s made on %s shows on %s", topic, a.Name(), b.Name())
	}
	adminA, err := a.Admin()
	if err != nil {
		t.Fatal(err)
	}
	topics, err = adminA.ListTopics()
	if err != nil {
		t.Fatal(err)
	}
	d, ok := topics[topic]
	if !ok || d.NumPartitions != 3 {
		t.Fatalf("topic %s on %s: got %+v, want 3 partitions", topic, a.Name(), d)
	}
	if v := d.ConfigEntries["retention.ms"]; v == nil || *v != "3600000" {
		t.Fatalf("retention.ms of %s = %v, want 3600000", topic, v)
	}
}

// roundTrip produces n records with keys and headers and reads them back.
func roundTrip(t *testing.T, s cluster.Settings, topic string, n int) {
	t.Helper()
	cfg, err := s.Config("kafkatest-test")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	p, err := sarama.NewSyncProducer(s.BootstrapServers, cfg)
	if err != nil {
		t.Fatalf("producer on %s: %v", s.Redacted(), err)
	}
	defer p.Close()
	var msgs []*sarama.ProducerMessage
	for i := range n {
		msgs = append(msgs, &sarama.ProducerMessage{
			Topic:   topic,
			Key:     sarama.StringEncoder(fmt.Sprintf("k%d", i)),
			Value:   sarama.StringEncoder(fmt.Sprintf("v%d", i)),
			Headers: []sarama.RecordHeader{{Key: []byte("h"), Value: []byte(s.SecurityProtocol)}},
		})
	}
	if err := p.SendMessages(msgs); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}

	consumer, err := sarama.NewConsumer(s.BootstrapServers, cfg)
	if err != nil {
		t.Fatalf("consumer on %s: %v", s.Redacted(), err)
	}
	defer consumer.Close()
	pc, err := consumer.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatalf("consume %s: %v", topic, err)
	}
	defer pc.Close()
	var got []string
	timeout := time.After(30 * time.Second)
	for len(got) < n {
		select {
		case m := <-pc.Messages():
			if string(m.Key) != fmt.Sprintf("k%d", len(got)) {
				t.Fatalf("record %d has key %q", len(got), m.Key)
			}
			if len(m.Headers) != 1 || string(m.Headers[0].Value) != s.SecurityProtocol {
				t.Fatalf("record %d lost its header: %+v", len(got), m.Headers)
			}
			got = append(got, string(m.Value))
		case err := <-pc.Errors():
			t.Fatalf("consume %s: %v", topic, err)
		case <-timeout:
			t.Fatalf("read %d of %d records from %s in 30s", len(got), n, topic)
		}
	}
	if !slices.Equal(got[:2], []string{"v0", "v1"}) {
		t.Fatalf("records out of order: %v", got)
	}
}

func ptr(s string) *string { return &s }
