package connectplan

import (
	"fmt"
	"sort"
	"strings"

	"github.com/magiconair/properties"

	"github.com/kmirror/kmirror/internal/connect"
)

// PropertiesFlow is one enabled flow of an mm2.properties file (MirrorMaker
// 2's dedicated mode) as the connectors MirrorMaker runs for it, so Adopt
// reads it as it reads connectors found on a Connect cluster.
type PropertiesFlow struct {
	MM2Flow
	// Configs are the flow's connector configurations by name: the
	// connector classes' simple names, as MirrorMaker names them.
	Configs map[string]map[string]string
	// OffsetsTopic, on the target cluster, is where this MirrorMaker keeps
	// the flow's progress (Connect's offsets topic of its worker group),
	// under the connector name MirrorSourceConnector.
	OffsetsTopic string
}

// workerSettings are Connect worker settings of a dedicated MirrorMaker,
// not connector settings: MirrorMaker keeps them out of its connectors.
var workerSettings = []string{"offset.storage.", "config.storage.", "status.storage.", "offset.flush.",
	"dedicated.mode.", "listeners", "rest.", "plugin.path", "group.id", "key.converter", "value.converter", "header.converter",
	"scheduled.rebalance.", "task.shutdown.", "connector.client.config.override.policy"}

func workerSetting(k string) bool {
	for _, w := range workerSettings {
		if strings.HasPrefix(k, w) {
			return true
		}
	}
	return false
}

// ParseMM2Properties reads an mm2.properties file and returns its enabled
// flows ("A->B.enabled = true"), sorted, each with its effective
// configuration as MirrorMaker builds it: top-level settings, then the
// source cluster's ("A.x" as source.cluster.x), the target's ("B.x" as
// target.cluster.x), then the flow's own ("A->B.x" as x).
func ParseMM2Properties(text string) ([]PropertiesFlow, error) {
	// ${...} are config-provider references, for the workers: not expanded.
	l := properties.Loader{Encoding: properties.UTF8, DisableExpansion: true}
	p, err := l.LoadBytes([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("mm2.properties: %w", err)
	}
	raw := p.Map()
	var aliases []string
	for _, a := range strings.Split(raw["clusters"], ",") {
		if a = strings.TrimSpace(a); a != "" {
			aliases = append(aliases, a)
		}
	}
	if len(aliases) < 2 {
		return nil, fmt.Errorf("mm2.properties: clusters = %q names fewer than two cluster aliases", raw["clusters"])
	}
	known := map[string]bool{}
	for _, a := range aliases {
		known[a] = true
	}
	// Keys that belong to a cluster or a flow; the rest are top-level.
	scoped := func(k string) bool {
		for _, a := range aliases {
			if strings.HasPrefix(k, a+".") || strings.HasPrefix(k, a+"->") {
				return true
			}
		}
		return k == "clusters"
	}
	var flows []PropertiesFlow
	for _, src := range aliases {
		for _, dst := range aliases {
			flow := src + "->" + dst
			if src == dst || !strings.EqualFold(strings.TrimSpace(raw[flow+".enabled"]), "true") {
				continue
			}
			cfg := map[string]string{}
			for k, v := range raw {
				if !scoped(k) && !workerSetting(k) {
					cfg[k] = v
				}
			}
			for k, v := range raw {
				if rest, ok := strings.CutPrefix(k, src+"."); ok && !workerSetting(rest) {
					cfg["source.cluster."+rest] = v
				}
			}
			for k, v := range raw {
				if rest, ok := strings.CutPrefix(k, dst+"."); ok && !workerSetting(rest) {
					cfg["target.cluster."+rest] = v
				}
			}
			for k, v := range raw {
				if rest, ok := strings.CutPrefix(k, flow+"."); ok && rest != "enabled" {
					cfg[rest] = v
				}
			}
			// Dedicated workers convert nothing (MirrorMakerConfig sets
			// ByteArrayConverter for keys, values and headers).
			for _, k := range []string{"key.converter", "value.converter", "header.converter"} {
				cfg[k] = byteArrayConverter
			}
			cfg["source.cluster.alias"], cfg["target.cluster.alias"] = src, dst
			configs := map[string]map[string]string{}
			with := func(class string) {
				c := make(map[string]string, len(cfg)+1)
				for k, v := range cfg {
					c[k] = v
				}
				c["connector.class"] = class
				configs[class[strings.LastIndex(class, ".")+1:]] = c
			}
			with(connect.MirrorSourceConnector)
			// MirrorMaker runs the checkpoint and heartbeat connectors
			// unless they are turned off.
			if !strings.EqualFold(strings.TrimSpace(cfg["emit.checkpoints.enabled"]), "false") ||
				strings.EqualFold(strings.TrimSpace(cfg["sync.group.offsets.enabled"]), "true") {
				with(connect.MirrorCheckpointConnector)
			}
			if !strings.EqualFold(strings.TrimSpace(cfg["emit.heartbeats.enabled"]), "false") {
				with(connect.MirrorHeartbeatConnector)
			}
			// As MirrorMakerConfig.workerConfig decides: a top-level
			// offset.storage.topic over the target's, else its default.
			offsets := raw["offset.storage.topic"]
			if offsets == "" {
				offsets = raw[dst+".offset.storage.topic"]
			}
			if offsets == "" {
				offsets = "mm2-offsets." + src + ".internal"
			}
			mf := GroupMM2(configs)
			flows = append(flows, PropertiesFlow{MM2Flow: mf[0], Configs: configs, OffsetsTopic: offsets})
		}
	}
	for k := range raw {
		if a, _, ok := strings.Cut(k, "->"); ok && !known[a] && !strings.Contains(a, ".") {
			return nil, fmt.Errorf("mm2.properties: %s names cluster %q, which clusters = %q does not list", k, a, raw["clusters"])
		}
	}
	if len(flows) == 0 {
		return nil, fmt.Errorf("mm2.properties: no flow is enabled: MirrorMaker replicates A->B only with \"A->B.enabled = true\"")
	}
	sort.Slice(flows, func(i, j int) bool {
		a, b := flows[i], flows[j]
		return a.SourceAlias < b.SourceAlias || a.SourceAlias == b.SourceAlias && a.TargetAlias < b.TargetAlias
	})
	return flows, nil
}
