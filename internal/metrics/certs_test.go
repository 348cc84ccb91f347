package metrics

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestCertCollectorReportsSecondsToExpiry(t *testing.T) {
	now := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	c := NewCertCollector(func(context.Context) ([]CertExpiry, error) {
		return []CertExpiry{
			{Cluster: "east", NotAfter: now.Add(10 * 24 * time.Hour)},
			{Cluster: "B", Task: "dr", NotAfter: now.Add(-time.Hour)},
		}, nil
	}, nil)
	c.now = func() time.Time { return now }
	want := `
# HELP kmirror_client_certificate_expiry_seconds Seconds until the client certificate kmirror presents to the cluster expires (negative once expired); task is set for a task's peer given by address.
# TYPE kmirror_client_certificate_expiry_seconds gauge
kmirror_client_certificate_expiry_seconds{cluster="B",task="dr"} -3600
kmirror_client_certificate_expiry_seconds{cluster="east",task=""} 864000
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	failing := NewCertCollector(func(context.Context) ([]CertExpiry, error) { return nil, errors.New("db closed") }, nil)
	if n := testutil.CollectAndCount(failing); n != 0 {
		t.Fatalf("%d series from a failing list, want none", n)
	}
}
