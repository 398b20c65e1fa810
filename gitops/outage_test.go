package gitops_test

import (
	"os"
	"strings"
	"testing"
	"time"
)

// While the remote is away, fetches fail and back off; once it is back,
// everything pushed meanwhile is processed in order and nothing is lost.
func TestRemoteOutageHealsWithoutLosingCommits(t *testing.T) {
	files := quickstartFleet(t)
	r := newFleetRepo(t, files)
	d := startDaemon(t, "file://"+r.remote, t.TempDir(), 50*time.Millisecond)
	waitForCanaryApproval(t, r)

	// The remote disappears; a colleague's clone keeps working offline.
	away := r.remote + ".away"
	if err := os.Rename(r.remote, away); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a failed fetch", func() bool { return d.LastError() != nil })

	if err := os.Rename(away, r.remote); err != nil {
		t.Fatal(err)
	}
	v2 := strings.Replace(string(files["workload.yaml"]), "key: value1", "key: value2", 1)
	v3 := strings.Replace(string(files["workload.yaml"]), "key: value1", "key: value3", 1)
	c2 := r.commit("value2", map[string][]byte{"workload.yaml": []byte(v2)})
	c3 := r.commit("value3", map[string][]byte{"workload.yaml": []byte(v3)})

	eventually(t, "snapshots of both commits", func() bool {
		return r.file("status/snapshots/example-placement/2.yaml") != nil
	})
	for idx, commit := range map[string]string{"1": c2, "2": c3} {
		if got := string(r.file("status/snapshots/example-placement/" + idx + ".yaml")); !strings.Contains(got, "gitfleet.io/commit: "+commit) {
			t.Errorf("snapshot %s does not record commit %s", idx, commit[:12])
		}
	}
	if d.LastError() != nil {
		t.Errorf("the daemon still reports %v after the remote came back", d.LastError())
	}
}
