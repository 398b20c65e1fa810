package gitops_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/status"
)

// propertyFleet is the quickstart with property annotations on its
// simulated members (available CPU 4, 16 and 8) and a PickN placement of
// two clusters that prefers the most available CPU.
func propertyFleet(t *testing.T) map[string][]byte {
	files := quickstartFleet(t)
	members := string(files["members.yaml"])
	for i, cpu := range []string{"4", "16", "8"} {
		marker := fmt.Sprintf("name: member%d\n", i+1)
		at := strings.Index(members, marker)
		driver := strings.Index(members[at:], "gitfleet.io/driver: simulated\n") + at
		members = members[:driver] + fmt.Sprintf("%s: %q\n    %s: \"3\"\n    ", fleet.AvailableCPUCapacityProperty, cpu, fleet.NodeCountProperty) + members[driver:]
	}
	files["members.yaml"] = []byte(members)
	files["placement.yaml"] = []byte(`apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourcePlacement
metadata:
  name: example-placement
spec:
  resourceSelectors:
    - {group: "", kind: Namespace, name: test-namespace, version: v1}
  policy:
    placementType: PickN
    numberOfClusters: 2
    affinity:
      clusterAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 100
            preference:
              propertySorter: {name: resources.kubernetes-fleet.io/available-cpu, sortOrder: Descending}
  strategy:
    type: External
`)
	delete(files, "run.yaml")
	return files
}

// TestPropertySortedPlacementOnBothHubs: serve, on the embedded hub and on
// a Kubernetes hub, reports the simulated members' annotations as their
// status properties (in Git, and on the hub's MemberCluster status) and
// schedules the PickN placement on the two members with the most
// available CPU.
func TestPropertySortedPlacementOnBothHubs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs gitfleet serve")
	}
	for _, hubKind := range []string{"embedded", "kube"} {
		t.Run(hubKind, func(t *testing.T) {
			r := newFleetRepo(t, propertyFleet(t))
			var k kubectl
			if hubKind == "kube" {
				k, _ = startKubeHub(t)
				startServe(t, serveOnKubeHub(r, k, t.TempDir())...)
			} else {
				startServe(t, "--repo", "file://"+r.remote, "--cache-dir", t.TempDir(), "--interval", "100ms",
					"--status-interval", "50ms", "--metrics-addr", "")
			}
			eventually(t, "member2's properties in status/clusters/member2.yaml", func() bool {
				data := r.file("status/clusters/member2.yaml")
				if data == nil {
					return false
				}
				obj, err := status.DecodeFile("status/clusters/member2.yaml", data)
				if err != nil {
					t.Fatal(err)
				}
				m := obj.(*fleet.MemberCluster)
				cpu, ok := m.Status.ResourceUsage.Available[corev1.ResourceCPU]
				return ok && cpu.Cmp(resource.MustParse("16")) == 0 && m.Status.Properties[fleet.NodeCountProperty].Value == "3"
			})
			eventually(t, "bindings for member2 and member3 only", func() bool {
				return r.file("status/bindings/example-placement/member2.yaml") != nil &&
					r.file("status/bindings/example-placement/member3.yaml") != nil
			})
			if r.file("status/bindings/example-placement/member1.yaml") != nil {
				t.Errorf("member1, with the least available CPU, got a binding")
			}
			if hubKind == "kube" {
				out := k.run("get", "memberclusters", "member2")
				if !strings.Contains(out, "AVAILABLE-CPU") || !strings.Contains(strings.SplitN(out, "\n", 2)[1], "16") {
					t.Errorf("kubectl get memberclusters member2:\n%s\nwant its available CPU, 16, in KubeFleet's column", out)
				}
			}
		})
	}
}
