package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/spf13/cobra"

	"github.com/gitfleet/gitfleet/status"
	"github.com/gitfleet/gitfleet/status/printers"
)

// lister prints what a get query finds, once or, with --watch, again each
// time it changes.
type lister struct {
	ctx            context.Context
	q              *query
	out            *output
	opts           printers.Options
	stdout, stderr io.Writer

	// printed holds the status-file bytes of every object printed, by
	// object; nil before the first listing. --watch prints an object again
	// only when its bytes change, so AGE ticking alone prints nothing.
	printed map[string][]byte
	// from is the status commit last announced on stderr.
	from string
	// watching prints machine formats one object at a time, as kubectl
	// get -w does, instead of one List per round.
	watching bool
	// headed holds the kinds whose table header was printed: a kind that
	// had no rows at first gets its header when its first rows appear.
	headed map[kindRef]bool
	// tables counts the tables printed, so later ones follow a blank line.
	tables int
}

// list reads the query and prints it: everything the first time, then the
// objects whose status changed since.
func (l *lister) list() error {
	first := l.printed == nil
	stderr := l.stderr
	if !first {
		// "No resources found" and the same NotFound again every round
		// would bury the changes; the error is still returned.
		stderr = io.Discard
	}
	if err := l.q.root(); err != nil {
		return err
	}
	l.announce()
	kinds, err := l.q.find(stderr)
	next := map[string][]byte{}
	changed := map[any]bool{}
	for _, f := range kinds {
		for _, o := range f.objs {
			key, data, eerr := objectKey(o)
			if eerr != nil {
				return errors.Join(eerr, err)
			}
			next[key] = data
			if old, ok := l.printed[key]; first || !ok || !bytes.Equal(old, data) {
				changed[o] = true
			}
		}
	}
	l.printed = next
	opts := l.opts
	if !first {
		// The changed rows, under the columns of the first table.
		opts.Only = func(o metav1.Object) bool { return changed[o] }
	}
	return errors.Join(l.print(kinds, changed, opts), err)
}

// print writes the changed objects: one table per kind, separated by a
// blank line as kubectl separates them, or in a machine format.
func (l *lister) print(kinds []found, changed map[any]bool, opts printers.Options) error {
	if !l.out.table() {
		var all []runtime.Object
		for _, f := range kinds {
			for _, o := range f.objs {
				if changed[o] {
					all = append(all, o)
				}
			}
		}
		if len(all) == 0 && (l.watching || len(l.q.names) > 0) {
			// Nothing changed, or the names were not found (said on
			// stderr). An unnamed listing prints an empty List, as
			// kubectl does, so `| jq .items` keeps working.
			return nil
		}
		if l.watching {
			for _, o := range all {
				if err := l.out.printObjects(l.stdout, []runtime.Object{o}, true); err != nil {
					return err
				}
			}
			return nil
		}
		return l.out.printObjects(l.stdout, all, len(l.q.kinds) == 1 && len(l.q.names) == 1)
	}
	if l.headed == nil {
		l.headed = map[kindRef]bool{}
	}
	for _, f := range kinds {
		if !slices.ContainsFunc(f.objs, func(o runtime.Object) bool { return changed[o] }) {
			continue
		}
		kopts := opts
		// A header, and the blank line before it, only for a kind's
		// first rows; later rows go under it.
		kopts.NoHeaders = opts.NoHeaders || l.headed[f.kind]
		if l.tables > 0 && !kopts.NoHeaders {
			fmt.Fprintln(l.stdout)
		}
		if !l.headed[f.kind] {
			l.headed[f.kind] = true
			l.tables++
		}
		if err := f.kind.fam.table(l.stdout, f.objs, now(), kopts); err != nil {
			return err
		}
	}
	return nil
}

// announce says on stderr which commit the status is from and how old it
// is, when that changed since it last said so. Scripts read stdout, which
// stays the objects alone.
func (l *lister) announce() {
	c, ok := statusCommit(l.ctx, l.q.repo)
	if !ok || c.hash == l.from {
		return
	}
	l.from = c.hash
	fmt.Fprintf(l.stderr, "status from %s (%s ago)\n", c.hash, printers.Age(c.time, now()))
}

// watch lists, then pulls and lists the changes every interval until the
// command is interrupted.
func (l *lister) watch(interval time.Duration) error {
	l.watching = true
	var lastPull string
	pullOnce := func() {
		err := pull(l.ctx, l.q.repo)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if msg != lastPull && msg != "" {
			fmt.Fprintln(l.stderr, "Warning:", msg)
		}
		lastPull = msg
	}
	pullOnce()
	if err := l.list(); err != nil {
		return err
	}
	var lastErr string
	for watchPoll(l.ctx, interval) {
		pullOnce()
		err := l.list()
		if msg := fmt.Sprint(err); err != nil && msg != lastErr {
			fmt.Fprintln(l.stderr, "error:", err)
		}
		lastErr = fmt.Sprint(err)
	}
	return nil
}

// watchPoll waits for the next --watch round and reports whether there is
// one. Tests replace it to step rounds without waiting.
var watchPoll = func(ctx context.Context, interval time.Duration) bool {
	t := time.NewTimer(interval)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// objectKey identifies an object across rounds by its status path, and
// returns its status-file bytes.
func objectKey(o runtime.Object) (string, []byte, error) {
	data, err := status.Encode(o)
	if err != nil {
		return "", nil, err
	}
	key, err := status.PathFor(o)
	if err != nil {
		key = o.GetObjectKind().GroupVersionKind().Kind + "/" + objectName(o)
	}
	return key, data, nil
}

// cmdContext is the command's context (main's, cancelled by Ctrl-C).
func cmdContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
