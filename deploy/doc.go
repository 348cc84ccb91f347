// Package deploy holds no code: its tests prove the deployment files beside
// it (the Dockerfile's image, the Helm chart, the systemd unit, the
// Prometheus rules and the Grafana dashboard) with the real tools — buildah,
// helm, systemd-analyze, promtool and Prometheus. .ci/run installs them; a
// test skips, saying so, only where its tool is absent.
package deploy
