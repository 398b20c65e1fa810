package kubefleetinterop

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/internal/testing/kubetest"
)

// memberSideCRDs are the CRDs KubeFleet's member agent needs on its member
// (it checks for AppliedWork at start), from KubeFleet's source: gitfleet
// does not ship them, the member's installation (KubeFleet's Helm chart)
// does.
var memberSideCRDs = []string{"placement.kubernetes-fleet.io_appliedworks.yaml"}

// installMemberSideCRDs installs KubeFleet's member-side CRDs from src on
// member.
func installMemberSideCRDs(t *testing.T, src string, member *kubetest.Cluster) {
	t.Helper()
	dir := t.TempDir()
	for _, name := range memberSideCRDs {
		data, err := os.ReadFile(filepath.Join(src, "config", "crd", "bases", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	member.InstallCRDs(dir)
}

// gitfleetCRDs is gitfleet's config/crd, installed on the hub.
var gitfleetCRDs = filepath.Join("..", "..", "config", "crd")

// identityToken creates, on the hub, the service account a MemberCluster
// names as its identity (spec.identity) and writes a token of it to a
// file, as KubeFleet's documentation has a hub admin do for each member;
// the agent reaches the hub with it, so only the RBAC the hub grants that
// identity lets it in.
func identityToken(t *testing.T, hub *kubetest.Cluster, namespace, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte(serviceAccountToken(t, hub, namespace, name)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// serviceAccountToken creates the service account namespace/name on the
// hub (and its namespace) when missing and returns a token of it.
func serviceAccountToken(t *testing.T, hub *kubetest.Cluster, namespace, name string) string {
	t.Helper()
	ctx := await.Context(t)
	cl := hub.Client()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := cl.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := cl.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)}}
	if err := cl.SubResource("token").Create(ctx, sa, tr); err != nil {
		t.Fatalf("token of service account %s/%s: %v", namespace, name, err)
	}
	return tr.Status.Token
}

// get is the live object or nil.
func get(ctx context.Context, cl client.Client, apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	if err := cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u); err != nil {
		return nil
	}
	return u
}

// condition is the status of the condition of type typ in conds ("" when
// there is none).
func condition(conds []any, typ string) string {
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}

// conditions is the conditions slice at path of u.
func conditions(u *unstructured.Unstructured, path ...string) []any {
	if u == nil {
		return nil
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, path...)
	return conds
}

// agentConditions are the conditions of the MemberAgent in an
// InternalMemberCluster's status.agentStatus.
func agentConditions(imc *unstructured.Unstructured) []any {
	for _, a := range conditions(imc, "status", "agentStatus") {
		if m, ok := a.(map[string]any); ok && m["type"] == "MemberAgent" {
			conds, _ := m["conditions"].([]any)
			return conds
		}
	}
	return nil
}

// hubSideCRDs are the CRDs KubeFleet's member agent reads and writes on the
// hub (its namespace's InternalMemberCluster and Works).
var hubSideCRDs = []string{
	"cluster.kubernetes-fleet.io_internalmemberclusters.yaml",
	"placement.kubernetes-fleet.io_works.yaml",
}

// installHubCRDs installs gitfleet's CRDs (config/crd) on the hub, after
// checking that they hold the hub-side ones KubeFleet's agent needs (its
// controllers would otherwise wait for a kind the hub does not serve).
func installHubCRDs(t *testing.T, hub *kubetest.Cluster) {
	t.Helper()
	for _, name := range hubSideCRDs {
		if _, err := os.Stat(filepath.Join(gitfleetCRDs, name)); err != nil {
			t.Fatalf("KubeFleet's member agent needs %s on the hub; gitfleet's config/crd has none", name)
		}
	}
	hub.InstallCRDs(gitfleetCRDs)
}
