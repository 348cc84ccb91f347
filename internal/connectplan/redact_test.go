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
		{name: "colon separator", in: "A.ssl.truststore.password: s3cret", want: "A.ssl.truststore.password:", removed: true},
		{name: "comment kept", in: "# password = s3cret is not a property", want: "# password = s3cret is not a property"},
		{name: "empty value", in: "A.ssl.key.password =", want: "A.ssl.key.password ="},
		{name: "unknown setting", in: "A.vendor.login.option = s3cret\nA->B.topics = orders", want: "A.vendor.login.option =\nA->B.topics = orders", removed: true},
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
