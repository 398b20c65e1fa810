package simulate

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// fleetOf returns a repository of n simulated members in ten stages
// (label stage=<i>), maxConcurrency 10%, one config map, and a run.
func fleetOf(n int) map[string][]byte {
	var members strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&members, `---
apiVersion: cluster.kubernetes-fleet.io/v1beta1
kind: MemberCluster
metadata:
  name: member-%05d
  labels: {stage: "%d"}
  annotations: {gitfleet.io/driver: simulated}
spec: {}
`, i, i%10)
	}
	var stages strings.Builder
	for s := 0; s < 10; s++ {
		fmt.Fprintf(&stages, "    - name: stage%d\n      labelSelector: {matchLabels: {stage: \"%d\"}}\n      maxConcurrency: \"10%%\"\n", s, s)
	}
	return map[string][]byte{
		"members.yaml": []byte(members.String()),
		"fleet.yaml": []byte(`apiVersion: v1
kind: Namespace
metadata: {name: app}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: app-config, namespace: app}
data: {key: value}
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourcePlacement
metadata: {name: app}
spec:
  resourceSelectors: [{group: "", version: v1, kind: Namespace, name: app}]
  policy: {placementType: PickAll}
  strategy: {type: External}
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterStagedUpdateStrategy
metadata: {name: ten-stages}
spec:
  stages:
` + stages.String() + `---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterStagedUpdateRun
metadata: {name: rollout}
spec: {placementName: app, stagedRolloutStrategyName: ten-stages, state: Run}
`),
	}
}

// BenchmarkSimulateFleet is the whole of `gitfleet simulate` on a fleet:
// render, scheduler, engine, simulated delivery and placement status, in
// virtual time, from the commit to a Succeeded run.
func BenchmarkSimulateFleet(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			repo := newRepo(b, fleetOf(n))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res, err := Run(context.Background(), Options{Repo: repo})
				if err != nil {
					b.Fatal(err)
				}
				run, err := res.Hub.GetUpdateRun(context.Background(), keyOf("rollout"))
				if err != nil || run.Phase() != "Succeeded" {
					b.Fatalf("run did not succeed: %v %v", err, run.Status.Conditions)
				}
			}
		})
	}
}
