package scheduler

import (
	"fmt"
	"sort"
	"time"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// pick is the scheduler's verdict for one policy snapshot.
type pick struct {
	// picked maps each picked cluster to the decision a binding pointed at
	// this snapshot gets.
	picked map[string]fleet.ClusterDecision
	// unselected explains clusters the policy wanted but did not get
	// (PickFixed names that do not exist or are not eligible, PickN
	// clusters that lost on score, clusters the eligibility check left
	// out), for the snapshot's status.
	unselected []fleet.ClusterDecision
	// want is how many clusters the policy asks for.
	want int
}

// holding is what the scheduler knows of the placement's current bindings
// when picking: clusters with a Scheduled or Bound binding, and whether
// that binding already points at the latest snapshot.
type holding map[string]bool

// decide applies the policy to the fleet at now.
func decide(policy *fleet.PlacementPolicy, count int, members []*fleet.MemberCluster, held holding, now time.Time) (pick, error) {
	pt := fleet.PickAllPlacementType
	if policy != nil && policy.PlacementType != "" {
		pt = policy.PlacementType
	}
	switch pt {
	case fleet.PickAllPlacementType:
		return pickAll(policy, members, held, now)
	case fleet.PickFixedPlacementType:
		return pickFixed(policy, members, held, now), nil
	case fleet.PickNPlacementType:
		return pickN(policy, count, members, held, now)
	default:
		return pick{}, fmt.Errorf("unknown placement type %q", pt)
	}
}

func pickAll(policy *fleet.PlacementPolicy, members []*fleet.MemberCluster, held holding, now time.Time) (pick, error) {
	out := pick{picked: map[string]fleet.ClusterDecision{}}
	var filtered []fleet.ClusterDecision
	for _, m := range members {
		ok, why, err := eligible(policy, m, held, now)
		if err != nil {
			return pick{}, err
		}
		if ok {
			out.picked[m.Name] = scoredDecision(m.Name, 0)
		} else if why != "" {
			filtered = append(filtered, filteredDecision(m.Name, why))
		}
	}
	out.want = len(out.picked)
	out.addFiltered(filtered)
	return out, nil
}

// addFiltered records the clusters the eligibility check left out after
// the other unselected decisions, by name, while fewer than
// maxUnselectedDecisions are recorded (as KubeFleet fills the decisions).
func (p *pick) addFiltered(filtered []fleet.ClusterDecision) {
	sort.Slice(filtered, func(i, j int) bool { return filtered[i].ClusterName < filtered[j].ClusterName })
	for _, d := range filtered {
		if len(p.unselected) >= maxUnselectedDecisions {
			return
		}
		p.unselected = append(p.unselected, d)
	}
}

// pickFixed picks the listed clusters that are in the fleet and eligible;
// taints and affinity do not apply to a fixed list. A listed cluster the
// placement already holds stays picked while its agent is not connected
// (its binding stays, as in KubeFleet); one that left the fleet does not.
func pickFixed(policy *fleet.PlacementPolicy, members []*fleet.MemberCluster, held holding, now time.Time) pick {
	byName := map[string]*fleet.MemberCluster{}
	for _, m := range members {
		byName[m.Name] = m
	}
	out := pick{picked: map[string]fleet.ClusterDecision{}}
	seen := map[string]bool{}
	for _, name := range policy.ClusterNames {
		if seen[name] {
			continue
		}
		seen[name] = true
		out.want++
		m, found := byName[name]
		if !found {
			out.unselected = append(out.unselected, fleet.ClusterDecision{ClusterName: name,
				Reason: fmt.Sprintf(pickFixedNotFoundClusterReason, name)})
			continue
		}
		if why := ineligible(m, now); why != "" && (m.DeletionTimestamp != nil || !held[name]) {
			out.unselected = append(out.unselected, fleet.ClusterDecision{ClusterName: name,
				Reason: fmt.Sprintf(pickFixedInvalidClusterReason, name, why)})
			continue
		}
		out.picked[name] = fleet.ClusterDecision{ClusterName: name, Selected: true,
			Reason: fmt.Sprintf(scheduledMessage, name)}
	}
	return out
}

// pickN keeps the clusters already holding a binding on the latest
// snapshot while they stay eligible, trims the lowest-scored of them when
// there are too many, and fills up with the best-scored others (score
// descending, then name).
func pickN(policy *fleet.PlacementPolicy, count int, members []*fleet.MemberCluster, held holding, now time.Time) (pick, error) {
	type scored struct {
		name  string
		score int32
	}
	var kept, candidates []scored
	var filtered []fleet.ClusterDecision
	ext, err := observeExtremes(policy, members)
	if err != nil {
		return pick{}, err
	}
	for _, m := range members {
		ok, why, err := eligible(policy, m, held, now)
		if err != nil {
			return pick{}, err
		}
		if !ok {
			if why != "" {
				filtered = append(filtered, filteredDecision(m.Name, why))
			}
			continue
		}
		score, err := affinityScore(policy, m, ext)
		if err != nil {
			return pick{}, err
		}
		if onLatest, holds := held[m.Name]; holds && onLatest {
			kept = append(kept, scored{m.Name, score})
		} else {
			candidates = append(candidates, scored{m.Name, score})
		}
	}
	if len(kept) > count {
		// Downscale drops the lowest scores first, ties by name (KubeFleet's
		// sortByClusterScoreAndName).
		sort.Slice(kept, func(i, j int) bool {
			if kept[i].score != kept[j].score {
				return kept[i].score < kept[j].score
			}
			return kept[i].name < kept[j].name
		})
		candidates = append(candidates, kept[:len(kept)-count]...)
		kept = kept[len(kept)-count:]
	}
	// Best first, as KubeFleet orders them: it sorts by score and name
	// ascending and walks the list from the end, so among equal scores the
	// name that sorts last is picked first (its e2e places N=1 over
	// member-cluster-1..3 on member-cluster-3).
	sort.Slice(candidates, func(i, j int) bool {
		if candidates[i].score != candidates[j].score {
			return candidates[i].score > candidates[j].score
		}
		return candidates[i].name > candidates[j].name
	})
	out := pick{picked: map[string]fleet.ClusterDecision{}, want: count}
	for _, k := range kept {
		out.picked[k.name] = scoredDecision(k.name, k.score)
	}
	for _, c := range candidates {
		if len(out.picked) < count {
			out.picked[c.name] = scoredDecision(c.name, c.score)
			continue
		}
		if len(out.unselected) < maxUnselectedDecisions {
			zero := int32(0)
			score := c.score
			out.unselected = append(out.unselected, fleet.ClusterDecision{ClusterName: c.name,
				ClusterScore: &fleet.ClusterScore{AffinityScore: &score, TopologySpreadScore: &zero},
				Reason:       fmt.Sprintf(notPickedByScoreReason, c.name, c.score, 0)})
		}
	}
	sort.Slice(out.unselected, func(i, j int) bool { return out.unselected[i].ClusterName < out.unselected[j].ClusterName })
	out.addFiltered(filtered)
	return out, nil
}

func scoredDecision(cluster string, affinity int32) fleet.ClusterDecision {
	topology := int32(0)
	return fleet.ClusterDecision{ClusterName: cluster, Selected: true,
		ClusterScore: &fleet.ClusterScore{AffinityScore: &affinity, TopologySpreadScore: &topology},
		Reason:       fmt.Sprintf(scheduledWithScoreMessage, cluster, affinity, topology)}
}

// eligible reports whether m may be picked, in the order of KubeFleet's
// filters: it matches the required affinity, is not leaving, its agent (if
// it pulls) is connected, and it tolerates its NoSchedule taints. A
// cluster the placement already holds on the latest snapshot stays while
// its agent is not connected, and one it holds at all while it does not
// tolerate a taint (neither evicts, as in KubeFleet). why is the
// eligibility check's reason when that check left m out.
func eligible(policy *fleet.PlacementPolicy, m *fleet.MemberCluster, held holding, now time.Time) (ok bool, why string, err error) {
	ok, err = matchesRequired(policy, m)
	if err != nil || !ok {
		return false, "", err
	}
	onLatest, holds := held[m.Name]
	if why := ineligible(m, now); why != "" && (m.DeletionTimestamp != nil || !onLatest) {
		return false, why, nil
	}
	if holds {
		return true, "", nil
	}
	var tolerations []fleet.Toleration
	if policy != nil {
		tolerations = policy.Tolerations
	}
	for _, taint := range m.Spec.Taints {
		if taint.Effect == noScheduleEffect && !tolerated(taint, tolerations) {
			return false, "", nil
		}
	}
	return true, "", nil
}

// matchesRequired is the OR of the required cluster selector terms.
func matchesRequired(policy *fleet.PlacementPolicy, m *fleet.MemberCluster) (bool, error) {
	if policy == nil || policy.Affinity == nil || policy.Affinity.ClusterAffinity == nil ||
		policy.Affinity.ClusterAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true, nil
	}
	terms := policy.Affinity.ClusterAffinity.RequiredDuringSchedulingIgnoredDuringExecution.ClusterSelectorTerms
	if len(terms) == 0 {
		return true, nil
	}
	for _, term := range terms {
		ok, err := matchesTerm(term, m)
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

// affinityScore sums the scores of the preferred terms with a weight
// (KubeFleet's Score skips weight 0).
func affinityScore(policy *fleet.PlacementPolicy, m *fleet.MemberCluster, ext extremes) (int32, error) {
	if policy == nil || policy.Affinity == nil || policy.Affinity.ClusterAffinity == nil {
		return 0, nil
	}
	var score int32
	for _, pref := range policy.Affinity.ClusterAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
		if pref.Weight == 0 {
			continue
		}
		s, err := preferenceScore(pref, m, ext)
		if err != nil {
			return 0, fmt.Errorf("failed to calculate score for cluster %s: %w", m.Name, err)
		}
		score += s
	}
	return score, nil
}

// tolerated follows Kubernetes' ToleratesTaint: an empty effect matches all
// effects, an empty key with Exists matches all keys, the operator defaults
// to Equal.
func tolerated(taint fleet.Taint, tolerations []fleet.Toleration) bool {
	for _, t := range tolerations {
		if t.Effect != "" && t.Effect != taint.Effect {
			continue
		}
		if t.Key != "" && t.Key != taint.Key {
			continue
		}
		switch t.Operator {
		case "Exists":
			return true
		case "", "Equal":
			if t.Key == taint.Key && t.Value == taint.Value {
				return true
			}
		}
	}
	return false
}
