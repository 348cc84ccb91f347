package service

import (
	"errors"
	"fmt"

	"github.com/kmirror/kmirror/internal/task"
)

// ValidateSpec checks a headless spec (`kmirror run -f`) with the rules the
// API applies: every cluster as AddCluster does, every task as CreateTask
// does without live clusters (its own rules, its clusters being among the
// spec's, and the cross-task rules against the tasks before it). It
// normalizes the spec in place (defaults filled) and reports every problem
// at once, each line naming its place: clusters[i].field or
// tasks[i] (name).field.
func ValidateSpec(spec *Spec) error {
	var errs []error
	addrs := map[string][]string{}
	for i, c := range spec.Clusters {
		c = NormalizeCluster(c)
		spec.Clusters[i] = c
		addrs[c.Name] = c.BootstrapServers
		for _, p := range ValidateCluster(c) {
			errs = append(errs, fmt.Errorf("clusters[%d].%s: %s", i, p.Field, p.Message))
		}
	}
	connectNames := map[string]bool{}
	for i, c := range spec.ConnectClusters {
		c = NormalizeConnectCluster(c)
		spec.ConnectClusters[i] = c
		connectNames[c.Name] = true
		p := ValidateConnectCluster(c)
		if _, ok := addrs[c.KafkaCluster]; !ok && c.KafkaCluster != "" {
			p.Add("kafka_cluster", "cluster %q is not in the spec's clusters", c.KafkaCluster)
		}
		for _, pr := range p {
			errs = append(errs, fmt.Errorf("connect_clusters[%d].%s: %s", i, pr.Field, pr.Message))
		}
	}
	lookup := func(name string) []string { return addrs[name] }
	for i, t := range spec.Tasks {
		t = NormalizeTask(t)
		spec.Tasks[i] = t
		problems := ValidateTask(t)
		if _, ok := addrs[t.Current.Cluster]; !ok && t.Current.Cluster != "" {
			problems.Add("current.cluster", "cluster %q is not in the spec's clusters", t.Current.Cluster)
		}
		if _, ok := addrs[t.Peer.Cluster]; !ok && t.Peer.ConfigType == task.PeerByCluster && t.Peer.Cluster != "" {
			problems.Add("peer.cluster", "cluster %q is not in the spec's clusters", t.Peer.Cluster)
		}
		if name, err := task.ParseEngine(t.Engine); err != nil {
			problems.Add("engine", "%s", err.Error())
		} else if name != "" && !connectNames[name] {
			problems.Add("engine", "Kafka Connect cluster %q is not in the spec's connect_clusters", name)
		}
		cross, _ := CheckAgainstTasks(t, spec.Tasks[:i], lookup)
		for _, p := range append(problems, cross...) {
			errs = append(errs, fmt.Errorf("tasks[%d] (%s).%s: %s", i, t.Name, p.Field, p.Message))
		}
	}
	return errors.Join(errs...)
}
