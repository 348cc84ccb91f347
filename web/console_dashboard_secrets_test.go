package web

import (
	"strings"
	"testing"

	"github.com/kmirror/kmirror/internal/cluster"
)

// A refused import shows the pasted JSON again without any secret.
func TestWithoutSecretsBlanksEverySecret(t *testing.T) {
	raw := `{"peer":{"password":"pw-1","client_key_pem":"-----BEGIN PRIVATE KEY-----\nKEY-2\n-----END PRIVATE KEY-----","client_key_password":"kp-3","oauth":{"client_id":"c","client_secret":"cs-4"}}}`
	decoded := cluster.Secrets{Password: "pw-1", ClientKeyPEM: "-----BEGIN PRIVATE KEY-----\nKEY-2\n-----END PRIVATE KEY-----", ClientKeyPassword: "kp-3", OAuthClientSecret: "cs-4"}
	out, removed := withoutSecrets(raw, decoded)
	if !removed || out == "" {
		t.Fatalf("removed %v, echo %q", removed, out)
	}
	for _, s := range []string{"pw-1", "KEY-2", "kp-3", "cs-4"} {
		if strings.Contains(out, s) {
			t.Errorf("echo shows %s: %s", s, out)
		}
	}
	if !strings.Contains(out, `"client_id":"c"`) {
		t.Errorf("echo lost what is not secret: %s", out)
	}
	// A secret spelled so the pattern misses it: nothing is echoed.
	sneaky := `{"peer":{"Pass\u0077ord":"pw-1"}}`
	if out, _ := withoutSecrets(sneaky, cluster.Secrets{Password: "pw-1"}); out != "" {
		t.Errorf("echoed %q", out)
	}
}
