package connectplan

import (
	"strings"
	"testing"
)

// A refused mm2.properties is shown again without its secrets, values
// continued on the next lines included, and says so.
func TestRedactedProperties(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		removed        bool
	}{
		{name: "no secret", in: "clusters = A, B\nA.bootstrap.servers = a:9092", want: "clusters = A, B\nA.bootstrap.servers = a:9092"},
		{name: "jaas", in: "A.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required username=\"u\" password=\"s3cret\";\nA->B.enabled = true",
			want: "A.sasl.jaas.config =\nA->B.enabled = true", removed: true},
		{name: "continued", in: "B.sasl.jaas.config = x required \\\n    password=\"s3cret\";\nB.bootstrap.servers=b:9092",
			want: "B.sasl.jaas.config =\n\nB.bootstrap.servers=b:9092", removed: true},
		{name: "colon separator", in: "A.ssl.truststore.password: s3cret", want: "A.ssl.truststore.password =", removed: true},
		{name: "comment kept", in: "# password = s3cret is not a property", want: "# password = s3cret is not a property"},
		{name: "empty value", in: "A.ssl.key.password =", want: "A.ssl.key.password ="},
		{name: "unknown setting", in: "A.vendor.login.option = s3cret\nA->B.topics = orders", want: "A.vendor.login.option =\nA->B.topics = orders", removed: true},
		{name: "space separator", in: "ssl.keystore.password s3cret", want: "ssl.keystore.password =", removed: true},
		{name: "tab separator", in: "A.ssl.key.password\ts3cret", want: "A.ssl.key.password =", removed: true},
		{name: "colon in the value", in: "ssl.key.password pa:s3cret", want: "ssl.key.password =", removed: true},
		{name: "escaped separator in the key", in: `odd\ key = s3cret`, want: "odd key =", removed: true},
		{name: "key that looks like a harmless one", in: "emit.hidden.x = s3cret\nsasl.emit.password = s3cret", want: "emit.hidden.x =\nsasl.emit.password =", removed: true},
		{name: "harmless with a space", in: "tasks.max 4", want: "tasks.max 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, removed := RedactedProperties(tc.in)
			if got != tc.want || removed != tc.removed {
				t.Fatalf("got %q (removed %v), want %q (%v)", got, removed, tc.want, tc.removed)
			}
			if tc.removed && strings.Contains(got, "s3cret") {
				t.Fatalf("secret shown again: %q", got)
			}
		})
	}
}
