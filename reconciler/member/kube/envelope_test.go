package kube_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/reconciler/member"
	"github.com/gitfleet/gitfleet/reconciler/member/kube"
)

// upstreamClusterEnvelope is KubeFleet's examples/envelopes/clusterscoped.yaml:
// a ValidatingWebhookConfiguration (guard, which refuses every CREATE it
// cannot reach) and a ClusterRole (pod-reader).
func upstreamClusterEnvelope(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "internal", "crd", "testdata", "accepted", "clusterresourceenvelope-clusterscoped.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const (
	appNamespace = `apiVersion: v1
kind: Namespace
metadata: {name: app}`
	quotaEnvelope = `apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ResourceEnvelope
metadata: {name: quota, namespace: app}
data:
  quota.yaml:
    apiVersion: v1
    kind: ResourceQuota
    metadata: {name: quota, namespace: app}
    spec:
      hard: {pods: "10"}`
)

// envelopeDelivery is what the delivery controller hands the driver for a
// snapshot of these manifests (YAML): the binding's Works, one per
// envelope beside the snapshot's.
func envelopeDelivery(t *testing.T, gen int64, snapshot string, manifests ...string) member.Delivery {
	t.Helper()
	return pushed(t, delivery(t, "member1", gen, snapshot, manifests...))
}

// TestAnEnvelopeReachesTheMemberAsWhatItWraps: KubeFleet's webhook
// envelope and a quota envelope are applied to a real member as the
// objects they wrap, server-side and labelled as the placement's; the
// webhook then acts there (it refuses a CREATE, as it would have refused
// on the hub); a manifest dropped from an envelope is pruned, and removing
// the binding takes off everything the envelopes put there.
//
// The webhook refuses every CREATE it can see, the driver's own too, so
// it arrives alone in the second snapshot: created with other objects,
// it could refuse them (the driver creates concurrently), and the test
// would depend on how fast the API server loads it.
func TestAnEnvelopeReachesTheMemberAsWhatItWraps(t *testing.T) {
	f := newFixture(t, nil)
	cre := upstreamClusterEnvelope(t)
	webhookAt, roleAt := strings.Index(cre, `  "webhook.yaml":`), strings.Index(cre, `  "clusterrole.yaml":`)
	if webhookAt < 0 || roleAt < webhookAt {
		t.Fatalf("examples/envelopes/clusterscoped.yaml changed:\n%s", cre)
	}
	roleOnly := cre[:webhookAt] + cre[roleAt:]
	webhookOnly := cre[:roleAt]

	d1 := envelopeDelivery(t, 1, "place-0-snapshot", appNamespace, quotaEnvelope, roleOnly)
	f.deliverAvailable(f.drivers, d1)
	d := envelopeDelivery(t, 2, "place-1-snapshot", appNamespace, quotaEnvelope, cre)
	if len(d.Works) != 3 {
		t.Fatalf("the delivery has %d Works, want 3: the snapshot's and one per envelope", len(d.Works))
	}
	f.deliverAvailable(f.drivers, d)

	for _, o := range []struct{ apiVersion, kind, namespace, name string }{
		{"admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "", "guard"},
		{"rbac.authorization.k8s.io/v1", "ClusterRole", "", "pod-reader"},
		{"v1", "ResourceQuota", "app", "quota"},
	} {
		u := f.get("member1", o.apiVersion, o.kind, o.namespace, o.name)
		if u == nil {
			t.Fatalf("%s %s is not on the member", o.kind, o.name)
		}
		if u.GetLabels()[kube.PlacementLabel] != "place" {
			t.Errorf("%s %s labels = %v, want %s=place", o.kind, o.name, u.GetLabels(), kube.PlacementLabel)
		}
	}

	// The webhook acts on the member: its service does not exist there, so
	// it refuses every CREATE (failurePolicy Fail, the default), once the
	// API server has loaded the configuration (asynchronously, by design).
	probes := 0
	await.Until(t, "the guard webhook to refuse a CREATE on the member", func() bool {
		probes++
		cm := &unstructured.Unstructured{}
		must(t, yaml.Unmarshal([]byte(fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: probe-%d, namespace: app}", probes)), &cm.Object))
		err := f.clusters[0].Client().Create(f.ctx, cm)
		if err != nil && !strings.Contains(err.Error(), "guard.example.com") {
			t.Fatalf("creating a ConfigMap on the member: %v, want the guard webhook's refusal", err)
		}
		return err != nil
	})

	// The ClusterRole leaves the envelope: pruned; the webhook stays.
	d2 := envelopeDelivery(t, 3, "place-2-snapshot", appNamespace, quotaEnvelope, webhookOnly)
	f.deliverAvailable(f.drivers, d2)
	if f.get("member1", "rbac.authorization.k8s.io/v1", "ClusterRole", "", "pod-reader") != nil {
		t.Error("the ClusterRole dropped from the envelope is still on the member")
	}
	if f.get("member1", "admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "", "guard") == nil {
		t.Error("the webhook configuration still in the envelope was removed")
	}

	must(t, f.drivers.Driver("member1").Remove(f.ctx, d2))
	if f.get("member1", "admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "", "guard") != nil {
		t.Error("the webhook configuration is still on the member after the binding's removal")
	}
	if f.get("member1", "v1", "ResourceQuota", "app", "quota") != nil {
		t.Error("the quota is still on the member after the binding's removal")
	}
}
