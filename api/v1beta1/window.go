package v1beta1

import (
	"fmt"
	"slices"
	"strings"
	"time"
	// Zones are embedded so that a static image without /usr/share/zoneinfo
	// still knows every IANA zone a RolloutWindow may name.
	_ "time/tzdata"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Rollout windows and freezes are gitfleet's (KubeFleet issue #521 asks for
// maintenance windows per member; Rancher Fleet's Schedule, Kargo's
// PromotionWindow and Argo CD's sync windows are the same idea). Times are
// wall-clock times of an IANA zone, evaluated through time.LoadLocation at
// every instant asked about, never converted to UTC once: Argo CD's windows
// were UTC cron lines that moved by an hour at every DST change (#3204), and
// a zone taken once keeps moving them (#17750).

const (
	// KindRolloutWindow is the kind of a named set of windows and freezes.
	KindRolloutWindow = "RolloutWindow"
	// RolloutWindowsAnnotation on a MemberCluster names the RolloutWindows
	// (comma-separated) the cluster may start an update in.
	RolloutWindowsAnnotation = GitfleetGroup + "/rollout-windows"
)

// RolloutWindow is when updates may start: weekly windows in a time zone,
// less freezes. A stage of a strategy (StageConfig.Windows) and a member
// cluster (RolloutWindowsAnnotation) name RolloutWindows; a cluster starts
// only when every window its stage and itself name is open.
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type RolloutWindow struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec RolloutWindowSpec `json:"spec"`
}

// RolloutWindowSpec is a window's schedule.
type RolloutWindowSpec struct {
	// TimeZone is the IANA zone the times are in ("Europe/Berlin");
	// defaults to UTC.
	// +kubebuilder:validation:Optional
	TimeZone string `json:"timeZone,omitempty"`
	// Windows are the weekly times updates may start in; none means at any
	// time outside the freezes.
	// +kubebuilder:validation:Optional
	Windows []WeeklyWindow `json:"windows,omitempty"`
	// Freezes are date ranges no update starts in, windows or not.
	// +kubebuilder:validation:Optional
	Freezes []Freeze `json:"freezes,omitempty"`
}

// WeeklyWindow opens at Start and closes at End on each of Days, in the
// window's zone. An End at or before Start closes on the next day.
type WeeklyWindow struct {
	// Days are the weekdays the window opens on (Mon … Sun); none means
	// every day.
	// +kubebuilder:validation:items:Enum=Mon;Tue;Wed;Thu;Fri;Sat;Sun
	// +kubebuilder:validation:Optional
	Days []string `json:"days,omitempty"`
	// Start is the local opening time, "HH:MM".
	// +kubebuilder:validation:Pattern="^([01][0-9]|2[0-3]):[0-5][0-9]$"
	Start string `json:"start"`
	// End is the local closing time, "HH:MM" ("24:00" is midnight).
	// +kubebuilder:validation:Pattern="^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$"
	End string `json:"end"`
}

// Freeze blocks updates from Start to End in the window's zone. A date
// ("2026-12-20") means its local midnight; an End given as a date lasts
// through that whole day. "2006-01-02T15:04" gives a time.
type Freeze struct {
	// +kubebuilder:validation:Pattern="^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
	// +kubebuilder:validation:MaxLength=63
	Name   string `json:"name"`
	Start  string `json:"start"`
	End    string `json:"end"`
	Reason string `json:"reason,omitempty"`
	// AllowedRuns are the update runs the freeze lets through (the
	// override: a reviewed change to this file), by name, or
	// "namespace/name" for a StagedUpdateRun. Each stage records the
	// freezes it crossed (status.stagesStatus[].overriddenFreezes).
	// +kubebuilder:validation:Optional
	AllowedRuns []string `json:"allowedRuns,omitempty"`
}

var weekdays = map[string]time.Weekday{"Sun": time.Sunday, "Mon": time.Monday, "Tue": time.Tuesday,
	"Wed": time.Wednesday, "Thu": time.Thursday, "Fri": time.Friday, "Sat": time.Saturday}

const (
	freezeDateLayout = "2006-01-02"
	freezeTimeLayout = "2006-01-02T15:04"
)

// Location is the window's zone (UTC when unset).
func (s *RolloutWindowSpec) Location() (*time.Location, error) {
	if s.TimeZone == "" {
		return time.UTC, nil
	}
	return time.LoadLocation(s.TimeZone)
}

func clockTime(s string) (h, m int, err error) {
	if _, err = fmt.Sscanf(s, "%02d:%02d", &h, &m); err != nil || len(s) != 5 || h > 24 || m > 59 || (h == 24 && m != 0) {
		return 0, 0, fmt.Errorf("not a time of day HH:MM")
	}
	return h, m, nil
}

// freezeBounds parses a freeze's start and end in loc.
func (f *Freeze) bounds(loc *time.Location) (start, end time.Time, err error) {
	if start, err = freezeTime(f.Start, loc, false); err != nil {
		return
	}
	end, err = freezeTime(f.End, loc, true)
	return
}

func freezeTime(s string, loc *time.Location, end bool) (time.Time, error) {
	if t, err := time.ParseInLocation(freezeTimeLayout, s, loc); err == nil {
		return t, nil
	}
	d, err := time.ParseInLocation(freezeDateLayout, s, loc)
	if err != nil {
		return time.Time{}, fmt.Errorf("neither a date YYYY-MM-DD nor a time YYYY-MM-DDTHH:MM")
	}
	if end {
		d = time.Date(d.Year(), d.Month(), d.Day()+1, 0, 0, 0, 0, loc)
	}
	return d, nil
}

// ValidateRolloutWindow checks what the CRD's schema cannot: the zone, the
// times and that a freeze ends after it starts.
func ValidateRolloutWindow(w *RolloutWindow) field.ErrorList {
	errs := ValidateObjectMeta(KindRolloutWindow, &w.ObjectMeta)
	spec := field.NewPath("spec")
	loc, err := w.Spec.Location()
	if err != nil {
		errs = append(errs, field.Invalid(spec.Child("timeZone"), w.Spec.TimeZone, "not an IANA time zone"))
		loc = time.UTC
	}
	for i, win := range w.Spec.Windows {
		p := spec.Child("windows").Index(i)
		for j, d := range win.Days {
			if _, ok := weekdays[d]; !ok {
				errs = append(errs, field.NotSupported(p.Child("days").Index(j), d, []string{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}))
			}
		}
		if h, _, err := clockTime(win.Start); err != nil || h == 24 {
			errs = append(errs, field.Invalid(p.Child("start"), win.Start, "not a time of day HH:MM"))
		}
		if _, _, err := clockTime(win.End); err != nil {
			errs = append(errs, field.Invalid(p.Child("end"), win.End, err.Error()))
		}
	}
	names := map[string]bool{}
	for i, f := range w.Spec.Freezes {
		p := spec.Child("freezes").Index(i)
		if f.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else if names[f.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), f.Name))
		}
		names[f.Name] = true
		start, err := freezeTime(f.Start, loc, false)
		if err != nil {
			errs = append(errs, field.Invalid(p.Child("start"), f.Start, err.Error()))
		}
		end, err2 := freezeTime(f.End, loc, true)
		if err2 != nil {
			errs = append(errs, field.Invalid(p.Child("end"), f.End, err2.Error()))
		}
		if err == nil && err2 == nil && !end.After(start) {
			errs = append(errs, field.Invalid(p.Child("end"), f.End, "the freeze must end after it starts"))
		}
	}
	return errs
}

// WindowNames reads a comma-separated list of RolloutWindow names (a
// MemberCluster's RolloutWindowsAnnotation, say).
func WindowNames(list string) []string {
	var out []string
	for _, n := range strings.Split(list, ",") {
		if n = strings.TrimSpace(n); n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// WindowWait is why a cluster may not start at an instant: the window
// (or "<window>/<freeze>") that holds it and when every window it needs is
// next open (zero when not within WindowHorizon).
// +kubebuilder:object:generate=false
type WindowWait struct {
	Window string
	Opens  time.Time
	// Missing: no RolloutWindow has the name Window.
	Missing bool
}

// WindowWaitPrefix starts the message of a stage that waits for a window
// (WindowWait.String); `gitfleet get runs -o wide` shows it.
const WindowWaitPrefix = "waiting for window "

// WindowHorizon is how far ahead an opening is looked for.
const WindowHorizon = 400 * 24 * time.Hour

// String is the message a waiting run shows:
// "waiting for window <name> (opens <RFC 3339>)".
func (w WindowWait) String() string {
	opens := "not within 400 days"
	switch {
	case w.Missing:
		return fmt.Sprintf("%s%s (no RolloutWindow of that name)", WindowWaitPrefix, w.Window)
	case !w.Opens.IsZero():
		opens = w.Opens.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("%s%s (opens %s)", WindowWaitPrefix, w.Window, opens)
}

// WaitForWindows reports whether an update of run ("name" or
// "namespace/name"; "" for none) may not start at t under every window of
// ws, and if so what holds it and when all of them next open. A window
// whose spec does not parse is never open (its validation refuses it in
// Git before it gets here).
func WaitForWindows(ws []*RolloutWindow, t time.Time, run string) (WindowWait, bool) {
	overridden := func(f *Freeze) bool { return run != "" && slices.Contains(f.AllowedRuns, run) }
	by := blocking(ws, t, overridden)
	if by == "" {
		return WindowWait{}, false
	}
	wait := WindowWait{Window: by}
	var candidates []time.Time
	for _, w := range ws {
		candidates = append(candidates, w.Spec.openings(t, t.Add(WindowHorizon))...)
	}
	slices.SortFunc(candidates, func(a, b time.Time) int { return a.Compare(b) })
	for _, c := range candidates {
		if blocking(ws, c, overridden) == "" {
			wait.Opens = c
			break
		}
	}
	return wait, true
}

// blocking names the first window of ws closed at t, "" when all are open.
func blocking(ws []*RolloutWindow, t time.Time, overridden func(*Freeze) bool) string {
	for _, w := range ws {
		open, freeze := w.Spec.openAt(t, overridden)
		if !open {
			if freeze != "" {
				return w.Name + "/" + freeze
			}
			return w.Name
		}
	}
	return ""
}

// openAt reports whether s is open at t; freeze names the freeze that
// closes it, if one does.
func (s *RolloutWindowSpec) openAt(t time.Time, overridden func(*Freeze) bool) (open bool, freeze string) {
	loc, err := s.Location()
	if err != nil {
		return false, ""
	}
	for i := range s.Freezes {
		f := &s.Freezes[i]
		start, end, err := f.bounds(loc)
		if err != nil {
			return false, f.Name
		}
		if !t.Before(start) && t.Before(end) && !overridden(f) {
			return false, f.Name
		}
	}
	if len(s.Windows) == 0 {
		return true, ""
	}
	lt := t.In(loc)
	for i := range s.Windows {
		// An occurrence that began on the day before may still be open.
		for _, day := range []int{lt.Day() - 1, lt.Day()} {
			start, end, ok := s.Windows[i].occurrence(lt.Year(), lt.Month(), day, loc)
			if ok && !t.Before(start) && t.Before(end) {
				return true, ""
			}
		}
	}
	return false, ""
}

// occurrence is the window's opening and closing on a local day (time.Date
// normalises day overflow); ok is false when it does not open that day.
// Each bound is made with time.Date in loc, so it is the wall-clock time of
// that very day, whatever offset the zone has then.
func (w *WeeklyWindow) occurrence(year int, month time.Month, day int, loc *time.Location) (start, end time.Time, ok bool) {
	sh, sm, err := clockTime(w.Start)
	if err != nil {
		return
	}
	eh, em, err := clockTime(w.End)
	if err != nil {
		return
	}
	start = time.Date(year, month, day, sh, sm, 0, 0, loc)
	if len(w.Days) > 0 && !slices.ContainsFunc(w.Days, func(d string) bool { return weekdays[d] == start.Weekday() }) {
		return time.Time{}, time.Time{}, false
	}
	endDay := day
	if eh*60+em <= sh*60+sm {
		endDay++
	}
	return start, time.Date(year, month, endDay, eh, em, 0, 0, loc), true
}

// openings are the instants in [from, to) at which s may turn open: its
// windows' openings and its freezes' ends.
func (s *RolloutWindowSpec) openings(from, to time.Time) []time.Time {
	loc, err := s.Location()
	if err != nil {
		return nil
	}
	var out []time.Time
	in := func(t time.Time) bool { return !t.Before(from) && t.Before(to) }
	for i := range s.Freezes {
		if _, end, err := s.Freezes[i].bounds(loc); err == nil && in(end) {
			out = append(out, end)
		}
	}
	lf := from.In(loc)
	for d := 0; d <= int(to.Sub(from)/(24*time.Hour))+1; d++ {
		for i := range s.Windows {
			if start, _, ok := s.Windows[i].occurrence(lf.Year(), lf.Month(), lf.Day()+d, loc); ok && in(start) {
				out = append(out, start)
			}
		}
	}
	return out
}
