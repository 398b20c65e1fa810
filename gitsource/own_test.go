package gitsource

import (
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// PushedItself is true exactly when every commit between two tips of the
// tracked branch is one of the Source's own Apply pushes.
func TestPushedItself(t *testing.T) {
	ctx := ctxT(t)
	f := newFixture(t)
	s := f.open(t)
	start, err := s.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	apply := func(content string) plumbing.Hash {
		t.Helper()
		res, err := s.Apply(ctx, Change{Writes: map[string][]byte{"status/a": []byte(content)}})
		if err != nil || !res.Created {
			t.Fatalf("Apply: %+v, %v", res, err)
		}
		return res.Commit
	}
	first, second := apply("1"), apply("2")
	if err := humanPush(f.work, 1); err != nil {
		t.Fatal(err)
	}
	person, err := s.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	third := apply("3")
	approve, err := s.PushBranch(ctx, "r-after-canary", Change{Writes: map[string][]byte{"approvals/r.yaml": []byte("approved")}})
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name     string
		from, to plumbing.Hash
		want     bool
	}{
		{"one own commit", start.Commit, first, true},
		{"two own commits", start.Commit, second, true},
		{"no move", second, second, true},
		{"a person's commit", second, person.Commit, false},
		{"an own commit on a person's", person.Commit, third, true},
		{"across a person's commit", second, third, false},
		{"from nothing", plumbing.ZeroHash, first, false},
		{"backwards", second, first, false},
		{"an approval branch's commit", start.Commit, approve.Commit, false},
	} {
		got, err := s.PushedItself(ctx, tc.from, tc.to)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("%s: PushedItself = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// IsOwnTip names only the tracked branch's tip as the Source pushed it,
// until a fetch brings another: what a forge's webhook for gitfleet's own
// push announces, and nothing a person pushed.
func TestIsOwnTip(t *testing.T) {
	ctx := ctxT(t)
	f := newFixture(t)
	s := f.open(t)
	apply := func(content string) plumbing.Hash {
		t.Helper()
		res, err := s.Apply(ctx, Change{Writes: map[string][]byte{"status/a": []byte(content)}})
		if err != nil || !res.Created {
			t.Fatalf("Apply: %+v, %v", res, err)
		}
		return res.Commit
	}
	first := apply("1")
	if !s.IsOwnTip(first.String()) {
		t.Errorf("the commit just pushed is not the own tip")
	}
	second := apply("2")
	if s.IsOwnTip(first.String()) || !s.IsOwnTip(second.String()) {
		t.Errorf("after a second push: IsOwnTip(first) = %v, IsOwnTip(second) = %v, want false, true",
			s.IsOwnTip(first.String()), s.IsOwnTip(second.String()))
	}
	approve, err := s.PushBranch(ctx, "r-after-canary", Change{Writes: map[string][]byte{"approvals/r.yaml": []byte("approved")}})
	if err != nil {
		t.Fatal(err)
	}
	if s.IsOwnTip(approve.Commit.String()) || !s.IsOwnTip(second.String()) {
		t.Errorf("an approval branch's push changed the tracked branch's own tip")
	}
	for _, bad := range []string{"", "zz", plumbing.ZeroHash.String(), second.String()[:7]} {
		if s.IsOwnTip(bad) {
			t.Errorf("IsOwnTip(%q) = true", bad)
		}
	}
	if err := humanPush(f.work, 1); err != nil {
		t.Fatal(err)
	}
	person, err := s.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.IsOwnTip(second.String()) || s.IsOwnTip(person.Commit.String()) {
		t.Errorf("after fetching a person's push: IsOwnTip(own) = %v, IsOwnTip(person's) = %v, want false, false",
			s.IsOwnTip(second.String()), s.IsOwnTip(person.Commit.String()))
	}
}
