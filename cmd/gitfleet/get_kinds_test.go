package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/gitfleet/gitfleet/internal/testing/golden"
)

// TestResourceWordsResolveAsKubectlResolvesThem: every word get takes for
// a kind (gitfleet's family names, KubeFleet's kind, plural, singular and
// short names, in any case) picks the family and the scope, and messages
// name the kind as kubectl does.
func TestResourceWordsResolveAsKubectlResolvesThem(t *testing.T) {
	for _, tc := range []struct {
		words   string
		family  string
		scope   scope
		message string // q.kind without and with -n
	}{
		{"runs run updateruns updaterun", "runs", anyScope,
			"clusterstagedupdaterun.placement.kubernetes-fleet.io stagedupdaterun.placement.kubernetes-fleet.io"},
		{"csur clusterstagedupdateruns clusterstagedupdaterun ClusterStagedUpdateRun csur.placement.kubernetes-fleet.io", "runs", clusterScope,
			"clusterstagedupdaterun.placement.kubernetes-fleet.io clusterstagedupdaterun.placement.kubernetes-fleet.io"},
		{"sur stagedupdateruns stagedupdaterun StagedUpdateRun", "runs", namespacedScope,
			"stagedupdaterun.placement.kubernetes-fleet.io stagedupdaterun.placement.kubernetes-fleet.io"},
		{"approvals approval", "approvals", anyScope,
			"clusterapprovalrequest.placement.kubernetes-fleet.io approvalrequest.placement.kubernetes-fleet.io"},
		{"careq clusterapprovalrequests clusterapprovalrequest", "approvals", clusterScope,
			"clusterapprovalrequest.placement.kubernetes-fleet.io clusterapprovalrequest.placement.kubernetes-fleet.io"},
		{"areq approvalrequests approvalrequest", "approvals", namespacedScope,
			"approvalrequest.placement.kubernetes-fleet.io approvalrequest.placement.kubernetes-fleet.io"},
		{"snapshots snapshot", "snapshots", anyScope,
			"clusterresourcesnapshot.placement.kubernetes-fleet.io resourcesnapshot.placement.kubernetes-fleet.io"},
		{"crs clusterresourcesnapshots clusterresourcesnapshot", "snapshots", clusterScope,
			"clusterresourcesnapshot.placement.kubernetes-fleet.io clusterresourcesnapshot.placement.kubernetes-fleet.io"},
		{"rs resourcesnapshots resourcesnapshot", "snapshots", namespacedScope,
			"resourcesnapshot.placement.kubernetes-fleet.io resourcesnapshot.placement.kubernetes-fleet.io"},
		{"overrides override overridesnapshots overridesnapshot", "overrides", anyScope,
			"clusterresourceoverridesnapshot.placement.kubernetes-fleet.io resourceoverridesnapshot.placement.kubernetes-fleet.io"},
		{"clusterresourceoverridesnapshots clusterresourceoverridesnapshot ClusterResourceOverrideSnapshot", "overrides", clusterScope,
			"clusterresourceoverridesnapshot.placement.kubernetes-fleet.io clusterresourceoverridesnapshot.placement.kubernetes-fleet.io"},
		{"resourceoverridesnapshots resourceoverridesnapshot", "overrides", namespacedScope,
			"resourceoverridesnapshot.placement.kubernetes-fleet.io resourceoverridesnapshot.placement.kubernetes-fleet.io"},
		{"placements placement", "placements", anyScope,
			"clusterresourceplacement.placement.kubernetes-fleet.io resourceplacement.placement.kubernetes-fleet.io"},
		{"crp clusterresourceplacements clusterresourceplacement", "placements", clusterScope,
			"clusterresourceplacement.placement.kubernetes-fleet.io clusterresourceplacement.placement.kubernetes-fleet.io"},
		{"rp resourceplacements resourceplacement", "placements", namespacedScope,
			"resourceplacement.placement.kubernetes-fleet.io resourceplacement.placement.kubernetes-fleet.io"},
		{"bindings binding", "bindings", anyScope,
			"clusterresourcebinding.placement.kubernetes-fleet.io resourcebinding.placement.kubernetes-fleet.io"},
		{"crb clusterresourcebindings clusterresourcebinding", "bindings", clusterScope,
			"clusterresourcebinding.placement.kubernetes-fleet.io clusterresourcebinding.placement.kubernetes-fleet.io"},
		{"rb resourcebindings resourcebinding", "bindings", namespacedScope,
			"resourcebinding.placement.kubernetes-fleet.io resourcebinding.placement.kubernetes-fleet.io"},
		{"clusters cluster memberclusters membercluster MemberCluster", "clusters", clusterScope,
			"membercluster.cluster.kubernetes-fleet.io membercluster.cluster.kubernetes-fleet.io"},
		{"evictions eviction crpe clusterresourceplacementevictions clusterresourceplacementeviction ClusterResourcePlacementEviction", "evictions", clusterScope,
			"clusterresourceplacementeviction.placement.kubernetes-fleet.io clusterresourceplacementeviction.placement.kubernetes-fleet.io"},
		{"sources source gitsources gitsource", "sources", clusterScope,
			"gitsource.gitfleet.io gitsource.gitfleet.io"},
		{"strategies strategy updatestrategies updatestrategy", "strategies", anyScope,
			"clusterstagedupdatestrategy.placement.kubernetes-fleet.io stagedupdatestrategy.placement.kubernetes-fleet.io"},
		{"csus clusterstagedupdatestrategies clusterstagedupdatestrategy ClusterStagedUpdateStrategy csus.placement.kubernetes-fleet.io", "strategies", clusterScope,
			"clusterstagedupdatestrategy.placement.kubernetes-fleet.io clusterstagedupdatestrategy.placement.kubernetes-fleet.io"},
		{"sus stagedupdatestrategies stagedupdatestrategy StagedUpdateStrategy", "strategies", namespacedScope,
			"stagedupdatestrategy.placement.kubernetes-fleet.io stagedupdatestrategy.placement.kubernetes-fleet.io"},
	} {
		for _, word := range strings.Fields(tc.words) {
			k, err := parseKind(word)
			if err != nil {
				t.Errorf("%s: %v", word, err)
				continue
			}
			msgs := (&query{}).kind(k) + " " + (&query{namespace: "ns"}).kind(k)
			if k.fam.name != tc.family || k.scope != tc.scope || msgs != tc.message {
				t.Errorf("%s: family %s, scope %d, kinds %q; want %s, %d, %q", word, k.fam.name, k.scope, msgs, tc.family, tc.scope, tc.message)
			}
		}
	}
	for _, word := range []string{"deployments", "ClusterResourceOverride", "commits", "", "csur.apps", "cluster.placement.kubernetes-fleet.io"} {
		_, err := parseKind(word)
		if err == nil || !strings.HasPrefix(err.Error(), "unknown resource type ") ||
			!strings.HasSuffix(err.Error(), ": want one of runs, approvals, snapshots, overrides, placements, bindings, evictions, clusters, strategies, sources (or a KubeFleet short name such as csur)") {
			t.Errorf("%q: %v; want unknown resource type", word, err)
		}
	}
}

// TestGetWithoutAKindListsTheKinds: a bare get lists what it takes, as
// kubectl api-resources does.
func TestGetWithoutAKindListsTheKinds(t *testing.T) {
	var out bytes.Buffer
	if err := listKinds(&out); err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "get-kinds.txt", out.Bytes())
}

// Strategies list by gitfleet's word and KubeFleet's short names; --sort-by
// orders rows as kubectl's does; --show-labels adds LABELS with -o wide too
// and, as with kubectl, changes nothing in -o name.
func TestGetStrategiesSortByAndShowLabels(t *testing.T) {
	repo := demoRepo(t)
	for _, tc := range []struct {
		name string
		args []string
		want []string // lines of stdout, in order
	}{
		{"strategies", []string{"get", "strategies"}, []string{"NAME               AGE", "example-strategy   30m"}},
		{"csus", []string{"get", "csus", "-o", "wide"}, []string{"NAME               AGE   STAGES", "example-strategy   30m   staging,canary"}},
		{"sus lists none", []string{"get", "sus", "-o", "name"}, nil},
		{"sort by a label, missing first", []string{"get", "clusters", "--sort-by", "{.metadata.labels.order}", "-o", "name"},
			[]string{"membercluster.cluster.kubernetes-fleet.io/member2", "membercluster.cluster.kubernetes-fleet.io/member3", "membercluster.cluster.kubernetes-fleet.io/member1"}},
		{"sort a table", []string{"get", "clusters", "--sort-by", "{.metadata.labels.order}", "--no-headers"}, []string{"member2   True   30m", "member3   True   30m", "member1   True   30m"}},
		{"sort by name, relaxed path", []string{"get", "clusters", "--sort-by", ".metadata.name", "-o", "name"},
			[]string{"membercluster.cluster.kubernetes-fleet.io/member1", "membercluster.cluster.kubernetes-fleet.io/member2", "membercluster.cluster.kubernetes-fleet.io/member3"}},
		{"show labels with -o wide", []string{"get", "csus", "-o", "wide", "--show-labels"}, []string{"NAME               AGE   STAGES           LABELS", "example-strategy   30m   staging,canary   <none>"}},
		{"show labels ignored with -o name", []string{"get", "csus", "-o", "name", "--show-labels"}, []string{"clusterstagedupdatestrategy.placement.kubernetes-fleet.io/example-strategy"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := gitfleet(t, append(tc.args, "--repo", repo)...)
			var got []string
			for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
				if l != "" {
					got = append(got, strings.TrimRight(l, " "))
				}
			}
			if code != 0 || !slices.Equal(got, tc.want) {
				t.Errorf("exit %d, stderr %q, stdout:\n%s\nwant lines %q", code, errOut, out, tc.want)
			}
		})
	}
}
