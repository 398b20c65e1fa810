package leader_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/gitfleet/gitfleet/internal/leader"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/internal/testing/kubetest"
)

// quick are short durations, so the tests do not wait 15s for a lease.
var quick = leader.Options{Enabled: true, Namespace: "default", LeaseDuration: 3 * time.Second,
	RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond}

func newElector(t *testing.T, c *kubetest.Cluster, lease, identity string) *leader.Elector {
	t.Helper()
	o := quick
	o.Name = lease
	e, err := leader.New(leader.Config{Options: o, REST: c.AdminConfig(), Identity: identity,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func holder(t *testing.T, cs kubernetes.Interface, lease string) string {
	t.Helper()
	l, err := cs.CoordinationV1().Leases("default").Get(context.Background(), lease, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// result is what Run returned.
type result struct{ err error }

func run(ctx context.Context, e *leader.Elector, lead func(context.Context) error) <-chan result {
	out := make(chan result, 1)
	go func() { out <- result{e.Run(ctx, lead)} }()
	return out
}

func TestElection(t *testing.T) {
	hub := kubetest.Start(t, "hub")[0]
	cs := kubernetes.NewForConfigOrDie(hub.AdminConfig())

	// A standby names the leader; a leader that is stopped finishes its
	// work while it still holds the lease, then releases it, and the
	// standby takes over without waiting for the lease to expire.
	t.Run("handover on shutdown", func(t *testing.T) {
		a, b := newElector(t, hub, "handover", "a"), newElector(t, hub, "handover", "b")
		ctxA, stopA := context.WithCancel(context.Background())
		defer stopA()
		heldWhileWriting := make(chan string, 1)
		doneA := run(ctxA, a, func(ctx context.Context) error {
			<-ctx.Done()
			heldWhileWriting <- holder(t, cs, "handover") // the last status push happens here
			return errors.New("lead's own result")
		})
		await.Until(t, "a to lead", func() bool { ok, _ := a.Leading(); return ok })
		ctxB, stopB := context.WithCancel(context.Background())
		defer stopB()
		bLeads := make(chan struct{})
		doneB := run(ctxB, b, func(ctx context.Context) error { close(bLeads); <-ctx.Done(); return nil })
		await.Until(t, "b to see a leading", func() bool { ok, l := b.Leading(); return !ok && l == "a" })

		stopA()
		if got := (<-doneA).err; got == nil || got.Error() != "lead's own result" {
			t.Errorf("a's Run = %v, want lead's own result", got)
		}
		if h := <-heldWhileWriting; h != "a" {
			t.Errorf("while a's lead finished, the lease was held by %q, want a", h)
		}
		<-bLeads
		if ok, l := b.Leading(); !ok || l != "b" {
			t.Errorf("b.Leading() = %v, %q after the handover", ok, l)
		}
		stopB()
		if got := (<-doneB).err; got != nil {
			t.Errorf("b's Run = %v", got)
		}
		if h := holder(t, cs, "handover"); h != "" {
			t.Errorf("lease still held by %q after both stopped", h)
		}
	})

	// A leader whose lease is taken (another replica acquired it after it
	// could not renew in time) returns ErrLost at once, without waiting
	// for its work to return: the caller exits before writing again.
	t.Run("lost lease", func(t *testing.T) {
		a := newElector(t, hub, "lost", "a")
		leading := make(chan struct{})
		never := make(chan struct{})
		defer close(never)
		done := run(context.Background(), a, func(context.Context) error {
			close(leading)
			<-never // work that does not stop: Run must return anyway
			return nil
		})
		<-leading
		steal(t, cs, "lost", "intruder")
		if got := (<-done).err; !errors.Is(got, leader.ErrLost) {
			t.Errorf("Run = %v, want ErrLost", got)
		}
		if ok, l := a.Leading(); ok || l != "intruder" {
			t.Errorf("a.Leading() = %v, %q after losing the lease to intruder", ok, l)
		}
	})

	// A standby stopped before it ever leads returns the context's error
	// and never runs lead.
	t.Run("standby stopped", func(t *testing.T) {
		steal(t, cs, "standby", "someone-else")
		a := newElector(t, hub, "standby", "a")
		ctx, stop := context.WithCancel(context.Background())
		done := run(ctx, a, func(context.Context) error { t.Error("lead ran on a standby"); return nil })
		await.Until(t, "a to see the leader", func() bool { _, l := a.Leading(); return l == "someone-else" })
		stop()
		if got := (<-done).err; !errors.Is(got, context.Canceled) {
			t.Errorf("Run = %v, want context.Canceled", got)
		}
	})
}

// steal writes holder into the lease as another replica acquiring it
// would, with a lease that does not expire during the test.
func steal(t *testing.T, cs kubernetes.Interface, lease, holder string) {
	t.Helper()
	leases := cs.CoordinationV1().Leases("default")
	now := metav1.NewMicroTime(time.Now())
	spec := coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: ptr.To(int32(3600)), AcquireTime: &now, RenewTime: &now}
	for {
		l, err := leases.Get(context.Background(), lease, metav1.GetOptions{})
		if err != nil {
			_, err = leases.Create(context.Background(), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: lease, Namespace: "default"}, Spec: spec}, metav1.CreateOptions{})
		} else {
			l.Spec = spec
			_, err = leases.Update(context.Background(), l, metav1.UpdateOptions{})
		}
		if err == nil {
			return
		}
		t.Logf("stealing the lease: %v; again", err) // a conflict with a renewal
	}
}

func TestNewNeedsANamespaceOutsideAPod(t *testing.T) {
	o := quick
	o.Name, o.Namespace = "x", ""
	_, err := leader.New(leader.Config{Options: o, REST: &rest.Config{Host: "https://127.0.0.1:1"}})
	if err == nil || err.Error() != "--leader-election-namespace is required outside a pod (no /var/run/secrets/kubernetes.io/serviceaccount/namespace)" {
		t.Errorf("New without a namespace = %v", err)
	}
}

func TestDefaultName(t *testing.T) {
	base := leader.DefaultName("https://github.com/acme/fleet.git", "main")
	tests := []struct {
		name, repo, branch string
		same               bool
	}{
		{"credentials in the URL do not count", "https://x-access-token:secret@github.com/acme/fleet.git", "main", true},
		{"another branch", "https://github.com/acme/fleet.git", "prod", false},
		{"another repository", "https://github.com/acme/other.git", "main", false},
		{"a trailing slash does not count", "https://github.com/acme/fleet.git/", "main", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := leader.DefaultName(tt.repo, tt.branch)
			if (got == base) != tt.same {
				t.Errorf("DefaultName(%q, %q) = %q, base %q: same = %v, want %v", tt.repo, tt.branch, got, base, got == base, tt.same)
			}
		})
	}
	if len(base) > 63 || base[:9] != "gitfleet-" {
		t.Errorf("DefaultName = %q: want gitfleet-<hash>, a valid object name", base)
	}
}
