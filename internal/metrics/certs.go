package metrics

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// CertExpiry is one client certificate kmirror presents to a cluster.
type CertExpiry struct {
	// Cluster is the registered cluster, or a task's peer alias when Task
	// is set (a peer given by address).
	Cluster, Task string
	NotAfter      time.Time
}

var certExpiryDesc = prometheus.NewDesc("kmirror_client_certificate_expiry_seconds",
	"Seconds until the client certificate kmirror presents to the cluster expires (negative once expired); task is set for a task's peer given by address.",
	[]string{"cluster", "task"}, nil)

// CertCollector exports the client certificates' expiry, read at scrape
// time from list (the service's), so a certificate registered or replaced
// shows at the next scrape.
type CertCollector struct {
	list func(context.Context) ([]CertExpiry, error)
	now  func() time.Time
	log  *slog.Logger
}

// NewCertCollector reads list at every scrape.
func NewCertCollector(list func(context.Context) ([]CertExpiry, error), log *slog.Logger) *CertCollector {
	if log == nil {
		log = slog.Default()
	}
	return &CertCollector{list: list, now: time.Now, log: log}
}

// Describe implements prometheus.Collector.
func (c *CertCollector) Describe(ch chan<- *prometheus.Desc) { ch <- certExpiryDesc }

// Collect implements prometheus.Collector.
func (c *CertCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	certs, err := c.list(ctx)
	if err != nil {
		// A scrape still serves the task metrics; the gap in this series
		// is what the log explains.
		c.log.Warn("client certificates not listed for metrics", "err", err)
		return
	}
	now := c.now()
	for _, e := range certs {
		ch <- prometheus.MustNewConstMetric(certExpiryDesc, prometheus.GaugeValue, e.NotAfter.Sub(now).Seconds(), e.Cluster, e.Task)
	}
}
