package deploy

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/gitfleet/gitfleet/internal/kubetest"
	"github.com/gitfleet/gitfleet/internal/leader"
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
