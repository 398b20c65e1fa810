// Package restlimits gives gitfleet's clients of an API server client-side
// rate limits fit for a controller of a fleet. client-go's defaults (5 QPS,
// burst 10) pace writes that are O(1) per cluster, and the members' joins
// and heartbeats, to a crawl: a 100-cluster stage waited on the client's
// own limiter, and 1,000 members took minutes to join (BenchmarkPullFleet).
package restlimits

import "k8s.io/client-go/rest"

// Limits used where a rest.Config sets none.
const (
	QPS   = 500
	Burst = 1000
)

// Default is a copy of rc with QPS and Burst where rc sets none.
func Default(rc *rest.Config) *rest.Config {
	rc = rest.CopyConfig(rc)
	if rc.QPS == 0 {
		rc.QPS = QPS
	}
	if rc.Burst == 0 {
		rc.Burst = Burst
	}
	return rc
}
