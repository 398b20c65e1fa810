package printers

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Options select the output variant.
type Options struct {
	// Wide adds the -o wide columns.
	Wide bool
	// NoHeaders leaves out the header line (kubectl --no-headers, and the
	// rows --watch prints after the first table).
	NoHeaders bool
	// ShowKind prefixes names with kind.group/, as kubectl does when one
	// command lists several kinds (get runs,approvals).
	ShowKind bool
	// Only, when set, prints the rows of the objects it accepts, aligned
	// as in the whole table: --watch prints the rows that changed under
	// the columns of its first table.
	Only func(metav1.Object) bool
}

// column is one table column. Wide columns print only with -o wide, at their
// declared position (as kubectl does with priority-1 printer columns).
type column[T any] struct {
	header string
	wide   bool
	cell   func(T) string
}

// printTable writes a kubectl-style table: uppercase headers, columns
// separated by at least three spaces. Objects are sorted by namespace then
// name; a NAMESPACE column leads when they span several namespaces (as with
// kubectl -A; a single namespace is implied, as with kubectl -n). An empty
// list prints nothing: the caller says "No resources found".
func printTable[T metav1.Object](w io.Writer, objs []T, cols []column[T], opts Options) error {
	return printSorted(w, objs, cols, opts, func(a, b T) bool {
		if a.GetNamespace() != b.GetNamespace() {
			return a.GetNamespace() < b.GetNamespace()
		}
		return a.GetName() < b.GetName()
	})
}

// printSorted is printTable with its own row order.
func printSorted[T metav1.Object](w io.Writer, objs []T, cols []column[T], opts Options, less func(a, b T) bool) error {
	if len(objs) == 0 {
		return nil
	}
	sorted := append([]T(nil), objs...)
	sort.SliceStable(sorted, func(i, j int) bool { return less(sorted[i], sorted[j]) })
	namespaces := map[string]bool{}
	for _, o := range sorted {
		namespaces[o.GetNamespace()] = true
	}
	var shown []column[T]
	if len(namespaces) > 1 {
		shown = append(shown, column[T]{header: "NAMESPACE", cell: func(o T) string { return o.GetNamespace() }})
	}
	for _, c := range cols {
		if !c.wide || opts.Wide {
			shown = append(shown, c)
		}
	}

	// kubectl's table writer: minwidth 6, tabwidth 4, padding 3, spaces.
	// Every row goes through it, so the widths are the whole table's even
	// when Only prints a few rows; line i+1 is row i.
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 6, 4, 3, ' ', 0)
	headers := make([]string, len(shown))
	for i, c := range shown {
		headers[i] = c.header
	}
	fmt.Fprintln(tw, strings.Join(headers, "\t"))
	for _, o := range sorted {
		cells := make([]string, len(shown))
		for i, c := range shown {
			// A cell is one line, or the rows would shift.
			cells[i] = strings.ReplaceAll(c.cell(o), "\n", " ")
		}
		if opts.ShowKind {
			cells[nameIndex(shown)] = KindPrefix(o) + cells[nameIndex(shown)]
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	lines := strings.SplitAfter(table.String(), "\n")
	var out strings.Builder
	if !opts.NoHeaders {
		out.WriteString(lines[0])
	}
	for i, o := range sorted {
		if opts.Only == nil || opts.Only(o) {
			out.WriteString(lines[i+1])
		}
	}
	_, err := io.WriteString(w, out.String())
	return err
}

// nameIndex is the position of the NAME column.
func nameIndex[T any](cols []column[T]) int {
	for i, c := range cols {
		if c.header == "NAME" {
			return i
		}
	}
	return 0
}

// KindPrefix is kubectl's "kind.group/" that names an object's kind in
// listings of several kinds ("clusterstagedupdaterun.placement.kubernetes-fleet.io/").
// Objects whose kind is not set get none.
func KindPrefix(o any) string {
	ro, ok := o.(runtime.Object)
	if !ok {
		return ""
	}
	gvk := ro.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" {
		return ""
	}
	k := strings.ToLower(gvk.Kind)
	if gvk.Group != "" {
		k += "." + gvk.Group
	}
	return k + "/"
}

// nameColumn is the NAME column every table starts with.
func nameColumn[T metav1.Object]() column[T] {
	return column[T]{header: "NAME", cell: func(o T) string { return o.GetName() }}
}

// ageColumn is kubectl's AGE: time since creation, "<unknown>" without one.
func ageColumn[T metav1.Object](now time.Time) column[T] {
	return column[T]{header: "AGE", cell: func(o T) string { return Age(o.GetCreationTimestamp(), now) }}
}

// Age formats the time since t like kubectl's AGE column.
func Age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// conditionStatus is what a `.status.conditions[?(@.type=="X")].status`
// printer column shows: the status, or nothing when the condition is absent.
func conditionStatus(conds []metav1.Condition, typ string) string {
	if c := meta.FindStatusCondition(conds, typ); c != nil {
		return string(c.Status)
	}
	return ""
}

// conditionGeneration is the condition's observedGeneration, or nothing.
func conditionGeneration(conds []metav1.Condition, typ string) string {
	if c := meta.FindStatusCondition(conds, typ); c != nil {
		return fmt.Sprint(c.ObservedGeneration)
	}
	return ""
}
