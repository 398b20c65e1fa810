package plan

import (
	"fmt"
	"strings"
)

// Comment renders the plan as the body of a pull request comment
// (GitHub/GitLab/Gitea markdown): what a reviewer needs before merging —
// the deletions first, then refusals and manifest errors when there are
// any, snapshots, runs with their stages and gates — with each run's
// timeline folded away.
// serve posts it with forge.UpsertComment, which adds the marker that
// keeps it one comment across pushes.
func Comment(p *Plan) string {
	var b strings.Builder
	title := "### gitfleet plan"
	if p.Failed() {
		title += ": :x: this change would be refused in part"
	} else if len(p.Deletions) > 0 {
		title += ": :warning: this change deletes objects from member clusters"
	}
	fmt.Fprintf(&b, "%s\n\nMerging `%s` (%s) into `%s`", title, short(p.Head), mdEscape(p.HeadSubject), short(p.Base))
	if p.Status != "" {
		fmt.Fprintf(&b, ", from the state gitfleet recorded in `status/` at `%s`.\n", short(p.Status))
	} else {
		b.WriteString("; nothing is recorded in `status/` there yet, so from an empty hub.\n")
	}
	if len(p.Deletions) == 0 {
		b.WriteString("\n#### Deletions\n\nNone: no object leaves a member cluster.\n")
	} else {
		b.WriteString("\n#### :warning: Deletions\n\n")
		for _, d := range p.Deletions {
			fmt.Fprintf(&b, "- %s\n", mdEscape(d.String()))
		}
	}
	if p.HeadRefused {
		b.WriteString("\n**:no_entry: gitfleet would refuse this merge whole** (it does not render): no snapshot, no run and no other change of it reaches the hub, and nothing is deleted. Fix:\n\n")
		for _, e := range p.ManifestErrors {
			fmt.Fprintf(&b, "- `%s`: %s\n", e.Position(), mdEscape(e.Message))
		}
		if p.HeadError != "" {
			fmt.Fprintf(&b, "- %s\n", mdEscape(p.HeadError))
		}
	} else if len(p.ManifestErrors) > 0 {
		b.WriteString("\n**Manifest errors** (these objects are left out; each keeps its last accepted version):\n\n")
		for _, e := range p.ManifestErrors {
			fmt.Fprintf(&b, "- `%s`: %s\n", e.Position(), mdEscape(e.Message))
		}
	}
	if len(p.Refused) > 0 {
		b.WriteString("\n**Refused changes** (the API server would reject them; the last accepted spec stays in use):\n\n")
		for _, r := range p.Refused {
			fmt.Fprintf(&b, "- %s\n", mdEscape(r))
		}
	}
	b.WriteString("\n#### Resource snapshots\n\n")
	if len(p.Snapshots) == 0 {
		b.WriteString("None: no placement's selected resources change.\n")
	} else {
		b.WriteString("| placement | index | previous | changes | clusters now |\n|---|---|---|---|---|\n")
		for _, s := range p.Snapshots {
			fmt.Fprintf(&b, "| %s | **%s** | %s | %s | %s |\n", s.Placement, s.Index, orDash(s.Previous), mdEscape(changeList(s.Changes)), clusterList(s.Clusters))
		}
	}
	b.WriteString("\n#### Update runs\n\n")
	if len(p.Runs) == 0 {
		b.WriteString("None would start or move.\n")
	}
	for _, r := range p.Runs {
		verb := "moves"
		if r.New {
			verb = "starts"
		}
		fmt.Fprintf(&b, "**%s** %s: placement `%s`, strategy `%s`", r.Name, verb, r.Placement, r.Strategy)
		if r.Snapshot != "" {
			fmt.Fprintf(&b, ", resource snapshot **%s**", r.Snapshot)
		}
		fmt.Fprintf(&b, ". %s → **%s**", r.Before, r.After)
		if r.Detail != "" {
			fmt.Fprintf(&b, ": %s", mdEscape(r.Detail))
		}
		b.WriteString("\n\n")
		for _, l := range clusterSetLines(r) {
			fmt.Fprintf(&b, "- %s\n", mdEscape(l))
		}
		if len(clusterSetLines(r)) > 0 {
			b.WriteString("\n")
		}
		if len(r.Stages) > 0 {
			b.WriteString("| stage | clusters, in order | before | after | start | end |\n|---|---|---|---|---|---|\n")
			for _, s := range r.Stages {
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", s.Name, orDash(strings.Join(s.Clusters, ", ")), gateList(s.Before), gateList(s.After), at(s.Start), at(s.End))
			}
			if len(r.Deleting) > 0 {
				fmt.Fprintf(&b, "| *(deletion)* | %s | - | - | | |\n", strings.Join(r.Deleting, ", "))
			}
			b.WriteString("\n")
		}
		if len(r.Timeline) > 0 {
			fmt.Fprintf(&b, "<details><summary>Timeline of %s (%s)</summary>\n\n```\n", r.Name, runDuration(r))
			for _, e := range r.Timeline {
				fmt.Fprintf(&b, "%-6s %s\n", at(&e.At), e.Message)
			}
			b.WriteString("```\n</details>\n\n")
		}
	}
	if len(p.Runs) > 0 {
		b.WriteString("Times are virtual offsets from the merge, as members' `gitfleet.io/sim-*` annotations and the strategy's waits give them; every approval the change opens is counted as given at once.\n")
	}
	return b.String()
}

// mdEscape keeps text from Git (commit subjects, messages quoting
// manifests) from turning into markdown: table pipes, emphasis, HTML.
func mdEscape(s string) string {
	r := strings.NewReplacer("|", `\|`, "*", `\*`, "_", `\_`, "<", "&lt;", ">", "&gt;", "`", "'")
	return r.Replace(s)
}
