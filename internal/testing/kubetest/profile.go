package kubetest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"k8s.io/client-go/rest"
)

// ProfileEnv names the environment variable that asks a benchmark on a
// Kubernetes hub for a CPU profile of the hub's kube-apiserver over its
// measured part: the profile is written to the file it names.
const ProfileEnv = "GITFLEET_APISERVER_PROFILE"

// profileSegment is how long each of ProfileCPU's back-to-back profiles
// lasts: the API server's /debug/pprof/profile profiles a number of
// seconds fixed by the request, and the end of a benchmark is not known
// when it starts.
var profileSegment = 10 * time.Second

// segmentStarting is called as each segment of ProfileCPU begins, with
// its number from 1: a test's handle on where the profiling stands.
var segmentStarting = func(n int) {}

// ProfileCPU profiles the CPU of the kube-apiserver rc reaches (its
// /debug/pprof/profile, on by default, as rc's user: an admin) from now
// until the returned stop is called, and writes the profile to path; an
// empty path profiles nothing. It takes segments of profileSegment back
// to back and merges them with pprof's own profile package, so stop waits
// for the segment under way (up to profileSegment). A failure is logged,
// not fatal: the profile is an aid, not what the benchmark measures.
func ProfileCPU(t testing.TB, rc *rest.Config, path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		t.Logf("profile the API server: %v", err)
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var segments []*profile.Profile
	done := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			segmentStarting(len(segments) + 1)
			p, err := profileOnce(hc, rc.Host, profileSegment)
			if err != nil {
				done <- err
				return
			}
			segments = append(segments, p)
		}
		done <- nil
	}()
	return sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			t.Logf("profile the API server: %v", err)
		}
		if err := writeMerged(path, segments); err != nil {
			t.Logf("profile the API server: %v", err)
			return
		}
		t.Logf("the API server's CPU profile (%d segments of %s): %s", len(segments), profileSegment, path)
	})
}

// profileOnce is one CPU profile of d of the API server at host. It is
// not cancelled: a cancelled request would lose the segment.
func profileOnce(hc *http.Client, host string, d time.Duration) (*profile.Profile, error) {
	resp, err := hc.Get(fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", host, int(d.Round(time.Second).Seconds())))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/debug/pprof/profile: %s", resp.Status)
	}
	return profile.Parse(resp.Body)
}

func writeMerged(path string, segments []*profile.Profile) error {
	if len(segments) == 0 {
		return fmt.Errorf("no profile segment was taken")
	}
	merged, err := profile.Merge(segments)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := merged.Write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
