package connectengine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
)

// groupWatch reads which workers are members of a Connect cluster's group,
// from the Kafka cluster the workers write to: Connect's own view of which
// workers live. A worker that stops heartbeating (killed, hung, cut off)
// is no longer a member once its session has timed out
// (session.timeout.ms, 10 s unless set), and that is what the group's
// leader moves its work on, scheduled.rebalance.max.delay.ms later. It
// needs no route from kmirror to any worker.
//
// kmirror is not told the workers' group.id: the group is found among the
// groups of protocol type "connect" as the one whose members advertise the
// worker ids Connect's statuses name (a member's metadata starts with its
// advertised REST URL), and kept until it is gone.
//
// Used by one poller goroutine only.
type groupWatch struct {
	kafka cluster.Settings
	log   *slog.Logger
	name  string // the Connect cluster's, for logs

	admin sarama.ClusterAdmin // nil until needed, or after a failure
	group string              // the workers' group.id once found
	// nextSearch is when a search for the group, or a connection to Kafka,
	// may be tried again after one failed: a search asks every broker for
	// its groups, a connection may take its dial timeout.
	nextSearch time.Time
	// failing is the last reason the group could not be read, so it is
	// logged when it changes, not every poll.
	failing string
}

// groupSearchBackoff spaces searches for the group that found nothing, and
// connections to Kafka that failed.
const groupSearchBackoff = 30 * time.Second

// groupRequestTimeout bounds each request to Kafka.
const groupRequestTimeout = 5 * time.Second

func newGroupWatch(name string, kafka cluster.Settings, log *slog.Logger) *groupWatch {
	return &groupWatch{kafka: kafka, log: log, name: name}
}

func (g *groupWatch) close() {
	if g.admin != nil {
		_ = g.admin.Close()
		g.admin = nil
	}
}

// members returns which of ids (worker ids, host:port) are members of the
// Connect group now. known is false when that cannot be told this round:
// no Kafka cluster to ask, Kafka not answering or refusing (ACLs), no
// Connect group holding these workers, or the group rebalancing (its
// members are not listed meanwhile).
func (g *groupWatch) members(ids []string, now time.Time) (members map[string]bool, known bool) {
	if len(g.kafka.BootstrapServers) == 0 || len(ids) == 0 {
		return nil, false
	}
	m, known, err := g.read(ids, now)
	switch {
	case err != nil && err.Error() != g.failing:
		g.failing = err.Error()
		g.log.Info("Connect workers' group not read: a worker that dies shows only once Connect moves its work, or when it is a registered URL that stops answering",
			"connect_cluster", g.name, "kafka_cluster", g.kafka.Name, "error", err)
	case err == nil && g.failing != "":
		g.failing = ""
		g.log.Info("Connect workers' group read again", "connect_cluster", g.name, "group", g.group)
	}
	return m, known
}

func (g *groupWatch) read(ids []string, now time.Time) (map[string]bool, bool, error) {
	if g.admin == nil {
		if now.Before(g.nextSearch) {
			return nil, false, errors.New(g.failing) // the last failure's reason, until the next try
		}
		cfg, err := g.kafka.Config("kmirror-connect-status")
		if err != nil {
			return nil, false, err
		}
		cfg.Net.DialTimeout, cfg.Net.ReadTimeout, cfg.Net.WriteTimeout = groupRequestTimeout, groupRequestTimeout, groupRequestTimeout
		cfg.Admin.Timeout = groupRequestTimeout
		cfg.Metadata.Retry.Max = 1
		a, err := sarama.NewClusterAdmin(g.kafka.BootstrapServers, cfg)
		if err != nil {
			// Not every poll: each try may take the dial timeout.
			g.nextSearch = now.Add(groupSearchBackoff)
			return nil, false, fmt.Errorf("Kafka cluster %s: %w", g.kafka.Name, err)
		}
		g.admin = a
	}
	if g.group == "" {
		if now.Before(g.nextSearch) {
			return nil, false, errors.New(g.failing) // the last search's reason, until the next
		}
		group, rebalancing, err := g.search(ids)
		if err != nil {
			if !rebalancing { // a rebalancing group lists no members: asked again next poll
				g.nextSearch = now.Add(groupSearchBackoff)
			}
			return nil, false, err
		}
		g.group = group
		g.log.Info("Connect workers' group found", "connect_cluster", g.name, "group", group, "kafka_cluster", g.kafka.Name)
	}
	ds, err := g.admin.DescribeConsumerGroups([]string{g.group})
	if err != nil {
		g.close() // a new connection next round
		return nil, false, fmt.Errorf("describe group %s on Kafka cluster %s: %w", g.group, g.kafka.Name, err)
	}
	if len(ds) != 1 {
		return nil, false, fmt.Errorf("describe group %s: %d answers", g.group, len(ds))
	}
	d := ds[0]
	if d.Err != sarama.ErrNoError {
		if errors.Is(d.Err, sarama.ErrGroupIDNotFound) {
			g.group = ""
		}
		return nil, false, fmt.Errorf("describe group %s on Kafka cluster %s: %w", g.group, g.kafka.Name, d.Err)
	}
	switch d.State {
	case "Stable", "Empty": // every live worker listed; none when all are gone
	case "Dead":
		g.group = ""
		return nil, false, nil
	default: // PreparingRebalance, CompletingRebalance: members not listed
		return nil, false, nil
	}
	return memberWorkers(d), true, nil
}

// search finds the Connect group whose members are the most of ids.
// rebalancing says a Connect group was rebalancing, when its members are
// not listed: the search may find it a moment later.
func (g *groupWatch) search(ids []string) (group string, rebalancing bool, err error) {
	all, err := g.admin.ListConsumerGroups()
	if err != nil {
		g.close()
		return "", false, fmt.Errorf("list groups on Kafka cluster %s: %w", g.kafka.Name, err)
	}
	var candidates []string
	for group, protocol := range all {
		if protocol == "connect" {
			candidates = append(candidates, group)
		}
	}
	sort.Strings(candidates)
	if len(candidates) == 0 {
		return "", false, fmt.Errorf("no Connect group on Kafka cluster %s (or kmirror may not describe groups there)", g.kafka.Name)
	}
	ds, err := g.admin.DescribeConsumerGroups(candidates)
	if err != nil {
		g.close()
		return "", false, fmt.Errorf("describe the Connect groups on Kafka cluster %s: %w", g.kafka.Name, err)
	}
	best, most := "", 0
	for _, d := range ds {
		if d.State == "PreparingRebalance" || d.State == "CompletingRebalance" {
			rebalancing = true
		}
		m := memberWorkers(d)
		n := 0
		for _, id := range ids {
			if m[id] {
				n++
			}
		}
		if n > most || n == most && n > 0 && d.GroupId < best {
			best, most = d.GroupId, n
		}
	}
	if best == "" && rebalancing {
		return "", true, fmt.Errorf("no Connect group on Kafka cluster %s lists a member advertising %s yet: one is rebalancing (asked again next poll)",
			g.kafka.Name, strings.Join(ids, ", "))
	}
	if best == "" {
		return "", false, fmt.Errorf("none of the %d Connect groups on Kafka cluster %s has a member advertising %s (is it the Kafka cluster the workers write to?)",
			len(candidates), g.kafka.Name, strings.Join(ids, ", "))
	}
	return best, false, nil
}

// memberWorkers are the worker ids (the advertised REST host:port, as
// Connect's statuses name workers) of a Connect group's members.
func memberWorkers(d *sarama.GroupDescription) map[string]bool {
	m := map[string]bool{}
	for _, member := range d.Members {
		if id, ok := connectMemberWorker(member.MemberMetadata); ok {
			m[id] = true
		}
	}
	return m
}

// connectMemberWorker reads a Connect group member's worker id from its
// metadata (ConnectProtocol, every version: an int16 version, then the
// advertised URL as an int16-length string, then the config offset...).
func connectMemberWorker(meta []byte) (string, bool) {
	if len(meta) < 4 {
		return "", false
	}
	n := int(int16(binary.BigEndian.Uint16(meta[2:4])))
	if n <= 0 || 4+n > len(meta) {
		return "", false
	}
	u, err := url.Parse(string(meta[4 : 4+n]))
	if err != nil || u.Host == "" {
		return "", false
	}
	return workerKey(hostPort(u)), true
}

// hostPort is u's host:port, the scheme's default port when it gives none.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	port := "80"
	if u.Scheme == "https" {
		port = "443"
	}
	return u.Host + ":" + port
}

// workerKey is how worker ids are compared: host names are not case
// sensitive.
func workerKey(id string) string { return strings.ToLower(id) }
