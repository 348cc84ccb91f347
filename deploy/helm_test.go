package deploy

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

const chartDir = "helm/kmirror"

// manifest is the part of a rendered object the tests look at.
type manifest struct {
	Kind     string
	Metadata struct {
		Name        string
		Annotations map[string]string
	}
	Data map[string]string
	Spec struct {
		Replicas *int
		Strategy struct{ Type string }
		Template struct {
			Spec struct {
				AutomountServiceAccountToken *bool `yaml:"automountServiceAccountToken"`
				SecurityContext              struct {
					RunAsNonRoot        *bool  `yaml:"runAsNonRoot"`
					RunAsUser           int    `yaml:"runAsUser"`
					FSGroup             int    `yaml:"fsGroup"`
					FSGroupChangePolicy string `yaml:"fsGroupChangePolicy"`
				} `yaml:"securityContext"`
				Containers []struct {
					Args []string
					Env  []struct {
						Name      string
						Value     string
						ValueFrom *struct {
							SecretKeyRef struct{ Name, Key string } `yaml:"secretKeyRef"`
						} `yaml:"valueFrom"`
					}
					Resources struct {
						Requests map[string]string
					}
					SecurityContext struct {
						ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
						AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
					} `yaml:"securityContext"`
					VolumeMounts []struct {
						Name      string
						MountPath string `yaml:"mountPath"`
					} `yaml:"volumeMounts"`
				}
				Volumes []struct {
					Name                  string
					PersistentVolumeClaim *struct {
						ClaimName string `yaml:"claimName"`
					} `yaml:"persistentVolumeClaim"`
				}
			}
		}
		Endpoints []struct{ Path, Scheme string }
	}
}

// probeSet is the container probes of a rendered Deployment.
type probeSet struct {
	Spec struct {
		Template struct {
			Spec struct {
				Containers []struct {
					LivenessProbe  *probe `yaml:"livenessProbe"`
					ReadinessProbe *probe `yaml:"readinessProbe"`
					StartupProbe   *probe `yaml:"startupProbe"`
				}
			}
		}
	}
}

type probe struct {
	HTTPGet struct{ Path, Scheme string } `yaml:"httpGet"`
}

func renderChart(t *testing.T, ctx context.Context, helm string, set ...string) (map[string]manifest, map[string]probeSet) {
	t.Helper()
	args := []string{"template", "kmirror", chartDir}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out := run(t, ctx, ".", helm, args...)
	objs, probes := map[string]manifest{}, map[string]probeSet{}
	dec := yaml.NewDecoder(strings.NewReader(out))
	decP := yaml.NewDecoder(strings.NewReader(out))
	for {
		var m manifest
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("helm template output: %v\n%s", err, out)
		}
		var p probeSet
		if err := decP.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if m.Kind == "" {
			continue
		}
		if _, dup := objs[m.Kind]; dup {
			t.Fatalf("two objects of kind %s: the tests expect one", m.Kind)
		}
		objs[m.Kind], probes[m.Kind] = m, p
	}
	return objs, probes
}

func TestHelmChartLintsAndRenders(t *testing.T) {
	helm := helmBin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	for _, tc := range []struct {
		name        string
		set         []string
		wantKinds   []string
		wantArgs    []string
		notArgs     []string
		wantScheme  string
		wantSecret  bool
		secretName  string
		claimName   string
		monitorPath string
		secretData  map[string]string // decoded, when given by values
	}{
		{
			name:      "defaults: plain HTTP behind a TLS-terminating ingress, whose X-Forwarded-For is believed from the private ranges",
			wantKinds: []string{"Deployment", "Secret", "Service", "PersistentVolumeClaim"},
			wantArgs: []string{"serve", "--listen", "0.0.0.0:8080", "--data-dir", "/data", "--allow-insecure-http",
				"--trusted-proxies", "10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,fc00::/7"},
			notArgs: []string{"--tls-cert"}, wantScheme: "HTTP", wantSecret: true, secretName: "kmirror", claimName: "kmirror-data",
		},
		{
			name:      "only the proxy's own network trusted",
			set:       []string{"trustedProxies={10.42.0.0/16}"},
			wantKinds: []string{"Deployment", "Secret", "Service", "PersistentVolumeClaim"},
			wantArgs:  []string{"--trusted-proxies", "10.42.0.0/16"},
			notArgs:   []string{"10.0.0.0/8"}, wantScheme: "HTTP", wantSecret: true, secretName: "kmirror", claimName: "kmirror-data",
		},
		{
			name:      "no proxy: X-Forwarded-For is never believed",
			set:       []string{"trustedProxies=null"},
			wantKinds: []string{"Deployment", "Secret", "Service", "PersistentVolumeClaim"},
			notArgs:   []string{"--trusted-proxies"}, wantScheme: "HTTP", wantSecret: true, secretName: "kmirror", claimName: "kmirror-data",
		},
		{
			name:      "TLS from a Secret, ServiceMonitor, existing Secret and claim",
			set:       []string{"tls.enabled=true", "tls.secretName=kmirror-tls", "serviceMonitor.enabled=true", "auth.existingSecret=ops-kmirror", "persistence.existingClaim=old-data"},
			wantKinds: []string{"Deployment", "Service", "ServiceMonitor"},
			wantArgs:  []string{"--tls-cert", "/etc/kmirror/tls/tls.crt", "--tls-key", "/etc/kmirror/tls/tls.key"},
			notArgs:   []string{"--allow-insecure-http"}, wantScheme: "HTTPS", secretName: "ops-kmirror", claimName: "old-data", monitorPath: "/metrics",
		},
		{
			name:      "given password and token",
			set:       []string{"auth.adminPassword=pw-from-values", "auth.apiToken=token-from-values"},
			wantKinds: []string{"Deployment", "Secret", "Service", "PersistentVolumeClaim"},
			wantArgs:  []string{"--allow-insecure-http"}, wantScheme: "HTTP", wantSecret: true, secretName: "kmirror", claimName: "kmirror-data",
			secretData: map[string]string{"admin-password": "pw-from-values", "api-token": "token-from-values"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lint := []string{"lint", "--strict", chartDir}
			for _, s := range tc.set {
				lint = append(lint, "--set", s)
			}
			run(t, ctx, ".", helm, lint...)
			objs, probes := renderChart(t, ctx, helm, tc.set...)
			var kinds []string
			for k := range objs {
				kinds = append(kinds, k)
			}
			slices.Sort(kinds)
			want := slices.Clone(tc.wantKinds)
			slices.Sort(want)
			if !slices.Equal(kinds, want) {
				t.Fatalf("rendered kinds %v, want %v", kinds, want)
			}

			d := objs["Deployment"]
			if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != "Recreate" {
				t.Errorf("replicas %v strategy %q: want exactly 1, Recreate (SQLite has one writer)", d.Spec.Replicas, d.Spec.Strategy.Type)
			}
			ps := d.Spec.Template.Spec
			if ps.SecurityContext.RunAsNonRoot == nil || !*ps.SecurityContext.RunAsNonRoot || ps.SecurityContext.RunAsUser == 0 {
				t.Errorf("pod security context %+v: want non-root", ps.SecurityContext)
			}
			// The volume is the pod's group's (its root root:65532, 2775,
			// which kmirror leaves as it is: its files go in /data/kmirror),
			// and kubelet does not walk it at every start.
			if sc := ps.SecurityContext; sc.FSGroup != sc.RunAsUser || sc.FSGroupChangePolicy != "OnRootMismatch" {
				t.Errorf("pod security context %+v: want fsGroup %d with fsGroupChangePolicy OnRootMismatch", sc, sc.RunAsUser)
			}
			if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken {
				t.Error("the pod mounts a service account token it does not need")
			}
			if len(ps.Containers) != 1 {
				t.Fatalf("%d containers", len(ps.Containers))
			}
			c := ps.Containers[0]
			if sc := c.SecurityContext; sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				t.Errorf("container security context: want a read-only root filesystem and no privilege escalation")
			}
			for _, a := range tc.wantArgs {
				if !slices.Contains(c.Args, a) {
					t.Errorf("args %q lack %q", c.Args, a)
				}
			}
			for _, a := range tc.notArgs {
				if slices.Contains(c.Args, a) {
					t.Errorf("args %q have %q", c.Args, a)
				}
			}
			if c.Resources.Requests["cpu"] == "" || c.Resources.Requests["memory"] == "" {
				t.Errorf("resource requests %v: want cpu and memory", c.Resources.Requests)
			}
			pc := probes["Deployment"].Spec.Template.Spec.Containers[0]
			for name, p := range map[string]*probe{"liveness": pc.LivenessProbe, "readiness": pc.ReadinessProbe, "startup": pc.StartupProbe} {
				if p == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Scheme != tc.wantScheme {
					t.Errorf("%s probe %+v: want %s /healthz", name, p, tc.wantScheme)
				}
			}
			envFrom := map[string]string{}
			for _, e := range c.Env {
				if e.Value != "" {
					t.Errorf("env %s has a literal value: secrets come from the Secret", e.Name)
				}
				if e.ValueFrom != nil {
					envFrom[e.Name] = e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
				}
			}
			if envFrom["KMIRROR_ADMIN_PASSWORD"] != tc.secretName+"/admin-password" || envFrom["KMIRROR_TOKEN"] != tc.secretName+"/api-token" {
				t.Errorf("secret env %v: want both from Secret %s", envFrom, tc.secretName)
			}
			mounts := map[string]string{}
			for _, m := range c.VolumeMounts {
				mounts[m.MountPath] = m.Name
			}
			if mounts["/data"] == "" || mounts["/tmp"] == "" {
				t.Errorf("mounts %v: want /data (the database) and /tmp (the root is read-only)", mounts)
			}
			claim := ""
			for _, v := range ps.Volumes {
				if v.Name == mounts["/data"] && v.PersistentVolumeClaim != nil {
					claim = v.PersistentVolumeClaim.ClaimName
				}
			}
			if claim != tc.claimName {
				t.Errorf("/data is on claim %q, want %q", claim, tc.claimName)
			}
			if pvc, ok := objs["PersistentVolumeClaim"]; ok && pvc.Metadata.Annotations["helm.sh/resource-policy"] != "keep" {
				t.Error("the database claim would be deleted by helm uninstall")
			}
			if tc.wantSecret {
				s := objs["Secret"]
				if s.Metadata.Name != tc.secretName || s.Data["admin-password"] == "" || s.Data["api-token"] == "" {
					t.Errorf("secret %s data keys %v: want admin-password and api-token", s.Metadata.Name, s.Data)
				}
				for k, want := range tc.secretData {
					if got, err := base64.StdEncoding.DecodeString(s.Data[k]); err != nil || string(got) != want {
						t.Errorf("secret %s: %q (%v), want %q", k, got, err, want)
					}
				}
			}
			if tc.monitorPath != "" {
				eps := objs["ServiceMonitor"].Spec.Endpoints
				if len(eps) != 1 || eps[0].Path != tc.monitorPath || !strings.EqualFold(eps[0].Scheme, tc.wantScheme) {
					t.Errorf("ServiceMonitor endpoints %+v: want %s %s", eps, tc.wantScheme, tc.monitorPath)
				}
			}
		})
	}

	// TLS without its Secret is refused with a message saying what to set.
	out, err := runErr(ctx, ".", helm, "template", "kmirror", chartDir, "--set", "tls.enabled=true")
	if err == nil || !bytes.Contains([]byte(out), []byte("tls.secretName")) {
		t.Errorf("tls.enabled without tls.secretName: err %v, output:\n%s", err, out)
	}
}
