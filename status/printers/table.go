package printers

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	cliprinters "k8s.io/cli-runtime/pkg/printers"
)

// Options select the output variant: the flags of kubectl get that shape
// a table.
type Options struct {
	// Wide adds the -o wide columns.
	Wide bool
	// NoHeaders leaves out the header line (kubectl --no-headers, and the
	// rows --watch prints after the first table).
	NoHeaders bool
	// ShowKind prefixes names with kind.group/, as kubectl does when one
	// command lists several kinds (get runs,approvals).
	ShowKind bool
	// ShowLabels adds kubectl's LABELS column last (--show-labels).
	ShowLabels bool
	// LabelColumns adds a column per label key, headed by the key's name
	// in capitals (kubectl -L).
	LabelColumns []string
	// Sorted keeps the objects in the order given (kubectl --sort-by)
	// instead of the table's own.
	Sorted bool
	// Only, when set, prints the rows of the objects it accepts, aligned
	// as in the whole table: --watch prints the rows that changed under
	// the columns of its first table.
	Only func(metav1.Object) bool
}

// column is one table column. Wide columns print only with -o wide, at their
// declared position (they are priority-1 columns, as KubeFleet's are).
type column[T any] struct {
	header string
	wide   bool
	cell   func(T) string
}

// printTable writes a kubectl table. Objects are sorted by namespace then
// name, the order an API server lists them in; a NAMESPACE column leads
// when they span several namespaces (as with kubectl -A; a single namespace
// is implied, as with kubectl -n). An empty list prints nothing: the caller
// says "No resources found".
func printTable[T metav1.Object](w io.Writer, objs []T, cols []column[T], opts Options) error {
	return printSorted(w, objs, cols, opts, func(a, b T) bool {
		if a.GetNamespace() != b.GetNamespace() {
			return a.GetNamespace() < b.GetNamespace()
		}
		return a.GetName() < b.GetName()
	})
}

// printSorted is printTable with its own row order. The objects become a
// metav1.Table, the form an API server answers kubectl get with, printed by
// cli-runtime's table printer: kubectl's layout, wide columns, label
// columns, and its escaping of cells (a cell is cut at a line break, with
// "...").
func printSorted[T metav1.Object](w io.Writer, objs []T, cols []column[T], opts Options, less func(a, b T) bool) error {
	if len(objs) == 0 {
		return nil
	}
	sorted := append([]T(nil), objs...)
	if !opts.Sorted {
		sort.SliceStable(sorted, func(i, j int) bool { return less(sorted[i], sorted[j]) })
	}
	table := &metav1.Table{ColumnDefinitions: make([]metav1.TableColumnDefinition, len(cols))}
	name := 0
	for i, c := range cols {
		table.ColumnDefinitions[i] = metav1.TableColumnDefinition{Name: c.header, Type: "string"}
		if c.wide {
			table.ColumnDefinitions[i].Priority = 1
		}
		if c.header == "NAME" {
			table.ColumnDefinitions[i].Format = "name"
			name = i
		}
	}
	namespaces := map[string]bool{}
	for _, o := range sorted {
		namespaces[o.GetNamespace()] = true
		cells := make([]any, len(cols))
		for i, c := range cols {
			cells[i] = c.cell(o)
		}
		if opts.ShowKind {
			cells[name] = KindPrefix(o) + cells[name].(string)
		}
		row := metav1.TableRow{Cells: cells}
		// The printer reads the namespace and labels from the object.
		row.Object.Object, _ = any(o).(runtime.Object)
		table.Rows = append(table.Rows, row)
	}
	printer := cliprinters.NewTablePrinter(cliprinters.PrintOptions{
		Wide:          opts.Wide,
		NoHeaders:     opts.NoHeaders && opts.Only == nil,
		WithNamespace: len(namespaces) > 1,
		ShowLabels:    opts.ShowLabels,
		ColumnLabels:  opts.LabelColumns,
	})
	if opts.Only == nil {
		return printer.PrintObj(table, w)
	}
	// The whole table sets the widths, as the first table of kubectl get
	// --watch does; line i+1 is row i (the printer keeps a cell on one line).
	var whole bytes.Buffer
	if err := printer.PrintObj(table, &whole); err != nil {
		return err
	}
	lines := strings.SplitAfter(whole.String(), "\n")
	var out strings.Builder
	if !opts.NoHeaders {
		out.WriteString(lines[0])
	}
	for i, o := range sorted {
		if opts.Only(o) {
			out.WriteString(lines[i+1])
		}
	}
	_, err := io.WriteString(w, out.String())
	return err
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
