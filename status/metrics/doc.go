// Package metrics is gitfleet's Prometheus instrumentation: KubeFleet's
// three update-run metrics, exactly as upstream names and labels them (so
// KubeFleet dashboards and alerts keep working), and gitfleet's own, for
// what only a Git-driven daemon has: fetch/render timing, status write-back,
// version skew across clusters and stage progress.
//
// Metrics implements the update-run engine's Recorder; Handler serves
// /metrics, /healthz and /readyz.
package metrics
