package renderproc

import (
	"bufio"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"testing/fstest"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/crdschema"
	"github.com/gitfleet/gitfleet/render"
)

// workerEnv, set in a worker's environment, makes Main run the worker.
const workerEnv = "GITFLEET_RENDER_WORKER"

// Main runs the render worker and exits when this process was started as
// one by Render; otherwise it returns at once. gitfleet's main calls it
// first, and so must TestMain in every package whose tests render through
// Render (the worker is the test binary itself).
func Main() {
	if os.Getenv(workerEnv) == "" {
		return
	}
	if err := work(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "render worker:", err)
		os.Exit(2)
	}
	os.Exit(0)
}

// work reads a request from in, renders it and writes the result to out.
func work(in io.Reader, out io.Writer) error {
	dec := gob.NewDecoder(bufio.NewReaderSize(in, 1<<16))
	var h header
	if err := dec.Decode(&h); err != nil {
		return fmt.Errorf("reading the request: %w", err)
	}
	m := fstest.MapFS{}
	for {
		var e entry
		if err := dec.Decode(&e); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return fmt.Errorf("reading the request: %w", err)
		}
		switch e.Kind {
		case kindFile:
			m[e.Name] = &fstest.MapFile{Data: e.Data, Mode: 0o644}
		case kindLink:
			m[e.Name] = &fstest.MapFile{Data: e.Data, Mode: fs.ModeSymlink | 0o777}
		case kindDir:
			m[e.Name] = &fstest.MapFile{Mode: fs.ModeDir | 0o755}
		}
	}
	c, err := render.Render(boundedLinks{m}, h.Options)
	w := bufio.NewWriterSize(out, 1<<16)
	answer := toWire(c, err)
	answer.PeakRSS = ownPeak()
	if err := json.NewEncoder(w).Encode(answer); err != nil {
		return fmt.Errorf("writing the result: %w", err)
	}
	return w.Flush()
}

// boundedLinks is an fstest.MapFS whose names are resolved with at most
// render.MaxLinkHops links before MapFS resolves them itself: MapFS recurses
// without bound on a link loop, which would end the worker with a stack
// overflow instead of render's "symbolic link loop".
type boundedLinks struct{ m fstest.MapFS }

var errLoop = errors.New("too many levels of symbolic links")

func (b boundedLinks) Open(name string) (fs.File, error) {
	if !b.resolves(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errLoop}
	}
	return b.m.Open(name)
}

func (b boundedLinks) ReadLink(name string) (string, error) {
	if !b.resolves(path.Dir(name)) {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: errLoop}
	}
	return b.m.ReadLink(name)
}

func (b boundedLinks) Lstat(name string) (fs.FileInfo, error) {
	if !b.resolves(path.Dir(name)) {
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: errLoop}
	}
	return b.m.Lstat(name)
}

// resolves reports whether name resolves within render.MaxLinkHops links (or
// leads nowhere, which MapFS reports itself): false only for a loop.
func (b boundedLinks) resolves(name string) bool {
	parts := strings.Split(name, "/")
	cur, hops := ".", 0
	for i := 0; i < len(parts); i++ {
		if parts[i] == "." {
			continue
		}
		next := path.Join(cur, parts[i])
		f := b.m[next]
		if f == nil || f.Mode.Type() != fs.ModeSymlink {
			cur = next
			continue
		}
		if hops++; hops > render.MaxLinkHops {
			return false
		}
		target := string(f.Data)
		if path.IsAbs(target) {
			return true
		}
		rest := path.Join(append([]string{path.Dir(next), target}, parts[i+1:]...)...)
		if !fs.ValidPath(rest) {
			return true
		}
		parts, cur, i = strings.Split(rest, "/"), ".", -1
	}
	return true
}

// wire is the worker's answer: the content, or the error in a form that
// comes back as the same type (callers use errors.As on them).
type wire struct {
	Content  *wireContent          `json:"content,omitempty"`
	Refused  *render.RefusedError  `json:"refused,omitempty"`
	Manifest *render.ManifestError `json:"manifest,omitempty"`
	Error    string                `json:"error,omitempty"`
	// PeakRSS is the worker's peak resident memory in bytes (0: unknown).
	PeakRSS int64 `json:"peakRSS,omitempty"`
}

// wireContent is render.Content with Sources as a list (JSON object keys
// are strings, ObjectRef is a struct). No field is omitted when empty, so
// a nil list and an empty one come back as they were.
type wireContent struct {
	Members                  []*fleet.MemberCluster                            `json:"members"`
	Placements               []*fleet.Placement                                `json:"placements"`
	Strategies               []*fleet.UpdateStrategy                           `json:"strategies"`
	Runs                     []*fleet.UpdateRun                                `json:"runs"`
	ClusterResourceOverrides []*fleet.ClusterResourceOverride                  `json:"clusterResourceOverrides"`
	ResourceOverrides        []*fleet.ResourceOverride                         `json:"resourceOverrides"`
	Evictions                []*fleet.ClusterResourcePlacementEviction         `json:"evictions"`
	DisruptionBudgets        []*fleet.ClusterResourcePlacementDisruptionBudget `json:"disruptionBudgets"`
	RolloutWindows           []*fleet.RolloutWindow                            `json:"rolloutWindows"`
	Resources                []*unstructured.Unstructured                      `json:"resources"`
	Sources                  []wireSource                                      `json:"sources"`
	Errors                   []render.ManifestError                            `json:"errors"`
	Accepted                 crdschema.Accepted                                `json:"accepted"`
}

type wireSource struct {
	Ref    render.ObjectRef
	Source render.Source
}

func toWire(c *render.Content, err error) wire {
	var refused *render.RefusedError
	var manifest *render.ManifestError
	switch {
	case errors.As(err, &refused):
		return wire{Refused: refused}
	case errors.As(err, &manifest):
		return wire{Manifest: manifest}
	case err != nil:
		return wire{Error: err.Error()}
	}
	w := &wireContent{Members: c.Members, Placements: c.Placements, Strategies: c.Strategies, Runs: c.Runs,
		ClusterResourceOverrides: c.ClusterResourceOverrides, ResourceOverrides: c.ResourceOverrides,
		Evictions: c.Evictions, DisruptionBudgets: c.DisruptionBudgets, RolloutWindows: c.RolloutWindows,
		Resources: c.Resources, Errors: c.Errors, Accepted: c.Accepted}
	for ref, src := range c.Sources {
		w.Sources = append(w.Sources, wireSource{ref, src})
	}
	return wire{Content: w}
}

// fromWire is the result of the render the worker answered w for.
func fromWire(w wire) (*render.Content, error) {
	switch {
	case w.Refused != nil:
		return nil, w.Refused
	case w.Manifest != nil:
		return nil, w.Manifest
	case w.Error != "":
		return nil, errors.New(w.Error)
	case w.Content == nil:
		return nil, errors.New("render worker: empty answer")
	}
	wc := w.Content
	c := &render.Content{Members: wc.Members, Placements: wc.Placements, Strategies: wc.Strategies, Runs: wc.Runs,
		ClusterResourceOverrides: wc.ClusterResourceOverrides, ResourceOverrides: wc.ResourceOverrides,
		Evictions: wc.Evictions, DisruptionBudgets: wc.DisruptionBudgets, RolloutWindows: wc.RolloutWindows,
		Resources: wc.Resources, Errors: wc.Errors, Accepted: wc.Accepted, Sources: make(map[render.ObjectRef]render.Source, len(wc.Sources))}
	for _, s := range wc.Sources {
		c.Sources[s.Ref] = s.Source
	}
	return c, nil
}
