package restlimits

import (
	"testing"

	"k8s.io/client-go/rest"
)

func TestDefaultRaisesOnlyTheLimitsAConfigLeavesUnset(t *testing.T) {
	for _, tc := range []struct {
		name      string
		qps       float32
		burst     int
		wantQPS   float32
		wantBurst int
	}{
		{"neither set", 0, 0, QPS, Burst},
		{"QPS set", 20, 0, 20, Burst},
		{"burst set", 0, 30, QPS, 30},
		{"both set", 20, 30, 20, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := &rest.Config{Host: "https://hub", QPS: tc.qps, Burst: tc.burst}
			got := Default(rc)
			if got.QPS != tc.wantQPS || got.Burst != tc.wantBurst {
				t.Errorf("QPS, Burst = %v, %d, want %v, %d", got.QPS, got.Burst, tc.wantQPS, tc.wantBurst)
			}
			if rc.QPS != tc.qps || rc.Burst != tc.burst {
				t.Errorf("the caller's config changed to %v, %d", rc.QPS, rc.Burst)
			}
			if got.Host != rc.Host {
				t.Errorf("Host = %q, want the caller's %q", got.Host, rc.Host)
			}
		})
	}
}
