package deploy

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/gitfleet/gitfleet/internal/leader"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/internal/testing/kubetest"
	"github.com/gitfleet/gitfleet/reconciler/hub/kube"
)

// The rendered Namespace, ServiceAccount, Role and RoleBinding, applied to
// a real kube-apiserver (RBAC on), let gitfleet's service account win the
// leader election Lease, and nothing more: it may not even read pods.
func TestLeaderElectionRBACOnARealAPIServer(t *testing.T) {
	hub := kubetest.Start(t, "hub")[0]
	objs := renderBase(t)
	admin := hub.Client()
	for _, id := range []string{"Namespace/" + namespace, "ServiceAccount/gitfleet", "Role/gitfleet-leader-election", "RoleBinding/gitfleet-leader-election"} {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(mustGet(t, objs, id).raw, &u.Object); err != nil {
			t.Fatal(err)
		}
		if err := admin.Create(context.Background(), u); err != nil {
			t.Fatalf("creating %s: %v", id, err)
		}
	}
	asGitfleet := &rest.Config{Host: hub.Server, BearerToken: hub.AdminToken, TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		Impersonate: rest.ImpersonationConfig{UserName: "system:serviceaccount:" + namespace + ":gitfleet"}}

	e, err := leader.New(leader.Config{
		Options: leader.Options{Enabled: true, Namespace: namespace, Name: leader.DefaultName("https://github.com/acme/fleet.git", "main"),
			LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond},
		REST: asGitfleet, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() {
		done <- e.Run(ctx, func(ctx context.Context) error {
			stop() // led: the Lease could be created and held
			return nil
		})
	}()
	if err := <-done; err != nil {
		t.Fatalf("leader election as the gitfleet service account: %v", err)
	}

	cs := kubernetes.NewForConfigOrDie(asGitfleet)
	if _, err := cs.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("listing pods as gitfleet: %v, want Forbidden (leases only)", err)
	}
	if _, err := cs.CoordinationV1().Leases("default").List(context.Background(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("listing leases of another namespace as gitfleet: %v, want Forbidden", err)
	}
}

// With components/kube-hub, gitfleet's service account may do on the hub
// what serve --hub kube does there (the hub's own start asks the API
// server for every verb on every kind, and starts an informer per kind),
// and nothing outside the fleet kinds. Without one of its rules the start
// fails naming what is missing, instead of waiting for a cache forever.
func TestKubeHubRBACOnARealAPIServer(t *testing.T) {
	cluster := kubetest.Start(t, "hub")[0]
	cluster.InstallCRDs(filepath.Join("..", "config", "crd"))
	objs := renderWithComponents(t, "kube-hub")
	admin := cluster.Client()
	created := map[string]*unstructured.Unstructured{}
	for _, id := range []string{"Namespace/" + namespace, "ServiceAccount/gitfleet", "ClusterRole/gitfleet-hub", "ClusterRoleBinding/gitfleet-hub"} {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(mustGet(t, objs, id).raw, &u.Object); err != nil {
			t.Fatal(err)
		}
		if err := admin.Create(context.Background(), u); err != nil {
			t.Fatalf("creating %s: %v", id, err)
		}
		created[id] = u
	}
	asGitfleet := &rest.Config{Host: cluster.Server, BearerToken: cluster.AdminToken, TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		Impersonate: rest.ImpersonationConfig{UserName: "system:serviceaccount:" + namespace + ":gitfleet"}}
	ctx := await.Context(t)
	cluster.AwaitAllowed(t, asGitfleet.Impersonate.UserName, authorizationv1.ResourceAttributes{
		Verb: "update", Group: "placement.kubernetes-fleet.io", Resource: "clusterstagedupdateruns", Subresource: "status"})

	hctx, stop := context.WithCancel(ctx)
	_, err := kube.New(hctx, kube.Config{Rest: asGitfleet})
	stop()
	if err != nil {
		t.Fatalf("starting the hub as gitfleet: %v", err)
	}
	cs := kubernetes.NewForConfigOrDie(asGitfleet)
	if _, err := cs.CoreV1().Secrets(namespace).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("listing secrets as gitfleet: %v, want Forbidden (the fleet kinds only)", err)
	}
	if _, err := cs.CoordinationV1().Leases("kube-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("listing leases as gitfleet: %v, want Forbidden (KubeFleet's Lease by name only)", err)
	}

	// Drop the rule of the status subresources.
	role := created["ClusterRole/gitfleet-hub"]
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	kept := rules[:0]
	for _, r := range rules {
		if res, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resources"); !slices.Contains(res, "clusterstagedupdateruns/status") {
			kept = append(kept, r)
		}
	}
	if err := unstructured.SetNestedSlice(role.Object, kept, "rules"); err != nil {
		t.Fatal(err)
	}
	if err := admin.Update(ctx, role); err != nil {
		t.Fatal(err)
	}
	var checked error
	await.Until(t, "the hub check to see the narrower role", func() bool {
		checked = kube.Check(ctx, asGitfleet)
		return checked != nil
	})
	for _, want := range []string{"gitfleet may not use these resources of the hub as it must: ", "; clusterstagedupdateruns/status (update, patch); ",
		"; stagedupdateruns/status (update, patch); ", "deploy/components/kube-hub/rbac.yaml"} {
		if !strings.Contains(checked.Error(), want) {
			t.Errorf("the check without the status rule says\n%v\nwant it to say %q", checked, want)
		}
	}
}
