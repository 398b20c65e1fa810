package renderproc_test

import (
	"context"
	"testing"
	"time"

	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/internal/testing/fleettest"
	"github.com/gitfleet/gitfleet/render"
	"github.com/gitfleet/gitfleet/render/renderproc"
)

// TestTenThousandClusterFleetsFitTheDefaultMemoryLimit: the first render
// of a fleet of 10,000 members, or of 10,000 placements, every object
// validated by config/crd's schemas, fits in half of serve's default
// --render-memory-limit, so the default leaves it twice what it needs.
func TestTenThousandClusterFleetsFitTheDefaultMemoryLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("renders 20,000 objects")
	}
	for _, tc := range []struct {
		name       string
		placements bool
	}{{"members", false}, {"placements", true}} {
		t.Run(tc.name, func(t *testing.T) {
			// The memory limit is what is tested: the time a loaded machine
			// takes is not, so the render may last until the test's deadline.
			lim := int64(renderproc.DefaultMemory / 2)
			limits := renderproc.Limits{Memory: lim, Timeout: time.Until(await.Deadline(t))}
			c, err := renderproc.Render(context.Background(), fleettest.Repo(10000, tc.placements), render.Options{}, limits)
			if err != nil {
				t.Fatalf("limit %s: %v", renderproc.Bytes(lim), err)
			}
			if n := len(c.Members) + len(c.Placements); n != 10000 || len(c.Errors) > 0 {
				t.Fatalf("%d objects, errors %v", n, c.Errors)
			}
		})
	}
}
