package web

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
	"github.com/gitfleet/gitfleet/reconciler/placement"
	"github.com/gitfleet/gitfleet/reconciler/resourcesnapshot"
	"github.com/gitfleet/gitfleet/reconciler/runview"
	"github.com/gitfleet/gitfleet/reconciler/scheduler"
	"github.com/gitfleet/gitfleet/reconciler/updaterun"
	"github.com/gitfleet/gitfleet/status"
)

var epoch = time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)

func TestMain(m *testing.M) {
	// The scheduler and the delivery layer log to the default logger.
	slog.SetDefault(slog.New(slog.DiscardHandler))
	code := m.Run()
	closeBrowser()
	os.Exit(code)
}

// repo is a Git repository on disk whose status tree the pages read as
// `gitfleet ui` reads a checkout: the TreeStore writes the files and each
// of its commits is a Git commit by gitfleet.
type repo struct {
	dir string
	t   testing.TB
	// onCommit is called after every commit (the server's Notify).
	onCommit func()
}

func newRepo(t testing.TB) *repo {
	r := &repo{dir: t.TempDir(), t: t}
	r.git("init", "-q", "-b", "main")
	r.commitAll("fleet: initial", "Fleet Admin")
	return r
}

func (r *repo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{"-C", r.dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// commitAll commits every change as author, at the fake time of the
// commit's content (git needs none: the commit order is what counts).
func (r *repo) commitAll(msg, author string) {
	r.git("add", "-A")
	email := fmt.Sprintf("%s@example.com", filepath.Base(author))
	r.git("-c", "user.name="+author, "-c", "user.email="+email, "commit", "-q", "--allow-empty", "-m", msg)
	if r.onCommit != nil {
		r.onCommit()
	}
}

// Commit implements status.Committer: the files, then a commit by gitfleet.
func (r *repo) Commit(ctx context.Context, ch status.Changeset, msg string, urgent bool) error {
	if err := status.Dir(r.dir).Commit(ctx, ch, msg, urgent); err != nil {
		return err
	}
	r.commitAll(msg, "gitfleet")
	return nil
}

// write encodes objs into their files of the status tree (a state made
// by hand) and commits them as gitfleet.
func (r *repo) write(msg string, objs ...runtime.Object) {
	r.t.Helper()
	for _, obj := range objs {
		data, err := status.Encode(obj)
		if err != nil {
			r.t.Fatal(err)
		}
		p, err := status.PathFor(obj)
		if err != nil {
			r.t.Fatal(err)
		}
		dst := filepath.Join(r.dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
	r.commitAll(msg, "gitfleet")
}

// rollout is the real engine on a fake clock, rolling a config map out to
// a canary stage (approved after it) and a prod stage of three clusters
// one at a time (a minute's wait after it), with its status tree in a Git repository.
type rollout struct {
	*repo
	clk   *clock.Fake
	hub   *embedded.Hub
	store *status.TreeStore
	ctrl  *reconciler.Controller
}

func newRollout(t testing.TB) *rollout {
	t.Helper()
	ctx := context.Background()
	r := &rollout{repo: newRepo(t), clk: clock.NewFake(epoch)}
	r.store = status.NewTreeStore(status.Dir(r.dir), r.repo, r.clk)
	r.store.Interval = 0
	h := embedded.New(r.clk, r.store)
	r.hub = h
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "app", "namespace": "default"}, "data": map[string]any{"k": "v"}}}
	h.SetResources([]*unstructured.Unstructured{cm})
	h.SetSelector(func(*fleet.Placement, []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
		return []*unstructured.Unstructured{cm.DeepCopy()}, nil
	})
	for _, m := range []struct{ name, env string }{{"canary-1", "canary"}, {"prod-1", "prod"}, {"prod-2", "prod"}, {"prod-3", "prod"}} {
		h.ApplyMemberCluster(&fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: m.name, Labels: map[string]string{"env": m.env},
			Annotations: map[string]string{fleet.DriverAnnotation: fleet.DriverSimulated, fleet.SimAvailableAfterAnnotation: "10s"}}})
	}
	p := &fleet.Placement{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Spec: fleet.PlacementSpec{
		ResourceSelectors: []fleet.ResourceSelectorTerm{{Version: "v1", Kind: "ConfigMap", Name: "app"}},
		Policy:            &fleet.PlacementPolicy{PlacementType: fleet.PickAllPlacementType},
		Strategy:          fleet.RolloutStrategy{Type: fleet.ExternalRolloutStrategyType}}}
	fleet.SetDefaultsPlacement(p)
	h.ApplyPlacement(p)
	if _, _, err := resourcesnapshot.Ensure(ctx, h, p, []*unstructured.Unstructured{cm}, ""); err != nil {
		t.Fatal(err)
	}
	one := intstr.FromInt32(1)
	h.ApplyUpdateStrategy(&fleet.UpdateStrategy{ObjectMeta: metav1.ObjectMeta{Name: "canary-then-prod"},
		Spec: fleet.UpdateStrategySpec{Stages: []fleet.StageConfig{
			{Name: "canary", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "canary"}},
				AfterStageTasks: []fleet.StageTask{{Type: fleet.StageTaskTypeApproval}}},
			{Name: "prod", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}, MaxConcurrency: &one,
				AfterStageTasks: []fleet.StageTask{{Type: fleet.StageTaskTypeTimedWait, WaitTime: &metav1.Duration{Duration: time.Minute}}}},
		}}})
	r.ctrl = &reconciler.Controller{Hub: h, Clock: r.clk, Committer: h,
		Runs:      &updaterun.Reconciler{Hub: h, Clock: r.clk},
		Scheduler: &scheduler.Scheduler{Hub: h, Clock: r.clk},
		Status:    (&placement.Updater{Hub: h, Clock: r.clk}).Update,
	}
	r.ctrl.EnqueueAll()
	r.settle()
	return r
}

// start creates the run, as a push of its file would.
func (r *rollout) start() {
	r.hub.ApplyUpdateRun(&fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: "rollout"},
		Spec: fleet.UpdateRunSpec{PlacementName: "app", StagedUpdateStrategyName: "canary-then-prod", State: fleet.StateRun}})
	r.settle()
}

// settle lets the engine do what it can now and commits the status.
func (r *rollout) settle() {
	r.t.Helper()
	ctx := context.Background()
	r.ctrl.Drain(ctx)
	if err := r.store.Flush(ctx, true); err != nil {
		r.t.Fatal(err)
	}
}

// step moves the fake clock to the next timer and settles; false when no
// timer is left.
func (r *rollout) step() bool {
	if !r.clk.Step() {
		return false
	}
	r.settle()
	return true
}

// stepUntil steps the clock until the run's view satisfies cond.
func (r *rollout) stepUntil(what string, cond func(runview.View) bool) {
	r.t.Helper()
	for !cond(runview.Of(r.run())) {
		if !r.step() {
			r.t.Fatalf("no timer left and %s does not hold", what)
		}
	}
}

// clusterState is the state of cluster name in the run's view.
func clusterState(v runview.View, name string) runview.ClusterState {
	for _, s := range v.Stages {
		for _, c := range s.Clusters {
			if c.Name == name {
				return c.State
			}
		}
	}
	return ""
}

func (r *rollout) run() *fleet.UpdateRun {
	run, err := r.hub.GetUpdateRun(context.Background(), hub.Key{Name: "rollout"})
	if err != nil {
		r.t.Fatal(err)
	}
	return run
}

// approve merges a person's approval of the request: the Approved
// condition in its file, committed by author, then taken by the hub.
func (r *rollout) approve(name, author string) {
	r.t.Helper()
	ctx := context.Background()
	ar, err := r.hub.GetApprovalRequest(ctx, hub.Key{Name: name})
	if err != nil {
		r.t.Fatal(err)
	}
	approved := status.ApprovedCopy(ar, r.clk.Now())
	data, err := status.Encode(approved)
	if err != nil {
		r.t.Fatal(err)
	}
	p, err := status.PathFor(approved)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.dir, filepath.FromSlash(p)), data, 0o644); err != nil {
		r.t.Fatal(err)
	}
	r.commitAll("approve "+name, author)
	if err := r.hub.ApplyApprovalRequestStatus(ctx, approved); err != nil {
		r.t.Fatal(err)
	}
	// What serve records on the request when it takes an approval from Git.
	by := status.ApprovedBy(author, author+"@example.com", strings.TrimSpace(r.git("rev-parse", "--short=12", "HEAD")), false)
	if err := r.hub.Annotate(ctx, fleet.ApprovalRequestKind(""), hub.Key{Name: name}, fleet.ApprovedByAnnotation, by); err != nil {
		r.t.Fatal(err)
	}
	r.settle()
}

// serve starts the web view of the repository, live: each commit
// notifies it.
func serve(t testing.TB, r *repo, live bool) (*Server, string) {
	t.Helper()
	s, err := New(Config{Source: Checkout{Dir: r.dir}, Live: live, Now: func() time.Time { return epoch.Add(time.Hour) },
		CommitURL: func(h string) string { return "https://forge.example/fleet/commit/" + h }})
	if err != nil {
		t.Fatal(err)
	}
	r.onCommit = s.Notify
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts.URL
}
