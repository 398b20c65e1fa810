package printers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/status"
)

// DescribeRun prints a run as `kubectl describe clusterstagedupdaterun`
// does (seeds 000/001). now is accepted for symmetry with the tables;
// kubectl's describe of a custom resource prints absolute times only.
func DescribeRun(w io.Writer, run *fleet.UpdateRun, now time.Time) error {
	_ = now
	return Describe(w, run)
}

// Describe prints any fleet object the way kubectl's generic describer
// prints custom resources: Name, Namespace, Labels, Annotations, then every
// other field, keys sorted, camelCase split into Title Words, nested two
// spaces per level, values aligned by one tabwriter over the whole output.
// gitfleet records no Kubernetes events; Events prints the status commits.
func Describe(w io.Writer, obj runtime.Object) error {
	data, err := status.Encode(obj)
	if err != nil {
		return err
	}
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var content map[string]any
	if err := dec.Decode(&content); err != nil {
		return err
	}
	md, _ := content["metadata"].(map[string]any)
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	strMap := func(m map[string]any, k string) map[string]string {
		out := map[string]string{}
		if v, ok := m[k].(map[string]any); ok {
			for k, x := range v {
				out[k] = fmt.Sprint(x)
			}
		}
		return out
	}

	// kubectl's describe writer: minwidth 0, tabwidth 8, padding 2, spaces.
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	d := &describer{w: tw}
	d.line(0, "Name:\t%s", str(md, "name"))
	d.line(0, "Namespace:\t%s", str(md, "namespace"))
	d.labels("Labels", strMap(md, "labels"))
	d.annotations("Annotations", strMap(md, "annotations"))
	d.content(0, content, "", map[string]bool{
		".metadata.name": true, ".metadata.namespace": true, ".metadata.labels": true,
		".metadata.annotations": true, ".metadata.managedFields": true,
	})
	if d.err != nil {
		return d.err
	}
	return tw.Flush()
}

type describer struct {
	w   io.Writer
	err error
}

func (d *describer) line(level int, format string, args ...any) {
	if d.err != nil {
		return
	}
	_, d.err = fmt.Fprintf(d.w, strings.Repeat("  ", level)+format+"\n", args...)
}

// labels is kubectl's printLabelsMultiline.
func (d *describer) labels(title string, labels map[string]string) {
	if len(labels) == 0 {
		d.line(0, "%s:\t<none>", title)
		return
	}
	for i, k := range sortedKeys(labels) {
		if i == 0 {
			d.line(0, "%s:\t%s=%s", title, k, labels[k])
		} else {
			d.line(0, "\t%s=%s", k, labels[k])
		}
	}
}

// maxAnnotationLen is where kubectl breaks long annotation values.
const maxAnnotationLen = 140

// annotations is kubectl's printAnnotationsMultiline (without the
// last-applied-configuration, which gitfleet never writes).
func (d *describer) annotations(title string, annotations map[string]string) {
	keys := sortedKeys(annotations)
	if len(keys) == 0 {
		d.line(0, "%s:\t<none>", title)
		return
	}
	for i, k := range keys {
		prefix := title + ":\t"
		if i > 0 {
			prefix = "\t"
		}
		v := strings.TrimSuffix(annotations[k], "\n")
		if len(v)+len(k)+2 > maxAnnotationLen || strings.Contains(v, "\n") {
			d.line(0, "%s%s:", prefix, k)
			for _, s := range strings.Split(v, "\n") {
				// gitfleet's own notes (gitfleet.io/rejected-change says
				// which change was refused and why) are for people to read
				// whole; kubectl's cut is for machine-written blobs.
				if len(s) > maxAnnotationLen-2 && !strings.HasPrefix(k, fleet.GitfleetPrefix) {
					s = s[:maxAnnotationLen-2] + "..."
				}
				d.line(0, "\t  %s", s)
			}
			continue
		}
		d.line(0, "%s%s: %s", prefix, k, v)
	}
}

// content is kubectl's printUnstructuredContent.
func (d *describer) content(level int, content map[string]any, prefix string, skip map[string]bool) {
	keys := make([]string, 0, len(content))
	for k := range content {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		path := prefix + "." + k
		if skip[path] {
			continue
		}
		switch v := content[k].(type) {
		case map[string]any:
			d.line(level, "%s:", smartLabel(k))
			d.content(level+1, v, path, skip)
		case []any:
			d.line(level, "%s:", smartLabel(k))
			for _, e := range v {
				if m, ok := e.(map[string]any); ok {
					d.content(level+1, m, path, skip)
				} else {
					d.line(level+1, "%v", e)
				}
			}
		default:
			d.line(level, "%s:\t%v", smartLabel(k), v)
		}
	}
}

// commonAcronyms stay upper case in labels, as in kubectl.
var commonAcronyms = map[string]bool{"API": true, "URL": true, "UID": true, "OSB": true, "GUID": true}

// smartLabel turns a field name into kubectl's label: "observedGeneration"
// → "Observed Generation", "apiVersion" → "API Version". Names with
// characters other than letters and '-' are kept as they are.
func smartLabel(field string) string {
	if strings.IndexFunc(field, func(r rune) bool { return !unicode.IsLetter(r) && r != '-' }) != -1 {
		return field
	}
	parts := splitCamel(field)
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		if commonAcronyms[strings.ToUpper(p)] {
			out = append(out, strings.ToUpper(p))
			continue
		}
		r := []rune(p)
		r[0] = unicode.ToUpper(r[0])
		out = append(out, string(r))
	}
	return strings.Join(out, " ")
}

// splitCamel splits like github.com/fatih/camelcase (which kubectl uses):
// runs of one character class, with an upper-case letter that starts a
// lower-case run moved into it ("HTTPServer" → "HTTP", "Server").
func splitCamel(s string) []string {
	class := func(r rune) int {
		switch {
		case unicode.IsLower(r):
			return 1
		case unicode.IsUpper(r):
			return 2
		case unicode.IsDigit(r):
			return 3
		}
		return 4
	}
	var runs [][]rune
	last := 0
	for _, r := range s {
		c := class(r)
		if c == last && len(runs) > 0 {
			runs[len(runs)-1] = append(runs[len(runs)-1], r)
		} else {
			runs = append(runs, []rune{r})
		}
		last = c
	}
	for i := 0; i+1 < len(runs); i++ {
		if class(runs[i][0]) == 2 && class(runs[i+1][0]) == 1 {
			runs[i+1] = append([]rune{runs[i][len(runs[i])-1]}, runs[i+1]...)
			runs[i] = runs[i][:len(runs[i])-1]
		}
	}
	out := make([]string, 0, len(runs))
	for _, r := range runs {
		if len(r) > 0 {
			out = append(out, string(r))
		}
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Event is one thing that happened to an object: a commit that changed its
// status file. gitfleet records no Kubernetes events; the status commits,
// whose subjects say what changed, are its history.
type Event struct {
	Time    metav1.Time
	Commit  string
	Message string
}

// Events ends a description as kubectl's Events section does, newest last.
// limit is how many the caller asked Git for: reaching it means older
// events exist, which the heading says.
func Events(w io.Writer, events []Event, limit int, now time.Time) error {
	if len(events) == 0 {
		_, err := fmt.Fprintln(w, "Events:  <none>")
		return err
	}
	heading := "Events:"
	if len(events) >= limit {
		heading = fmt.Sprintf("Events (the last %d):", limit)
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	d := &describer{w: tw}
	d.line(0, "%s", heading)
	d.line(1, "Age\tCommit\tMessage")
	d.line(1, "---\t------\t-------")
	for _, e := range events {
		d.line(1, "%s\t%s\t%s", Age(e.Time, now), e.Commit, e.Message)
	}
	if d.err != nil {
		return d.err
	}
	return tw.Flush()
}
