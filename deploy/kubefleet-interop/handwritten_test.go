package kubefleetinterop

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/internal/testing/kubetest"
)

// handWrittenHub is what KubeFleet's hub agent writes for member1 when its
// MemberCluster appears (pkg/controllers/membercluster: the namespace, the
// Role and RoleBinding for spec.identity, the InternalMemberCluster in
// state Join) and what its work generator writes for a binding (a Work),
// written here by hand on a hub that serves gitfleet's CRDs.
const handWrittenHub = `
apiVersion: v1
kind: Namespace
metadata:
  name: fleet-member-member1
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: fleet-role-member1
  namespace: fleet-member-member1
rules:
- {apiGroups: [cluster.kubernetes-fleet.io], resources: ["*"], verbs: ["*"]}
- {apiGroups: [placement.kubernetes-fleet.io], resources: ["*"], verbs: ["*"]}
- {apiGroups: [networking.fleet.azure.com], resources: ["*"], verbs: ["*"]}
- {apiGroups: [""], resources: [events], verbs: [get, list, update, patch, watch, create]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: fleet-rolebinding-member1
  namespace: fleet-member-member1
subjects:
- {kind: ServiceAccount, name: fleet-member-agent-member1, namespace: fleet-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: fleet-role-member1}
---
apiVersion: cluster.kubernetes-fleet.io/v1beta1
kind: InternalMemberCluster
metadata:
  name: member1
  namespace: fleet-member-member1
spec:
  state: Join
  heartbeatPeriodSeconds: 1
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: Work
metadata:
  name: example-placement-work
  namespace: fleet-member-member1
  labels:
    kubernetes-fleet.io/parent-CRP: example-placement
spec:
  workload:
    manifests:
    - apiVersion: v1
      kind: Namespace
      metadata: {name: test-namespace}
    - apiVersion: v1
      kind: ConfigMap
      metadata: {name: test-cm, namespace: test-namespace}
      data: {key: value1}
`

// TestKubeFleetMemberAgentAppliesAHandWrittenWork runs KubeFleet's member
// agent against a hub serving gitfleet's CRDs, with the hub-side objects
// written by hand as KubeFleet's hub agent writes them: the agent joins
// through the InternalMemberCluster (Joined, Healthy, heartbeats), applies
// the Work to the member (AppliedWork, the Work's Applied and Available
// conditions) and follows a change of it. It pins what KubeFleet's agent
// needs of a hub apart from gitfleet's hub-side controllers, which
// TestKubeFleetMemberAgentJoinsAGitfleetHub adds.
func TestKubeFleetMemberAgentAppliesAHandWrittenWork(t *testing.T) {
	src := kubefleetSource(t)
	bin := memberAgentBinary(t, src)
	clusters := kubetest.Start(t, "hub", "member1")
	hub, member := clusters[0], clusters[1]
	installHubCRDs(t, hub)
	installMemberSideCRDs(t, src, member)

	ctx := await.Context(t)
	hubClient := hub.Client()
	for _, doc := range splitYAML(t, handWrittenHub) {
		if err := hubClient.Create(ctx, doc); err != nil {
			t.Fatalf("creating %s %s on the hub: %v", doc.GetKind(), doc.GetName(), err)
		}
	}
	token := identityToken(t, hub, "fleet-system", "fleet-member-agent-member1")
	agent := startMemberAgent(t, bin, "member1", hub.Server, token, member)
	var imc *unstructured.Unstructured
	until(t, agent, "the member agent to join through the InternalMemberCluster", func() bool {
		imc = get(ctx, hubClient, "cluster.kubernetes-fleet.io/v1beta1", "InternalMemberCluster", "fleet-member-member1", "member1")
		conds := agentConditions(imc)
		return condition(conds, "Joined") == "True" && condition(conds, "Healthy") == "True"
	})
	beat := heartbeat(imc)
	until(t, agent, "a second heartbeat", func() bool {
		return heartbeat(get(ctx, hubClient, "cluster.kubernetes-fleet.io/v1beta1", "InternalMemberCluster", "fleet-member-member1", "member1")) != beat
	})

	until(t, agent, "the Work applied on the member", func() bool {
		return member.ConfigMapValue("test-namespace", "test-cm", "key") == "value1"
	})
	until(t, agent, "the Work's Applied and Available conditions", func() bool {
		conds := conditions(get(ctx, hubClient, "placement.kubernetes-fleet.io/v1beta1", "Work", "fleet-member-member1", "example-placement-work"), "status", "conditions")
		return condition(conds, "Applied") == "True" && condition(conds, "Available") == "True"
	})
	if aw := member.Get("placement.kubernetes-fleet.io/v1beta1", "AppliedWork", "", "example-placement-work"); aw == nil {
		t.Error("no AppliedWork example-placement-work on the member")
	}
	work := get(ctx, hubClient, "placement.kubernetes-fleet.io/v1beta1", "Work", "fleet-member-member1", "example-placement-work")
	if !slices.Contains(work.GetFinalizers(), "kubernetes-fleet.io/work-cleanup") {
		t.Errorf("the applied Work's finalizers = %v; want KubeFleet's kubernetes-fleet.io/work-cleanup", work.GetFinalizers())
	}

	work = get(ctx, hubClient, "placement.kubernetes-fleet.io/v1beta1", "Work", "fleet-member-member1", "example-placement-work")
	manifests, _, _ := unstructured.NestedSlice(work.Object, "spec", "workload", "manifests")
	_ = unstructured.SetNestedField(manifests[1].(map[string]any), "value2", "data", "key")
	_ = unstructured.SetNestedSlice(work.Object, manifests, "spec", "workload", "manifests")
	if err := hubClient.Update(ctx, work); err != nil {
		t.Fatal(err)
	}
	until(t, agent, "the changed Work applied on the member", func() bool {
		return member.ConfigMapValue("test-namespace", "test-cm", "key") == "value2"
	})

	// KubeFleet's leave flow: the hub sets the InternalMemberCluster's state
	// to Leave; the agent says it left and lets go of its Works (their
	// work-cleanup finalizer goes), leaving what it applied on the member.
	imc = get(ctx, hubClient, "cluster.kubernetes-fleet.io/v1beta1", "InternalMemberCluster", "fleet-member-member1", "member1")
	_ = unstructured.SetNestedField(imc.Object, "Leave", "spec", "state")
	if err := hubClient.Update(ctx, imc); err != nil {
		t.Fatal(err)
	}
	until(t, agent, "the member agent to leave", func() bool {
		imc := get(ctx, hubClient, "cluster.kubernetes-fleet.io/v1beta1", "InternalMemberCluster", "fleet-member-member1", "member1")
		return condition(agentConditions(imc), "Joined") == "False"
	})
	until(t, agent, "the Work's work-cleanup finalizer to go", func() bool {
		w := get(ctx, hubClient, "placement.kubernetes-fleet.io/v1beta1", "Work", "fleet-member-member1", "example-placement-work")
		return w != nil && !slices.Contains(w.GetFinalizers(), "kubernetes-fleet.io/work-cleanup")
	})
	if got := member.ConfigMapValue("test-namespace", "test-cm", "key"); got != "value2" {
		t.Errorf("after leaving, test-cm on the member holds %q; want value2 left in place", got)
	}
}

// heartbeat is the MemberAgent's lastReceivedHeartbeat in an
// InternalMemberCluster's status.
func heartbeat(imc *unstructured.Unstructured) string {
	for _, a := range conditions(imc, "status", "agentStatus") {
		if m, ok := a.(map[string]any); ok && m["type"] == "MemberAgent" {
			s, _ := m["lastReceivedHeartbeat"].(string)
			return s
		}
	}
	return ""
}

// splitYAML decodes a multi-document YAML string into objects.
func splitYAML(t *testing.T, s string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(s, "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
	return out
}
