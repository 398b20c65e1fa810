package gitops

import (
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
)

// maxRefusedInputs bounds refusedInputs; past it the oldest are forgotten
// (and so rendered again if they come back).
const maxRefusedInputs = 1000

// refusedInputs remembers the renders that failed by their input
// (renderproc.Digest): a commit with the same input would fail the same
// way, and a slow one would hold a render for --render-timeout again.
type refusedInputs struct {
	mu    sync.Mutex
	byKey map[string]refusal
	order []string
}

// refusal is the first commit whose render failed with an input, and how.
type refusal struct {
	commit plumbing.Hash
	err    error
}

func (r *refusedInputs) get(digest string) (refusal, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f, ok := r.byKey[digest]
	return f, ok
}

func (r *refusedInputs) put(digest string, commit plumbing.Hash, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byKey == nil {
		r.byKey = map[string]refusal{}
	}
	if _, ok := r.byKey[digest]; ok {
		return
	}
	r.byKey[digest] = refusal{commit, err}
	r.order = append(r.order, digest)
	if len(r.order) > maxRefusedInputs {
		delete(r.byKey, r.order[0])
		r.order = r.order[1:]
	}
}
