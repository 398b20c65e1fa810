package renderproc_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gitfleet/gitfleet/internal/renderproc"
	"github.com/gitfleet/gitfleet/render"
)

// fleetOf is a repository of n MemberClusters or n placements (with a
// policy, tolerations and a rolling update), 100 objects a file: the
// 10,000-cluster fleets of the README, gitops' and simulate's benchmarks.
func fleetOf(n int, placements bool) fstest.MapFS {
	fsys := fstest.MapFS{}
	var b strings.Builder
	for i := range n {
		if placements {
			fmt.Fprintf(&b, `apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourcePlacement
metadata: {name: app%d}
spec:
  resourceSelectors: [{group: "", version: v1, kind: Namespace, name: app%d}]
  policy:
    placementType: PickN
    numberOfClusters: 3
    affinity:
      clusterAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          clusterSelectorTerms: [{labelSelector: {matchLabels: {env: prod}}}]
    tolerations: [{key: gpu, operator: Equal, value: "true", effect: NoSchedule}]
  strategy:
    type: RollingUpdate
    rollingUpdate: {maxUnavailable: 25%%, maxSurge: 1, unavailablePeriodSeconds: 30}
---
`, i, i)
		} else {
			fmt.Fprintf(&b, `apiVersion: cluster.kubernetes-fleet.io/v1beta1
kind: MemberCluster
metadata:
  name: member%d
  labels: {env: prod, region: r%d}
  annotations: {gitfleet.io/driver: simulated}
spec:
  identity: {kind: ServiceAccount, name: fleet-member-agent-member%d, namespace: fleet-system, apiGroup: ""}
  taints: [{key: maintenance, value: "true", effect: NoSchedule}]
---
`, i, i%10, i)
		}
		if (i+1)%100 == 0 || i == n-1 {
			fsys[fmt.Sprintf("fleet/f%05d.yaml", i)] = &fstest.MapFile{Data: []byte(b.String())}
			b.Reset()
		}
	}
	return fsys
}

// TestTenThousandClusterFleetsFitTheDefaultMemoryLimit: the first render
// of a fleet of 10,000 members, or of 10,000 placements, every object
// validated by config/crd's schemas, fits in half of serve's default
// --render-memory-limit, so the default leaves it twice what it needs.
func TestTenThousandClusterFleetsFitTheDefaultMemoryLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("renders 20,000 objects")
	}
	for _, tc := range []struct {
		name       string
		placements bool
	}{{"members", false}, {"placements", true}} {
		t.Run(tc.name, func(t *testing.T) {
			lim := int64(renderproc.DefaultMemory / 2)
			c, err := renderproc.Render(context.Background(), fleetOf(10000, tc.placements), render.Options{}, renderproc.Limits{Memory: lim})
			if err != nil {
				t.Fatalf("limit %s: %v", renderproc.Bytes(lim), err)
			}
			if n := len(c.Members) + len(c.Placements); n != 10000 || len(c.Errors) > 0 {
				t.Fatalf("%d objects, errors %v", n, c.Errors)
			}
		})
	}
}
