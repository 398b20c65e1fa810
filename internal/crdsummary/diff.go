package crdsummary

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
)

// A Difference is a fact one summary has and the other has not.
type Difference struct {
	Kind string
	// Want is true for a fact of the wanted summary (upstream's) the other
	// lacks, false for a fact only the other (gitfleet's) has.
	Want bool
	Line string
}

// String is the line marked - (wanted, missing) or + (extra), as a diff.
func (d Difference) String() string {
	if d.Want {
		return "- " + d.Line
	}
	return "+ " + d.Line
}

// Diff lists the facts of want that got lacks and those of got that want
// lacks, by kind then line, a missing fact before an extra one of the same
// line.
func Diff(want, got Summary) []Difference {
	var out []Difference
	kinds := map[string]bool{}
	for k := range want {
		kinds[k] = true
	}
	for k := range got {
		kinds[k] = true
	}
	for k := range kinds {
		w, g := set(want[k]), set(got[k])
		for l := range w {
			if !g[l] {
				out = append(out, Difference{Kind: k, Want: true, Line: l})
			}
		}
		for l := range g {
			if !w[l] {
				out = append(out, Difference{Kind: k, Want: false, Line: l})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Want && !b.Want
	})
	return out
}

func set(lines []string) map[string]bool {
	m := make(map[string]bool, len(lines))
	for _, l := range lines {
		m[l] = true
	}
	return m
}

// An Allowlist holds the deliberate differences, one entry a line: a mark,
// a pattern and a reason after " # ", as in
// "- ClusterResourceEnvelope *   # not served".
//
// "-" allows a fact of upstream's summary that gitfleet's lacks, "+" one
// only gitfleet's has. In the pattern, * matches any characters; the rest
// is literal and must match the whole line. The reason after " # " is
// required. Blank lines and lines starting with # are comments.
type Allowlist struct {
	Entries []AllowEntry
}

// An AllowEntry allows the differences its pattern matches.
type AllowEntry struct {
	LineNo  int
	Want    bool
	Pattern string
	Reason  string
	re      *regexp.Regexp
}

func (e AllowEntry) String() string {
	m := "+"
	if e.Want {
		m = "-"
	}
	return fmt.Sprintf("line %d: %s %s", e.LineNo, m, e.Pattern)
}

// Matches reports whether the entry allows d.
func (e AllowEntry) Matches(d Difference) bool {
	return e.Want == d.Want && e.re.MatchString(d.Line)
}

// ParseAllowlist reads an allowlist.
func ParseAllowlist(r io.Reader) (*Allowlist, error) {
	a := &Allowlist{}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		e := AllowEntry{LineNo: n}
		switch {
		case strings.HasPrefix(l, "- "):
			e.Want = true
		case strings.HasPrefix(l, "+ "):
		default:
			return nil, fmt.Errorf("line %d: an entry starts with \"- \" (upstream only) or \"+ \" (gitfleet only)", n)
		}
		pattern, reason, ok := strings.Cut(l[2:], " # ")
		e.Pattern, e.Reason = strings.TrimSpace(pattern), strings.TrimSpace(reason)
		if !ok || e.Reason == "" {
			return nil, fmt.Errorf("line %d: %q has no reason (\" # why\")", n, l)
		}
		parts := strings.Split(e.Pattern, "*")
		for i, p := range parts {
			parts[i] = regexp.QuoteMeta(p)
		}
		e.re = regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
		a.Entries = append(a.Entries, e)
	}
	return a, sc.Err()
}

// Filter splits diffs into those no entry allows and, for each entry, the
// number of differences it allowed (an entry allowing none is stale).
func (a *Allowlist) Filter(diffs []Difference) (unexplained []Difference, used []int) {
	used = make([]int, len(a.Entries))
	for _, d := range diffs {
		allowed := false
		for i, e := range a.Entries {
			if e.Matches(d) {
				used[i]++
				allowed = true
			}
		}
		if !allowed {
			unexplained = append(unexplained, d)
		}
	}
	return unexplained, used
}

// Report writes diffs grouped by kind, a header per kind with its count.
func Report(diffs []Difference) string {
	var b bytes.Buffer
	for i := 0; i < len(diffs); {
		j := i
		for j < len(diffs) && diffs[j].Kind == diffs[i].Kind {
			j++
		}
		fmt.Fprintf(&b, "%s: %d difference(s) (- upstream only, + gitfleet only)\n", diffs[i].Kind, j-i)
		for _, d := range diffs[i:j] {
			fmt.Fprintf(&b, "  %s\n", d)
		}
		i = j
	}
	return b.String()
}
