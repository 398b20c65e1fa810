package web

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/gitfleet/gitfleet/reconciler/runview"
)

// TestScreenshots writes PNGs of the fleet, run and cluster pages of the
// browser tests' rollout, waiting at the canary's gate, into the folder
// GITFLEET_SCREENSHOTS names (make screenshots); skipped without it.
func TestScreenshots(t *testing.T) {
	dir := os.Getenv("GITFLEET_SCREENSHOTS")
	if dir == "" {
		t.Skip("GITFLEET_SCREENSHOTS is not set (make screenshots sets it)")
	}
	r := newRollout(t)
	_, base := serve(t, r.repo, true)
	r.start()
	r.stepUntil("canary-1 succeeded", func(v runview.View) bool { return clusterState(v, "canary-1") == runview.ClusterSucceeded })
	r.write("status: hostile", hostileRun())
	ctx := tab(t)
	do(t, ctx, chromedp.EmulateViewport(1440, 640))
	for _, shot := range []struct{ file, path, ready string }{
		{"fleet.png", "/", `document.querySelectorAll("tr.run").length === 2`},
		{"run.png", "/runs/rollout", `document.querySelector("li.gate .task") !== null`},
		{"cluster.png", "/clusters/canary-1", `document.querySelector(".binding") !== null`},
	} {
		do(t, ctx, chromedp.Navigate(base+shot.path))
		waitFor(t, ctx, shot.path, shot.ready)
		if shot.file == "run.png" {
			do(t, ctx, chromedp.Focus(chromedp.CSS(`a.tile[href="/clusters/canary-1"]`)))
		}
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, shot.file), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
