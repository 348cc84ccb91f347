package connectplan

import (
	"fmt"
	"sort"
	"strings"

	"github.com/magiconair/properties"

	"github.com/kmirror/kmirror/internal/connect"
)

// PropertiesFlow is one enabled flow of an mm2.properties file (MirrorMaker 2's
// dedicated mode), as the connector configuration MirrorMaker would give
// its MirrorSourceConnector: what Adopt reads, as for connectors found on a
// Connect cluster.
type PropertiesFlow struct {
	Source, Target string
	Config         map[string]string
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
				if !scoped(k) {
					cfg[k] = v
				}
			}
			for k, v := range raw {
				if rest, ok := strings.CutPrefix(k, src+"."); ok {
					cfg["source.cluster."+rest] = v
				}
			}
			for k, v := range raw {
				if rest, ok := strings.CutPrefix(k, dst+"."); ok {
					cfg["target.cluster."+rest] = v
				}
			}
			for k, v := range raw {
				if rest, ok := strings.CutPrefix(k, flow+"."); ok && rest != "enabled" {
					cfg[rest] = v
				}
			}
			cfg["connector.class"] = connect.MirrorSourceConnector
			cfg["source.cluster.alias"], cfg["target.cluster.alias"] = src, dst
			flows = append(flows, PropertiesFlow{Source: src, Target: dst, Config: cfg})
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
		return flows[i].Source < flows[j].Source || flows[i].Source == flows[j].Source && flows[i].Target < flows[j].Target
	})
	return flows, nil
}
