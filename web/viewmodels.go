package web

import (
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/history"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/views"
)

// The view models views render, built here from the service's answers so
// views never import the data plane (service, engines, the sampler).

// taskModel is a task as console pages show it.
func taskModel(info service.TaskInfo) views.TaskInfo {
	t := views.TaskInfo{
		Name: info.Name, Type: info.Type, Current: info.Current,
		Peer: views.PeerInfo{Peer: info.Peer.Peer, PasswordSet: info.Peer.PasswordSet,
			ClientCert: certView(info.Peer.ClientCert, time.Now()), ClientKeySet: info.Peer.ClientKeySet},
		Rules: info.Rules, Engine: info.Engine, DesiredState: info.DesiredState,
		Status:         views.TaskStatus{State: info.Status.State, Reason: info.Status.Reason},
		LastAction:     views.LastAction{Action: info.LastAction.Action, By: info.LastAction.By, At: info.LastAction.At},
		InternalTopics: info.InternalTopics, CreatedAt: info.CreatedAt,
	}
	// Never rendered; the service leaves them out already. The OAuth
	// client secret is the mask when set, as an export shows it.
	t.Peer.Password, t.Peer.ClientKeyPEM, t.Peer.ClientKeyPassword = "", "", ""
	if t.Peer.OAuth.ClientSecret != "" {
		t.Peer.OAuth.ClientSecret = views.PasswordMask
	}
	for _, f := range info.Status.Flows {
		fv := views.FlowStatus{
			Flow: f.Flow, State: f.State, Reason: f.Reason, Records: f.Records,
			LagRecords: f.LagRecords, LagSeconds: f.LagSeconds, Restarts: f.Restarts,
			ExpiredOnSource: f.ExpiredOnSource, LostOnTarget: f.LostOnTarget,
		}
		for _, p := range f.Partitions {
			fv.Partitions = append(fv.Partitions, views.PartitionStatus{
				Topic: p.Topic, Target: p.Target, Partition: p.Partition, NextOffset: p.NextOffset,
				EndOffset: p.EndOffset, Lag: p.Lag, Records: p.Records, Failed: p.Failed, Reason: p.Reason,
			})
		}
		if cp := f.Checkpoints; cp != nil {
			fv.Checkpoints = &views.CheckpointStatus{LastRun: cp.LastRun, Groups: cp.Groups,
				Committed: cp.Committed, Skipped: cp.Skipped, LastError: cp.LastError}
		}
		t.Status.Flows = append(t.Status.Flows, fv)
	}
	return t
}

// taskPageModel is the task page's view: the task and what the sampler
// recorded of it (chart data, current rates, recent errors).
func taskPageModel(info service.TaskInfo, h history.TaskSeries) views.TaskView {
	v := views.TaskView{Task: taskModel(info), Chart: h.Columns(), Rates: map[string]float64{}}
	for _, f := range h.Flows {
		if r, _, ok := f.Rate(); ok {
			v.Rates[f.Flow] = r
		}
	}
	for _, e := range h.Errors {
		v.Errors = append(v.Errors, views.RecentError{At: e.At, Flow: e.Flow, Message: e.Message})
	}
	return v
}

// problemsView are the service's problems for a page.
func problemsView(ps service.Problems) []views.Problem {
	if ps == nil {
		return nil
	}
	return viewsOf(ps, func(p service.Problem) views.Problem { return views.Problem{Field: p.Field, Message: p.Message} })
}

// viewsOf is the view model of each of the service's answers, in order.
func viewsOf[T, V any](in []T, view func(T) V) []V {
	out := make([]V, len(in))
	for i, v := range in {
		out[i] = view(v)
	}
	return out
}

// fieldErrors are the service's problems by field, for a form.
func fieldErrors(ps service.Problems) views.FieldErrors {
	return views.FieldErrorsFrom(problemsView(ps))
}

// previewView is the dry run's topic preview for the task form; nil stays
// nil (no dry run yet).
func previewView(flows []service.FlowPreview) []views.FlowPreview {
	if flows == nil {
		return nil
	}
	out := make([]views.FlowPreview, len(flows))
	for i, f := range flows {
		fv := views.FlowPreview{Flow: f.Flow, Source: f.Source, Target: f.Target, Conflicts: f.Conflicts, Error: f.Error}
		for _, t := range f.Topics {
			fv.Topics = append(fv.Topics, views.PreviewTopic{Source: t.Source, Target: t.Target, NewTarget: t.NewTarget,
				SourceMaxMessageBytes: t.SourceMaxMessageBytes, TargetMaxMessageBytes: t.TargetMaxMessageBytes, TargetTooSmall: t.TargetTooSmall})
		}
		out[i] = fv
	}
	return out
}

// connectivityView is the connectivity check's answer for the task form.
func connectivityView(r service.ConnectivityResult) *views.ConnectivityResult {
	out := &views.ConnectivityResult{OK: r.OK}
	for _, c := range r.Clusters {
		cv := views.ClusterCheck{Role: c.Role, Cluster: c.Cluster, OK: c.OK}
		for _, s := range c.Steps {
			cv.Steps = append(cv.Steps, views.CheckStep{Name: s.Name, OK: s.OK, Skipped: s.Skipped, Message: s.Message})
		}
		out.Clusters = append(out.Clusters, cv)
	}
	return out
}

func clusterView(c service.ClusterInfo) views.ClusterInfo {
	v := views.ClusterInfo{Name: c.Name, BootstrapServers: c.BootstrapServers, SecurityProtocol: c.SecurityProtocol,
		SASLMechanism: c.SASLMechanism, Username: c.Username, PasswordSet: c.PasswordSet, CAPEM: c.CAPEM,
		ClientCert: certView(c.ClientCert, time.Now()), ClientKeySet: c.ClientKeySet,
		CreatedAt: c.CreatedAt, TasksUsed: c.TasksUsed, TasksLimit: c.TasksLimit,
		SmartConnect: views.SmartConnect{Enabled: c.SmartConnect.Enabled, Engine: c.SmartConnect.Engine}}
	if o := c.OAuth; o != nil {
		// The service masks the secret; the view only learns it is set.
		v.OAuthTokenEndpoint, v.OAuthClientID, v.OAuthScope, v.OAuthAudience = o.TokenEndpoint, o.ClientID, o.Scope, o.Audience
		v.OAuthSecretSet = o.ClientSecret != ""
	}
	return v
}

// certView is a client certificate as pages show it, with whether it ends
// within the warning window of now (service.Credentials.CertExpiresSoon's
// rule) or has ended; nil without one.
func certView(c *cluster.CertInfo, now time.Time) *views.CertInfo {
	if c == nil {
		return nil
	}
	return &views.CertInfo{Subject: c.Subject, Issuer: c.Issuer, NotAfter: c.NotAfter,
		ExpiresSoon: service.Credentials{ClientCert: c}.CertExpiresSoon(now),
		Expired:     !c.NotAfter.IsZero() && !now.Before(c.NotAfter)}
}

func clusterViews(cs []service.ClusterInfo) []views.ClusterInfo {
	return viewsOf(cs, clusterView)
}

func healthView(h service.ClusterHealth) views.ClusterHealth {
	return views.ClusterHealth{Reachable: h.Reachable, Brokers: h.Brokers, Topics: h.Topics, Error: h.Error}
}

func connectClusterViews(cs []service.ConnectClusterInfo) []views.ConnectClusterInfo {
	return viewsOf(cs, func(c service.ConnectClusterInfo) views.ConnectClusterInfo {
		return views.ConnectClusterInfo{Name: c.Name, URLs: c.URLs, KafkaCluster: c.KafkaCluster, Username: c.Username,
			PasswordSet: c.PasswordSet, CAPEM: c.CAPEM, ClientCertSet: c.ClientCertPEM != "" && c.ClientKeySet,
			BearerTokenSet: c.BearerTokenSet, ConfigProvider: c.ConfigProvider, CreatedAt: c.CreatedAt}
	})
}

// roles are the roles a form offers, least first.
var roles = []string{string(service.RoleViewer), string(service.RoleOperator), string(service.RoleAdmin)}

func userViews(us []service.UserInfo) []views.UserInfo {
	return viewsOf(us, func(u service.UserInfo) views.UserInfo {
		return views.UserInfo{Name: u.Name, Role: string(u.Role), CreatedAt: u.CreatedAt}
	})
}

func tokenView(t service.TokenInfo) views.TokenInfo {
	v := views.TokenInfo{Name: t.Name, Role: string(t.Role), CreatedBy: t.CreatedBy, CreatedAt: t.CreatedAt, Owner: t.Owner}
	if t.ExpiresAt != nil {
		v.ExpiresAt = *t.ExpiresAt
	}
	if t.LastUsedAt != nil {
		v.LastUsedAt = *t.LastUsedAt
	}
	return v
}

func tokenViews(ts []service.TokenInfo) []views.TokenInfo {
	return viewsOf(ts, tokenView)
}

func auditViews(es []service.AuditEntry) []views.AuditEntry {
	return viewsOf(es, func(e service.AuditEntry) views.AuditEntry {
		return views.AuditEntry{ID: e.ID, At: e.At, Actor: e.Actor, Role: e.Role, Address: e.Address,
			Action: e.Action, Object: e.Object, Outcome: e.Outcome}
	})
}
