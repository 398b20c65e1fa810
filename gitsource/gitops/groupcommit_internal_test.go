package gitops

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
	"github.com/gitfleet/gitfleet/status"
)

// heldCommits is the status tree's Committer of the group commit tests:
// it records every changeset and, while hold is set, holds each commit
// until the test releases it, as a push that takes long.
type heldCommits struct {
	mu      sync.Mutex
	commits [][]string // the written paths of each commit, in order
	fail    error
	hold    chan struct{} // nil: commits go through at once
	entered chan struct{}
}

func (c *heldCommits) Commit(_ context.Context, ch status.Changeset, _ string, _ bool) error {
	c.mu.Lock()
	hold, entered, fail := c.hold, c.entered, c.fail
	c.mu.Unlock()
	if hold != nil {
		entered <- struct{}{}
		<-hold
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if fail != nil {
		return fail
	}
	c.commits = append(c.commits, ch.WritePaths())
	return nil
}

func (c *heldCommits) all() [][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.commits)
}

// newGroupFixture is an embedded hub over a status tree that commits
// through c, and a group commit of window on a fake clock.
func newGroupFixture(t *testing.T, c *heldCommits, window time.Duration) (*groupCommit, *embedded.Hub, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(time.Now())
	store := status.NewTreeStore(status.Dir(t.TempDir()), c, clk)
	store.Interval = 0
	h := embedded.New(clk, store)
	if _, err := h.Start(await.Context(t)); err != nil {
		t.Fatal(err)
	}
	return newGroupCommit(h, clk, window), h, clk
}

// writeMember is a pass's write: a member cluster applied to the hub.
func writeMember(t *testing.T, h *embedded.Hub, name string) {
	t.Helper()
	m := &fleet.MemberCluster{TypeMeta: metav1.TypeMeta{APIVersion: fleet.ClusterGroupVersion.String(), Kind: "MemberCluster"},
		ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := h.Apply(context.Background(), m); err != nil {
		t.Fatal(err)
	}
}

func memberPath(name string) string { return "status/clusters/" + name + ".yaml" }

// Two passes under way when the first ends: the first waits for the
// second (the window is not over: the fake clock never moves), and both
// writes go into one commit. Neither returns before that commit is done.
func TestGroupCommitTakesThePassesUnderWayIntoOneCommit(t *testing.T) {
	c := &heldCommits{}
	g, h, _ := newGroupFixture(t, c, time.Hour)
	ctx := await.Context(t)

	g.begin()
	g.begin()
	writeMember(t, h, "member-a")
	writeMember(t, h, "member-b")
	first := make(chan error, 1)
	go func() { first <- g.end(ctx, true) }()
	await.Until(t, "the first pass to wait for its group", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.open != nil && g.open.members == 1
	})
	select {
	case err := <-first:
		t.Fatalf("the first pass returned before the pass under way ended: %v", err)
	default:
	}
	if err := g.end(ctx, true); err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	want := [][]string{{memberPath("member-a"), memberPath("member-b")}}
	if got := c.all(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("commits %v, want %v", got, want)
	}
}

// While a group's push travels (held here), passes go on: one begins,
// writes and ends without waiting for that push, its write is not in the
// commit under way, and it returns only once its own group committed
// (after the first: groups commit in order). Passes that ended meanwhile
// form that next group, one commit.
func TestGroupCommitLetsPassesWriteWhileAPushTravels(t *testing.T) {
	c := &heldCommits{hold: make(chan struct{}), entered: make(chan struct{}, 1)}
	g, h, _ := newGroupFixture(t, c, time.Hour)
	ctx := await.Context(t)

	g.begin()
	writeMember(t, h, "member-a")
	firstDone := make(chan error, 1)
	go func() { firstDone <- g.end(ctx, true) }()
	<-c.entered // the first group's commit is under way, held

	written := make(chan struct{}, 2)
	laterDone := make(chan error, 2)
	for _, name := range []string{"member-b", "member-c"} {
		go func() {
			g.begin()
			writeMember(t, h, name)
			written <- struct{}{}
			laterDone <- g.end(ctx, true)
		}()
	}
	for range 2 {
		<-written // would never come if passes waited for the push
	}
	await.Until(t, "the two later passes to form the next group", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.inPass == 0 && g.open != nil && g.open.members == 2
	})
	select {
	case err := <-laterDone:
		t.Fatalf("a later pass returned before the push under way was done: %v", err)
	default:
	}
	c.mu.Lock()
	hold := c.hold
	c.hold = nil
	c.mu.Unlock()
	close(hold)
	for _, ch := range []chan error{firstDone, laterDone, laterDone} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	want := [][]string{{memberPath("member-a")}, {memberPath("member-b"), memberPath("member-c")}}
	if got := c.all(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("commits %v, want %v", got, want)
	}
}

// A failed commit fails every pass of its group; the writes stay pending
// and the next group commits them.
func TestGroupCommitFailsEveryMemberOfAFailedGroup(t *testing.T) {
	boom := errors.New("push refused")
	c := &heldCommits{fail: boom}
	g, h, _ := newGroupFixture(t, c, time.Hour)
	ctx := await.Context(t)

	g.begin()
	g.begin()
	writeMember(t, h, "member-a")
	writeMember(t, h, "member-b")
	errs := make(chan error, 2)
	go func() { errs <- g.end(ctx, true) }()
	go func() { errs <- g.end(ctx, true) }()
	for range 2 {
		if err := <-errs; !errors.Is(err, boom) {
			t.Errorf("a member of the failed group got %v, want %v", err, boom)
		}
	}
	if got := c.all(); len(got) != 0 {
		t.Errorf("commits %v after a failed push", got)
	}
	c.mu.Lock()
	c.fail = nil
	c.mu.Unlock()
	if err := g.commit(ctx); err != nil {
		t.Fatal(err)
	}
	want := [][]string{{memberPath("member-a"), memberPath("member-b")}}
	if got := c.all(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("commits %v, want %v", got, want)
	}
}

// The window bounds how long a group admits new members: once it is
// over the group closes though a pass is still under way (a steady stream
// of passes would otherwise hold it open forever). That pass holds the
// hub, so the commit waits for its end and carries its write; the pass
// itself joins the next group.
func TestGroupCommitClosesTheGroupWhenTheWindowIsOver(t *testing.T) {
	c := &heldCommits{}
	g, h, clk := newGroupFixture(t, c, 20*time.Millisecond)
	ctx := await.Context(t)

	g.begin()
	g.begin() // a long pass: it ends after the window
	writeMember(t, h, "member-a")
	first := make(chan error, 1)
	go func() { first <- g.end(ctx, true) }()
	await.Until(t, "the window's timer", func() bool { return clk.Pending() == 1 })
	clk.Advance(20 * time.Millisecond)
	await.Until(t, "the group to close with a pass under way", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.open == nil && g.inPass == 1
	})
	writeMember(t, h, "member-b")
	if err := g.end(ctx, true); err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	want := [][]string{{memberPath("member-a"), memberPath("member-b")}}
	if got := c.all(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("commits %v, want %v", got, want)
	}
}

// A pass that ends while no other pass is under way commits at once, not
// after the window: nothing can join its group soon. At maxConcurrency 1
// every cluster's pass is such a pass, so the window would otherwise be
// added to every cluster's step. The fake clock never moves: a group that
// waited for the window would never commit.
func TestGroupCommitCommitsAtOnceWhenNoOtherPassIsUnderWay(t *testing.T) {
	c := &heldCommits{}
	g, h, _ := newGroupFixture(t, c, time.Hour)
	ctx := await.Context(t)

	var want [][]string
	for _, name := range []string{"member-a", "member-b", "member-c"} {
		g.begin()
		writeMember(t, h, name)
		done := make(chan error, 1)
		go func() { done <- g.end(ctx, true) }()
		var err error
		await.Until(t, "the commit of "+name+"'s pass, alone, without the window", func() bool {
			select {
			case err = <-done:
				return true
			default:
				return false
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, []string{memberPath(name)})
	}
	if got := c.all(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("commits %v, want one per pass %v", got, want)
	}
}
