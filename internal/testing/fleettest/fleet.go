// Package fleettest writes the large fleets that benchmarks and memory
// tests read: n MemberClusters or n placements, each as serve meets them at
// 10,000 clusters (labels, a taint, an identity; a PickN policy with
// affinity and tolerations, a rolling update).
package fleettest

import (
	"fmt"
	"strings"
	"testing/fstest"
)

// PerFile is how many objects Repo writes to a file.
const PerFile = 100

// Member is the manifest of MemberCluster member<i>, a simulated member.
func Member(i int) string {
	return fmt.Sprintf(`apiVersion: cluster.kubernetes-fleet.io/v1beta1
kind: MemberCluster
metadata:
  name: member%d
  labels: {env: prod, region: r%d}
  annotations: {gitfleet.io/driver: simulated}
spec:
  identity: {kind: ServiceAccount, name: fleet-member-agent-member%d, namespace: fleet-system, apiGroup: ""}
  taints: [{key: maintenance, value: "true", effect: NoSchedule}]
`, i, i%10, i)
}

// Placement is the manifest of ClusterResourcePlacement app<i>, which
// selects namespace app<i>.
func Placement(i int) string {
	return fmt.Sprintf(`apiVersion: placement.kubernetes-fleet.io/v1beta1
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
`, i, i)
}

// Repo is a fleet repository of n members (or n placements), PerFile
// objects a file under fleet/.
func Repo(n int, placements bool) fstest.MapFS {
	object := Member
	if placements {
		object = Placement
	}
	fsys := fstest.MapFS{}
	var b strings.Builder
	for i := range n {
		b.WriteString(object(i))
		b.WriteString("---\n")
		if (i+1)%PerFile == 0 || i == n-1 {
			fsys[fmt.Sprintf("fleet/f%05d.yaml", i)] = &fstest.MapFile{Data: []byte(b.String())}
			b.Reset()
		}
	}
	return fsys
}
