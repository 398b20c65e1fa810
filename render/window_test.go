package render

import (
	"strings"
	"testing"
)

const rolloutWindows = `apiVersion: gitfleet.io/v1alpha1
kind: RolloutWindow
metadata:
  name: prod
spec:
  timeZone: Europe/Berlin
  windows:
  - {days: [Mon, Tue, Wed, Thu], start: "09:00", end: "17:00"}
  freezes:
  - {name: holidays, start: "2026-12-20", end: "2027-01-04", reason: year end, allowedRuns: [hotfix]}
---
apiVersion: gitfleet.io/v1alpha1
kind: RolloutWindow
metadata:
  name: broken
spec:
  timeZone: Europe/Atlantis
---
apiVersion: gitfleet.io/v1alpha1
kind: RolloutWindow
metadata:
  name: early
spec:
  windows:
  - {start: "9", end: "17:00"}
`

// A RolloutWindow in Git is read into the content; one that does not
// validate is left out with an error naming its file, line and field: the
// CRD's schema (config/crd) says what kube-apiserver would, then
// ValidateRolloutWindow what the schema cannot.
func TestRenderReadsRolloutWindows(t *testing.T) {
	c := renderFS(t, map[string]string{"windows.yaml": rolloutWindows}, Options{})
	if len(c.RolloutWindows) != 1 || c.RolloutWindows[0].Name != "prod" ||
		c.RolloutWindows[0].Spec.Freezes[0].AllowedRuns[0] != "hotfix" || c.RolloutWindows[0].Spec.Windows[0].Days[3] != "Thu" {
		t.Fatalf("rollout windows %+v", c.RolloutWindows)
	}
	var got []string
	for _, e := range c.Errors {
		got = append(got, e.Error())
	}
	want := []string{
		"windows.yaml:17: RolloutWindow broken: spec.timeZone: Invalid value: \"Europe/Atlantis\": not an IANA time zone",
		"windows.yaml:25: RolloutWindow early: spec.windows[0].start: Invalid value: \"9\": spec.windows[0].start in body should match '^([01][0-9]|2[0-3]):[0-5][0-9]$'",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
