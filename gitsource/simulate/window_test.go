package simulate

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

const officeWindow = `apiVersion: gitfleet.io/v1alpha1
kind: RolloutWindow
metadata:
  name: office
spec:
  timeZone: Europe/Berlin
  windows:
  - {days: [Mon, Tue, Wed, Thu, Fri], start: "09:00", end: "17:00"}
  freezes:
  - {name: holidays, start: "2025-12-20", end: "2026-01-04"}
`

// The quickstart with its canary stage in an office-hours window and a
// holiday freeze: the simulation jumps to the opening after the freeze
// (Monday 2026-01-05, 09:00 in Berlin) and the timeline says why it waited.
func TestSimulationWaitsForTheWindowAfterAFreeze(t *testing.T) {
	files := quickstart(t)
	files["strategy.yaml"] = bytes.Replace(files["strategy.yaml"], []byte("      sortingLabelKey: order\n"),
		[]byte("      sortingLabelKey: order\n      windows: [office]\n"), 1)
	if !bytes.Contains(files["strategy.yaml"], []byte("windows: [office]")) {
		t.Fatal("the quickstart's strategy changed; the test no longer adds the window")
	}
	files["window.yaml"] = []byte(officeWindow)
	res, err := Run(context.Background(), Options{Repo: newRepo(t, files), Until: 10 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteTimeline(&out, res.Timeline); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(out.String(), "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	text := strings.Join(lines, "\n")
	opens := time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC).Sub(res.Start)
	for _, want := range []string{
		"+1m10s example-run stage canary: waiting for window office/holidays (opens 2026-01-05T08:00:00Z)",
		"+" + opens.String() + " example-run stage canary: cluster member3 started",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("timeline lacks %q:\n%s", want, text)
		}
	}
}
