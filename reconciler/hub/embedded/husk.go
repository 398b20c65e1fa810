package embedded

import (
	"encoding/binary"
	"errors"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// A finished run is kept as a husk: the run with every stage's clusters
// cut out (Clusters nil, in its stages and its deletion stage), and those
// clusters packed into a few bytes. The clusters are nearly all of a large
// run (at 1,000 clusters, 290 KB of its 300 KB in memory) and a finished
// run never changes again, so the hub would otherwise grow by that much
// with every run that ends. Packed, they take about a tenth; reading the
// run unpacks them (about what a deep copy of them costs), so every reader
// sees the run as it was written.
//
// The packing is exact or not used: a run whose clusters do not come back
// deep-equal (a time with a monotonic reading or a zone other than UTC and
// Local) is kept whole. fleet.SameClusterUpdatingStatuses checks that,
// as strict as reflect.DeepEqual or stricter.

// These conversions stop the build when a field is added to what is
// packed: packer and unpacker must learn it.
var (
	_ = struct {
		ClusterName                      string
		ResourceOverrideSnapshots        []fleet.NamespacedName
		ClusterResourceOverrideSnapshots []string
		Conditions                       []metav1.Condition
	}(fleet.ClusterUpdatingStatus{})
	_ = struct {
		Name      string
		Namespace string
	}(fleet.NamespacedName{})
	_ = struct {
		Type               string
		Status             metav1.ConditionStatus
		ObservedGeneration int64
		LastTransitionTime metav1.Time
		Reason             string
		Message            string
	}(metav1.Condition{})
)

// husk returns run without its clusters, sharing the rest with run (which
// the hub never modifies), and the clusters packed; ok is false when run
// has no clusters to pack or they do not pack exactly.
func husk(run *fleet.UpdateRun) (h *fleet.UpdateRun, packed []byte, ok bool) {
	st := &run.Status
	if len(st.StagesStatus) == 0 && st.DeletionStageStatus == nil {
		return nil, nil, false
	}
	packed = packClusters(st)
	c := *run
	c.Status.StagesStatus = slices.Clone(st.StagesStatus)
	for i := range c.Status.StagesStatus {
		c.Status.StagesStatus[i].Clusters = nil
	}
	if d := st.DeletionStageStatus; d != nil {
		dc := *d
		dc.Clusters = nil
		c.Status.DeletionStageStatus = &dc
	}
	back, err := unhusk(&c, packed)
	if err != nil {
		return nil, nil, false
	}
	for i := range st.StagesStatus {
		if !fleet.SameClusterUpdatingStatuses(back.Status.StagesStatus[i].Clusters, st.StagesStatus[i].Clusters) {
			return nil, nil, false
		}
	}
	if d := st.DeletionStageStatus; d != nil && !fleet.SameClusterUpdatingStatuses(back.Status.DeletionStageStatus.Clusters, d.Clusters) {
		return nil, nil, false
	}
	return &c, packed, true
}

// unhusk returns the whole run of husk h and its packed clusters: a new
// object whose clusters are fresh and whose other parts are h's.
func unhusk(h *fleet.UpdateRun, packed []byte) (*fleet.UpdateRun, error) {
	c := *h
	st := &c.Status
	st.StagesStatus = slices.Clone(h.Status.StagesStatus)
	if d := h.Status.DeletionStageStatus; d != nil {
		dc := *d
		st.DeletionStageStatus = &dc
	}
	if err := unpackClusters(packed, st); err != nil {
		return nil, err
	}
	return &c, nil
}

// The packed form is a table of the distinct strings, then the clusters of
// each stage in order and of the deletion stage, each list as its length
// plus one (0: nil) and every string as its index in the table. A time is
// its seconds since the previous time (zigzag), then its nanoseconds and
// its zone in one number.

const (
	zoneUTC   = 0
	zoneLocal = 1
)

type packer struct {
	strings map[string]uint64
	table   []string
	body    []byte
	last    int64 // the seconds of the previous time
}

func packClusters(st *fleet.UpdateRunStatus) []byte {
	p := &packer{strings: map[string]uint64{}}
	for i := range st.StagesStatus {
		p.clusters(st.StagesStatus[i].Clusters)
	}
	if d := st.DeletionStageStatus; d != nil {
		p.clusters(d.Clusters)
	}
	// Sized exactly: a husk is kept for as long as its run, and appending
	// to nil left up to half of each one's bytes unused.
	var scratch [binary.MaxVarintLen64]byte
	size := len(binary.AppendUvarint(scratch[:0], uint64(len(p.table)))) + len(p.body)
	for _, s := range p.table {
		size += len(binary.AppendUvarint(scratch[:0], uint64(len(s)))) + len(s)
	}
	out := make([]byte, 0, size)
	out = binary.AppendUvarint(out, uint64(len(p.table)))
	for _, s := range p.table {
		out = binary.AppendUvarint(out, uint64(len(s)))
	}
	for _, s := range p.table {
		out = append(out, s...)
	}
	return append(out, p.body...)
}

func (p *packer) uint(n uint64) { p.body = binary.AppendUvarint(p.body, n) }

// length writes the length of a list, telling nil from empty.
func (p *packer) length(n int, isNil bool) {
	if isNil {
		p.uint(0)
		return
	}
	p.uint(uint64(n) + 1)
}

func (p *packer) string(s string) {
	i, ok := p.strings[s]
	if !ok {
		i = uint64(len(p.table))
		p.strings[s] = i
		p.table = append(p.table, s)
	}
	p.uint(i)
}

func (p *packer) time(t time.Time) {
	zone := uint64(zoneUTC)
	if t.Location() != time.UTC {
		zone = zoneLocal // anything else fails husk's check
	}
	sec := t.Unix()
	p.body = binary.AppendVarint(p.body, sec-p.last)
	p.last = sec
	p.uint(uint64(t.Nanosecond())<<1 | zone)
}

func (p *packer) clusters(cs []fleet.ClusterUpdatingStatus) {
	p.length(len(cs), cs == nil)
	for i := range cs {
		c := &cs[i]
		p.string(c.ClusterName)
		p.length(len(c.ResourceOverrideSnapshots), c.ResourceOverrideSnapshots == nil)
		for _, n := range c.ResourceOverrideSnapshots {
			p.string(n.Name)
			p.string(n.Namespace)
		}
		p.length(len(c.ClusterResourceOverrideSnapshots), c.ClusterResourceOverrideSnapshots == nil)
		for _, n := range c.ClusterResourceOverrideSnapshots {
			p.string(n)
		}
		p.length(len(c.Conditions), c.Conditions == nil)
		for j := range c.Conditions {
			cond := &c.Conditions[j]
			p.string(cond.Type)
			p.string(string(cond.Status))
			p.body = binary.AppendVarint(p.body, cond.ObservedGeneration)
			p.time(cond.LastTransitionTime.Time)
			p.string(cond.Reason)
			p.string(cond.Message)
		}
	}
}

var errCorrupt = errors.New("packed clusters are corrupt")

type unpacker struct {
	data  []byte
	table []string
	last  int64
	err   error
}

func unpackClusters(data []byte, st *fleet.UpdateRunStatus) error {
	u := &unpacker{data: data}
	n := u.uint()
	if n > uint64(len(data)) {
		return errCorrupt
	}
	// The lengths are read twice: for their total, then to cut the
	// strings out of the one string that holds the table.
	lengths := u.data
	total := uint64(0)
	for range n {
		total += u.uint()
	}
	if u.err != nil || total > uint64(len(u.data)) {
		return errCorrupt
	}
	all := string(u.data[:total])
	body := u.data[total:]
	u.data = lengths
	u.table = make([]string, n)
	at := uint64(0)
	for i := range u.table {
		l := u.uint()
		u.table[i] = all[at : at+l]
		at += l
	}
	u.data = body
	for i := range st.StagesStatus {
		st.StagesStatus[i].Clusters = u.clusters()
	}
	if d := st.DeletionStageStatus; d != nil {
		d.Clusters = u.clusters()
	}
	if u.err == nil && len(u.data) != 0 {
		u.err = errCorrupt
	}
	return u.err
}

func (u *unpacker) uint() uint64 {
	n, k := binary.Uvarint(u.data)
	if k <= 0 {
		u.fail()
		return 0
	}
	u.data = u.data[k:]
	return n
}

func (u *unpacker) int() int64 {
	n, k := binary.Varint(u.data)
	if k <= 0 {
		u.fail()
		return 0
	}
	u.data = u.data[k:]
	return n
}

func (u *unpacker) fail() {
	u.err = errCorrupt
	u.data = nil
}

// length reads a list's length; isNil tells a nil list from an empty one.
func (u *unpacker) length() (n int, isNil bool) {
	l := u.uint()
	if l == 0 || l-1 > uint64(len(u.data)) {
		if l != 0 {
			u.fail()
		}
		return 0, true
	}
	return int(l - 1), false
}

func (u *unpacker) string() string {
	i := u.uint()
	if i >= uint64(len(u.table)) {
		u.fail()
		return ""
	}
	return u.table[i]
}

func (u *unpacker) time() metav1.Time {
	u.last += u.int()
	n := u.uint()
	t := time.Unix(u.last, int64(n>>1))
	if n&1 == zoneUTC {
		t = t.UTC()
	}
	return metav1.Time{Time: t}
}

// clusters reads one stage's clusters; their conditions share one array,
// each cluster's capped so that an append copies it.
func (u *unpacker) clusters() []fleet.ClusterUpdatingStatus {
	n, isNil := u.length()
	if isNil {
		return nil
	}
	cs := make([]fleet.ClusterUpdatingStatus, n)
	var conds []metav1.Condition
	for i := range cs {
		c := &cs[i]
		c.ClusterName = u.string()
		if l, isNil := u.length(); !isNil {
			c.ResourceOverrideSnapshots = make([]fleet.NamespacedName, l)
			for j := range c.ResourceOverrideSnapshots {
				c.ResourceOverrideSnapshots[j] = fleet.NamespacedName{Name: u.string(), Namespace: u.string()}
			}
		}
		if l, isNil := u.length(); !isNil {
			c.ClusterResourceOverrideSnapshots = make([]string, l)
			for j := range c.ClusterResourceOverrideSnapshots {
				c.ClusterResourceOverrideSnapshots[j] = u.string()
			}
		}
		l, isNil := u.length()
		switch {
		case isNil:
			continue
		case l == 0:
			c.Conditions = []metav1.Condition{}
			continue
		}
		if cap(conds)-len(conds) < l {
			// Room for this cluster's conditions and as many for each
			// cluster left, which is what a run's clusters mostly have.
			conds = make([]metav1.Condition, 0, l*(n-i))
		}
		start := len(conds)
		for range l {
			conds = append(conds, metav1.Condition{
				Type:               u.string(),
				Status:             metav1.ConditionStatus(u.string()),
				ObservedGeneration: u.int(),
				LastTransitionTime: u.time(),
				Reason:             u.string(),
				Message:            u.string(),
			})
		}
		c.Conditions = conds[start:len(conds):len(conds)]
		if u.err != nil {
			return nil
		}
	}
	return cs
}
