package plan

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WriteText prints the plan for a person at a terminal: the deletions
// first, one line each, then the new snapshots,
// each run with its stages, clusters in order, gates and times, then what
// was refused and the manifest errors.
func WriteText(w io.Writer, p *Plan) error {
	fmt.Fprintf(w, "Merging %s (%s) into %s", short(p.Head), p.HeadSubject, short(p.Base))
	if p.Status != "" {
		fmt.Fprintf(w, ", from the state recorded in status/ at %s.\n", short(p.Status))
	} else {
		fmt.Fprintf(w, "; no status/ recorded there (serve never ran, or writes --status-branch: pass --status), so from an empty hub.\n")
	}
	fmt.Fprintln(w)
	if len(p.Deletions) == 0 {
		fmt.Fprintln(w, "Deletions: none (no object leaves a member cluster)")
	} else {
		fmt.Fprintln(w, "Deletions:")
		for _, d := range p.Deletions {
			fmt.Fprintf(w, "  %s\n", d)
		}
	}
	fmt.Fprintln(w)
	if len(p.Snapshots) == 0 {
		fmt.Fprintln(w, "Resource snapshots: none (no placement's selected resources change)")
	} else {
		fmt.Fprintln(w, "Resource snapshots:")
		tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
		fmt.Fprintln(tw, "  PLACEMENT\tINDEX\tPREVIOUS\tCOMMIT\tCHANGES\tCLUSTERS NOW")
		for _, s := range p.Snapshots {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", s.Placement, s.Index, orDash(s.Previous), short(s.Commit), changeList(s.Changes), clusterList(s.Clusters))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	if len(p.Runs) == 0 {
		fmt.Fprintln(w, "Update runs: none would start or move")
	} else {
		fmt.Fprintln(w, "Update runs:")
		tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
		fmt.Fprintln(tw, "  RUN\tPLACEMENT\tINDEX\tNOW\tAFTER\tDURATION")
		for _, r := range p.Runs {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Placement, orDash(r.Snapshot), r.Before, r.After, runDuration(r))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, r := range p.Runs {
			if err := writeRun(w, r); err != nil {
				return err
			}
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Times are virtual offsets from the merge; every approval the change opens is counted as given at once.")
	}
	if len(p.Refused) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Refused changes (the API server would reject them; the last accepted spec stays in use):")
		for _, r := range p.Refused {
			fmt.Fprintf(w, "  %s\n", r)
		}
	}
	if p.HeadError != "" {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "gitfleet would refuse this merge whole (it does not render): nothing of it reaches the hub, and nothing is deleted. %s\n", p.HeadError)
	}
	if len(p.ManifestErrors) > 0 {
		fmt.Fprintln(w)
		if p.HeadRefused {
			fmt.Fprintln(w, "gitfleet would refuse this merge whole (it does not render): nothing of it reaches the hub, and nothing is deleted. Manifest errors:")
		} else {
			fmt.Fprintln(w, "Manifest errors:")
		}
		for _, e := range p.ManifestErrors {
			fmt.Fprintf(w, "  %s: %s\n", e.Position(), e.Message)
		}
	}
	return nil
}

func writeRun(w io.Writer, r Run) error {
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Run %s: placement %s, strategy %s", r.Name, r.Placement, r.Strategy)
	if r.Snapshot != "" {
		fmt.Fprintf(w, ", resource snapshot %s", r.Snapshot)
	}
	fmt.Fprintln(w)
	if r.Detail != "" {
		fmt.Fprintf(w, "  %s: %s\n", r.After, r.Detail)
	}
	for _, l := range clusterSetLines(r) {
		fmt.Fprintf(w, "  %s\n", l)
	}
	if len(r.Stages) > 0 {
		tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
		fmt.Fprintln(tw, "  STAGE\tCLUSTERS (IN ORDER)\tBEFORE\tAFTER\tSTART\tEND")
		for _, s := range r.Stages {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", s.Name, orDash(strings.Join(s.Clusters, ", ")), gateList(s.Before), gateList(s.After), at(s.Start), at(s.End))
		}
		if len(r.Deleting) > 0 {
			fmt.Fprintf(tw, "  (deletion)\t%s\t-\t-\t\t\n", strings.Join(r.Deleting, ", "))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		writeBudgets(w, r)
	}
	if len(r.Timeline) > 0 {
		tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
		for _, e := range r.Timeline {
			fmt.Fprintf(tw, "  %s\t%s\n", at(&e.At), e.Message)
		}
		return tw.Flush()
	}
	return nil
}

// Position is "file:line" (or the file alone when the line is unknown).
func (e ManifestError) Position() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	return e.File
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func at(d *metav1.Duration) string {
	if d == nil {
		return "-"
	}
	return "+" + d.Duration.Round(time.Second).String()
}

func runDuration(r Run) string {
	if len(r.Timeline) == 0 {
		return "-"
	}
	return r.Timeline[len(r.Timeline)-1].At.Duration.Round(time.Second).String()
}

func gateList(gs []Gate) string {
	var out []string
	for _, g := range gs {
		switch {
		case g.Window != "":
			out = append(out, fmt.Sprintf("%s %s", g.Type, g.Window))
		case g.Metric != nil:
			out = append(out, metricGateText(g.Metric))
		case g.Wait != nil:
			out = append(out, fmt.Sprintf("%s %s", g.Type, g.Wait.Duration))
		case g.ApprovalRequest != "":
			out = append(out, fmt.Sprintf("%s %s", g.Type, g.ApprovalRequest))
		default:
			out = append(out, g.Type)
		}
	}
	return orDash(strings.Join(out, ", "))
}

// metricGateText is a metric gate in a plan's stage table: "Metric
// `<query>` < 0.05 (3 in a row every 1m, 0 failures allowed, timeout 30m)".
func metricGateText(m *MetricGate) string {
	return fmt.Sprintf("Metric `%s` %s (%d in a row every %s, %d failure(s) allowed, timeout %s)",
		m.Query, m.Threshold, m.SuccessesRequired, shortDuration(m.Interval.Duration), m.FailureLimit, shortDuration(m.Timeout.Duration))
}

// shortDuration drops a duration's zero tail: 1m, not 1m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func changeList(cs []ResourceChange) string {
	var out []string
	for _, c := range cs {
		out = append(out, strings.ToLower(c.Change)+" "+c.Resource)
	}
	return orDash(strings.Join(out, "; "))
}

func clusterList(cs []ClusterIndex) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Cluster+"@"+orDash(c.Index))
	}
	return orDash(strings.Join(out, " "))
}
