package gitops_test

import (
	"os"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitops"
)

// source is status/sources/<name>.yaml on the remote, or nil.
func (r *fleetRepo) source(name string) *fleet.GitSource {
	o := r.object("status/sources/" + name + ".yaml")
	if o == nil {
		return nil
	}
	return o.(*fleet.GitSource)
}

// status/sources/main.yaml says which commit of a person serve fetched and
// which it applied, and since when it fails; polls that bring only
// gitfleet's own commits change nothing, so they commit nothing.
func TestSourceStatusRecordsCommitsAndFailuresOnlyWhenTheyChange(t *testing.T) {
	files := quickstartFleet(t)
	r := newFleetRepo(t, files)
	first := r.git("rev-parse", "HEAD")
	counter := &fetchCounter{}
	d := startDaemonWith(t, "file://"+r.remote, t.TempDir(), 0, func(c *gitops.Config) { c.Observer = counter })
	waitForCanaryApproval(t, r)

	src := r.source("main")
	if src == nil || src.Spec.Branch != "main" || src.Status.LastFetchedCommit != first || src.Status.LastAppliedCommit != first ||
		!meta.IsStatusConditionTrue(src.Status.Conditions, fleet.GitSourceConditionReady) || src.Status.LastError != "" {
		t.Fatalf("source after the first sync: %+v", src)
	}

	// Polls that bring only gitfleet's own status commits: no commit.
	d.settle(t, r)
	eventually(t, "the status pushed", d.quiet)
	before := d.remoteRefs()
	for range 3 {
		n := counter.fetches.Load()
		d.poke()
		eventually(t, "a poll", func() bool { return counter.fetches.Load() > n && d.quiet() })
	}
	if after := d.remoteRefs(); after != before {
		t.Errorf("polls without news committed:\nbefore %s\nafter  %s", before, after)
	}

	// A person's commit is fetched and applied.
	v2 := strings.Replace(string(files["workload.yaml"]), "key: value1", "key: value2", 1)
	c2 := r.commit("value2", map[string][]byte{"workload.yaml": []byte(v2)})
	d.poke()
	eventually(t, "the source to show "+c2[:7], func() bool {
		s := r.source("main")
		return s != nil && s.Status.LastFetchedCommit == c2 && s.Status.LastAppliedCommit == c2
	})

	// The remote goes away and comes back: the failure is recorded with
	// when it began, and kept as the last error once it ended.
	away := r.remote + ".away"
	if err := os.Rename(r.remote, away); err != nil {
		t.Fatal(err)
	}
	d.poke()
	eventually(t, "a failed fetch", func() bool { return d.LastError() != nil })
	if err := os.Rename(away, r.remote); err != nil {
		t.Fatal(err)
	}
	d.poke()
	eventually(t, "the failure recorded and ended", func() bool {
		s := r.source("main")
		return s != nil && s.Status.LastError != "" && s.Status.LastErrorTime != nil &&
			meta.IsStatusConditionTrue(s.Status.Conditions, fleet.GitSourceConditionReady)
	})
	log := gitCmd(t, r.remote, "--git-dir", r.remote, "log", "--format=%s", "main", "--", "status/sources")
	t.Logf("commits of status/sources:\n%s", log)
	for _, s := range strings.Split(log, "\n") {
		if !strings.Contains(s, "source main") && !strings.Contains(s, "run") {
			t.Errorf("a commit recording the source does not say so: %q", s)
		}
	}
}
