package v1beta1

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func rolloutWindow(name, zone string, windows []WeeklyWindow, freezes ...Freeze) *RolloutWindow {
	return &RolloutWindow{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: RolloutWindowSpec{TimeZone: zone, Windows: windows, Freezes: freezes}}
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

var officeHours = []WeeklyWindow{{Days: []string{"Mon", "Tue", "Wed", "Thu", "Fri"}, Start: "09:00", End: "17:00"}}

// The same local hours are a different UTC instant on either side of a DST
// change, in both directions (Argo CD #3204, #17750).
func TestWindowsFollowDSTInTheirZone(t *testing.T) {
	ny := rolloutWindow("ny", "America/New_York", officeHours)
	berlin := rolloutWindow("berlin", "Europe/Berlin", officeHours)
	for _, tc := range []struct {
		name  string
		w     *RolloutWindow
		at    string
		open  bool
		opens string
	}{
		// New York springs forward on Sunday 2026-03-08: EST (-5) → EDT (-4).
		{"new york friday before the change, 09:00 EST", ny, "2026-03-06T14:00:00Z", true, ""},
		{"new york friday before the change, 08:59 EST", ny, "2026-03-06T13:59:00Z", false, "2026-03-06T14:00:00Z"},
		{"new york weekend across the change", ny, "2026-03-07T12:00:00Z", false, "2026-03-09T13:00:00Z"},
		{"new york monday after, 09:00 EDT", ny, "2026-03-09T13:00:00Z", true, ""},
		{"new york monday after, 16:59 EDT", ny, "2026-03-09T20:59:00Z", true, ""},
		{"new york monday after, 17:00 EDT closed", ny, "2026-03-09T21:00:00Z", false, "2026-03-10T13:00:00Z"},
		// Berlin falls back on Sunday 2026-10-25: CEST (+2) → CET (+1).
		{"berlin friday before the change, 09:00 CEST", berlin, "2026-10-23T07:00:00Z", true, ""},
		{"berlin friday evening", berlin, "2026-10-23T15:00:00Z", false, "2026-10-26T08:00:00Z"},
		{"berlin monday after, 08:59 CET", berlin, "2026-10-26T07:59:00Z", false, "2026-10-26T08:00:00Z"},
		{"berlin monday after, 16:30 CET", berlin, "2026-10-26T15:30:00Z", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wait, blocked := WaitForWindows([]*RolloutWindow{tc.w}, utc(tc.at), "")
			if blocked == tc.open {
				t.Fatalf("blocked = %v, want open = %v (%v)", blocked, tc.open, wait)
			}
			if !tc.open && !wait.Opens.Equal(utc(tc.opens)) {
				t.Errorf("opens %v, want %s", wait.Opens.UTC(), tc.opens)
			}
		})
	}
}

// A window that crosses midnight is open after midnight on the next day,
// and a window starting in the hour a spring-forward skips still opens.
func TestWindowAcrossMidnightAndInTheSkippedHour(t *testing.T) {
	night := rolloutWindow("night", "America/New_York", []WeeklyWindow{{Days: []string{"Sat", "Sun"}, Start: "22:00", End: "03:00"}})
	// Saturday 2026-03-07 22:00 EST = 03:00Z Sunday; 01:00 EST Sunday is 06:00Z.
	if _, blocked := WaitForWindows([]*RolloutWindow{night}, utc("2026-03-08T06:00:00Z"), ""); blocked {
		t.Error("the night window is closed at 01:00 on Sunday, after opening on Saturday")
	}
	skipped := rolloutWindow("skipped", "America/New_York", []WeeklyWindow{{Days: []string{"Sun"}, Start: "02:30", End: "04:00"}})
	wait, blocked := WaitForWindows([]*RolloutWindow{skipped}, utc("2026-03-08T05:00:00Z"), "")
	if !blocked || wait.Opens.IsZero() || wait.Opens.After(utc("2026-03-08T08:00:00Z")) {
		t.Errorf("a window opening at 02:30 on the spring-forward night opens at %v (blocked %v), want by 04:00 EDT", wait.Opens, blocked)
	}
}

func TestFreezeAcrossNewYearBlocksAndCanBeOverridden(t *testing.T) {
	holiday := rolloutWindow("prod", "Europe/Berlin", officeHours,
		Freeze{Name: "holidays", Start: "2026-12-20", End: "2027-01-04", Reason: "year end"})
	at := utc("2026-12-31T10:00:00Z") // Thursday, office hours in Berlin
	wait, blocked := WaitForWindows([]*RolloutWindow{holiday}, at, "")
	if !blocked || wait.Window != "prod/holidays" {
		t.Fatalf("New Year's Eve: blocked %v by %q, want prod/holidays", blocked, wait.Window)
	}
	// The freeze lasts through 2027-01-04 (a Monday); the window opens on
	// Tuesday 09:00 CET.
	if want := utc("2027-01-05T08:00:00Z"); !wait.Opens.Equal(want) {
		t.Errorf("opens %v, want %v", wait.Opens.UTC(), want)
	}
	if got := wait.String(); got != "waiting for window prod/holidays (opens 2027-01-05T08:00:00Z)" {
		t.Errorf("message %q", got)
	}
	holiday.Spec.Freezes[0].AllowedRuns = []string{"hotfix"}
	if _, blocked := WaitForWindows([]*RolloutWindow{holiday}, at, "hotfix"); blocked {
		t.Error("the freeze holds a run it allows")
	}
	if _, blocked := WaitForWindows([]*RolloutWindow{holiday}, at, "other"); !blocked {
		t.Error("the freeze lets through a run it does not allow")
	}
	if _, blocked := WaitForWindows([]*RolloutWindow{holiday}, utc("2026-12-19T10:00:00Z"), ""); !blocked {
		t.Error("Saturday before the freeze is outside the weekday window, yet open")
	}
	if _, blocked := WaitForWindows([]*RolloutWindow{holiday}, utc("2026-12-18T10:00:00Z"), ""); blocked {
		t.Error("Friday before the freeze is blocked")
	}
}

// Two windows must both be open: the opening is the first instant of their
// overlap.
func TestAllNamedWindowsMustBeOpen(t *testing.T) {
	ny := rolloutWindow("ny", "America/New_York", officeHours)
	berlin := rolloutWindow("berlin", "Europe/Berlin", officeHours)
	// Monday 2026-03-09: Berlin 09–17 CET is 08–16Z; New York 09–17 EDT is 13–21Z.
	wait, blocked := WaitForWindows([]*RolloutWindow{berlin, ny}, utc("2026-03-09T09:00:00Z"), "")
	if !blocked || wait.Window != "ny" || !wait.Opens.Equal(utc("2026-03-09T13:00:00Z")) {
		t.Errorf("got %+v blocked %v, want ny opening at 13:00Z", wait, blocked)
	}
}

func TestValidateRolloutWindowNamesTheField(t *testing.T) {
	w := rolloutWindow("bad", "Mars/Olympus", []WeeklyWindow{{Days: []string{"Mon", "Funday"}, Start: "25:00", End: "9"}},
		Freeze{Name: "f", Start: "2027-01-04", End: "2026-12-20"}, Freeze{Name: "f", Start: "soon", End: "2027-01-01"})
	var got []string
	for _, e := range ValidateRolloutWindow(w) {
		got = append(got, e.Field)
	}
	want := "spec.timeZone spec.windows[0].days[1] spec.windows[0].start spec.windows[0].end spec.freezes[0].end spec.freezes[1].name spec.freezes[1].start"
	if strings.Join(got, " ") != want {
		t.Errorf("fields %q, want %q", strings.Join(got, " "), want)
	}
	if errs := ValidateRolloutWindow(rolloutWindow("good", "Europe/Berlin", officeHours, Freeze{Name: "x", Start: "2026-12-20T18:00", End: "2027-01-04"})); len(errs) > 0 {
		t.Errorf("a valid window refused: %v", errs)
	}
}
