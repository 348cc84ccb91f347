package service

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/kmirror/kmirror/internal/store"
)

// The destination policy's modes: which Kafka addresses an operator may
// give as a task's peer. Admins may always give any: they can register
// any cluster anyway.
const (
	DestinationAny        = "any"        // any address (kmirror's behaviour before the policy)
	DestinationRegistered = "registered" // registered instances only
	DestinationNetworks   = "networks"   // also addresses inside the given networks
)

// maxPolicyNetworks bounds the networks of a policy.
const maxPolicyNetworks = 64

// DestinationPolicy is the policy as the API shows and takes it.
type DestinationPolicy struct {
	Mode string `json:"mode"`
	// Networks are CIDRs ("10.20.0.0/16"), with mode networks only.
	Networks  []string   `json:"networks"`
	ChangedBy string     `json:"changed_by,omitempty"`
	ChangedAt *time.Time `json:"changed_at,omitempty"`
}

// DestinationPolicy reads the policy (any role: operators need to know
// the rule they are held to).
func (s *Service) DestinationPolicy(ctx context.Context) (DestinationPolicy, error) {
	if err := s.allow(ctx, RoleViewer); err != nil {
		return DestinationPolicy{}, err
	}
	p, err := s.destinationPolicy(ctx)
	if err != nil {
		return DestinationPolicy{}, err
	}
	out := DestinationPolicy{Mode: p.Mode, Networks: p.Networks, ChangedBy: p.ChangedBy}
	if out.Networks == nil {
		out.Networks = []string{}
	}
	if !p.ChangedAt.IsZero() {
		at := p.ChangedAt.UTC()
		out.ChangedAt = &at
	}
	return out, nil
}

func (s *Service) destinationPolicy(ctx context.Context) (store.DestinationPolicy, error) {
	if s.policies == nil {
		return store.DestinationPolicy{Mode: DestinationAny}, nil
	}
	return s.policies.DestinationPolicy(ctx)
}

// SetDestinationPolicy replaces the policy (admin only); every broken rule
// comes back at once. Tasks already stored keep running: the policy holds
// for tasks created, checked or imported from now on.
func (s *Service) SetDestinationPolicy(ctx context.Context, in DestinationPolicy) (_ DestinationPolicy, err error) {
	defer s.audit(ctx, "destination-policy.set", in.Mode, &err)
	if err := s.allow(ctx, RoleAdmin); err != nil {
		return DestinationPolicy{}, err
	}
	if s.policies == nil {
		return DestinationPolicy{}, errors.New("service: the destination policy needs Deps.Policies")
	}
	var p Problems
	var networks []string
	switch in.Mode {
	case DestinationAny, DestinationRegistered:
		if len(in.Networks) > 0 {
			p.Add("networks", "networks are given with mode networks only")
		}
	case DestinationNetworks:
		if len(in.Networks) == 0 {
			p.Add("networks", "give at least one network, as a CIDR such as 10.20.0.0/16")
		}
		if len(in.Networks) > maxPolicyNetworks {
			p.Add("networks", "at most %d networks", maxPolicyNetworks)
			break
		}
		for _, n := range in.Networks {
			pfx, err := netip.ParsePrefix(strings.TrimSpace(n))
			if err != nil {
				p.Add("networks", "%q is not a network: give a CIDR such as 10.20.0.0/16 or fd00::/8", shorten(n))
				continue
			}
			networks = append(networks, pfx.Masked().String())
		}
	default:
		p.Add("mode", "mode must be any, registered or networks")
	}
	if len(p) > 0 {
		return DestinationPolicy{}, &Error{Code: CodeInvalidRequest, Message: "the destination policy was not changed", Problems: p}
	}
	rec := store.DestinationPolicy{Mode: in.Mode, Networks: networks, ChangedBy: actorName(ctx), ChangedAt: s.now().UTC().Truncate(time.Second)}
	if err := s.policies.SetDestinationPolicy(ctx, rec); err != nil {
		return DestinationPolicy{}, err
	}
	return s.DestinationPolicy(ctx)
}

// checkDestination holds a peer given by address to the policy when the
// caller is not an admin (kmirror itself, with no caller, is not held):
// its brokers, and the OAuth token endpoint it would send the client
// secret to. A host name is resolved now and every address it resolves to
// must be inside the policy's networks; all lookups share one deadline.
func (s *Service) checkDestination(ctx context.Context, addrs []string, tokenEndpoint string) (Problems, error) {
	a, ok := ActorFrom(ctx)
	if !ok || Allows(a.Role, RoleAdmin) {
		return nil, nil
	}
	pol, err := s.destinationPolicy(ctx)
	if err != nil {
		return nil, err
	}
	var p Problems
	switch pol.Mode {
	case DestinationRegistered:
		p.Add("peer.config_type", "an admin allows operators to use registered instances only as peers (destination policy): choose the peer by instance name, or ask an admin to register it")
	case DestinationNetworks:
		nets := make([]netip.Prefix, 0, len(pol.Networks))
		for _, n := range pol.Networks {
			if pfx, err := netip.ParsePrefix(n); err == nil {
				nets = append(nets, pfx)
			}
		}
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		for _, addr := range addrs {
			s.checkInsideNetworks(lctx, &p, "peer.address", addr, nets)
		}
		if tokenEndpoint != "" {
			if u, err := url.Parse(tokenEndpoint); err == nil && u.Hostname() != "" {
				s.checkInsideNetworks(lctx, &p, "peer.oauth.token_endpoint", u.Hostname(), nets)
			}
		}
	}
	return p, nil
}

// checkInsideNetworks adds a problem when addr (host:port) names an
// address outside nets.
func (s *Service) checkInsideNetworks(ctx context.Context, p *Problems, field, addr string, nets []netip.Prefix) {
	allowed := strings.Join(prefixStrings(nets), ", ")
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr // its format is ValidateTask's to refuse
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		found, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil || len(found) == 0 {
			p.Add(field, "%s: its host name could not be resolved to check it against the networks an admin allows (%s): give an address inside them", addr, allowed)
			return
		}
		ips = found
	}
	for _, ip := range ips {
		ip = ip.Unmap()
		inside := false
		for _, n := range nets {
			if n.Contains(ip) {
				inside = true
				break
			}
		}
		if !inside {
			p.Add(field, "%s (%s) is outside the networks an admin allows operators to copy to (%s): use an address inside them, or a registered instance", addr, ip, allowed)
			return
		}
	}
}

func prefixStrings(nets []netip.Prefix) []string {
	out := make([]string, len(nets))
	for i, n := range nets {
		out[i] = n.String()
	}
	return out
}
