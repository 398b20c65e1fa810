package kube

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gitfleet/gitfleet/internal/testing/await"
)

// TestRefusesAHubWhereKubeFleetRuns: a hub whose KubeFleet hub agent holds
// its Lease is refused with the reason; a Lease nobody renews any more (the
// agent was uninstalled) is not in the way.
func TestRefusesAHubWhereKubeFleetRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	th := startHub(t)
	ctx := await.Context(t)
	cs := kubernetes.NewForConfigOrDie(th.rest)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: KubeFleetLeaseNamespace}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	holder, seconds := "hub-agent-7d9f", int32(15)
	renewed := metav1.NewMicroTime(time.Now())
	lease, err := cs.CoordinationV1().Leases(KubeFleetLeaseNamespace).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: KubeFleetLeaseName},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &seconds, RenewTime: &renewed},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(ctx, Config{Rest: th.rest})
	if err == nil || !strings.Contains(err.Error(), "KubeFleet's hub agent runs on this hub (hub-agent-7d9f holds Lease fleet-system/"+KubeFleetLeaseName) {
		t.Fatalf("New on a hub where KubeFleet runs: %v; want a refusal naming the Lease and its holder", err)
	}

	old := metav1.NewMicroTime(time.Now().Add(-time.Hour))
	lease.Spec.RenewTime = &old
	if _, err := cs.CoordinationV1().Leases(KubeFleetLeaseNamespace).Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	th.newHub(t, Config{}) // fails the test if refused
}
