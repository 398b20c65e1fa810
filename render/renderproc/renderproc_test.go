package renderproc_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gitfleet/gitfleet/internal/testing/manifestcorpus"
	"github.com/gitfleet/gitfleet/render"
	"github.com/gitfleet/gitfleet/render/renderproc"
)

func TestMain(m *testing.M) {
	renderproc.Main() // the workers are this test binary
	os.Exit(m.Run())
}

// result is a render's outcome as comparable JSON: the content (sources
// as a sorted list) or the error with its type.
func result(t *testing.T, c *render.Content, err error) string {
	t.Helper()
	type source struct {
		Ref render.ObjectRef
		Src render.Source
	}
	out := map[string]any{}
	var refused *render.RefusedError
	var manifest *render.ManifestError
	switch {
	case errors.As(err, &refused):
		out["refused"] = refused
	case errors.As(err, &manifest):
		out["manifest"] = manifest
	case err != nil:
		out["error"] = err.Error()
	default:
		var sources []source
		for r, s := range c.Sources {
			sources = append(sources, source{r, s})
		}
		sort.Slice(sources, func(i, j int) bool { return sources[i].Ref.String() < sources[j].Ref.String() })
		out["members"], out["placements"], out["strategies"], out["runs"] = c.Members, c.Placements, c.Strategies, c.Runs
		out["cros"], out["ros"], out["resources"] = c.ClusterResourceOverrides, c.ResourceOverrides, c.Resources
		out["sources"], out["errors"] = sources, c.Errors
	}
	data, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// sameAsInProcess renders fsys in process and through a worker and fails
// unless both agree exactly, error types included.
func sameAsInProcess(t *testing.T, fsys fs.FS, opts render.Options) (inProcess error) {
	t.Helper()
	want, wantErr := render.Render(fsys, opts)
	got, gotErr := renderproc.Render(context.Background(), fsys, opts, renderproc.Limits{})
	var limit *renderproc.LimitError
	if errors.As(gotErr, &limit) {
		t.Fatalf("stopped at a limit: %v", gotErr)
	}
	if w, g := result(t, want, wantErr), result(t, got, gotErr); w != g {
		t.Errorf("worker's render differs from render.Render's:\n--- in process\n%s\n--- worker\n%s", w, g)
	}
	if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
		t.Errorf("error %v, want %v", gotErr, wantErr)
	}
	return wantErr
}

// Every tree of render's tests renders through a worker exactly as in
// process: content, sources, errors, and refusals as the same types.
func TestRendersEveryTestTreeAsInProcess(t *testing.T) {
	trees := []struct{ dir, path string }{
		{"demo", "."}, {"demo-kustomize", "."}, {"overrides", "."},
		{"overlays-repo", "envs/prod"}, {"demo", "no-such-folder"}, {"demo", "../escape"}, {"demo", "README.md"},
	}
	broken, err := os.ReadDir("../../render/testdata/broken")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range broken {
		trees = append(trees, struct{ dir, path string }{"broken/" + d.Name(), "."})
	}
	for _, tc := range trees {
		t.Run(tc.dir+":"+tc.path, func(t *testing.T) {
			t.Parallel()
			sameAsInProcess(t, os.DirFS(filepath.Join("../../render/testdata", tc.dir)), render.Options{Path: tc.path, MaxFileSize: 1 << 10})
		})
	}
	// Over the total size: the worker is sent what the render reads up to
	// the file that goes over, and fails on it as render does.
	for _, tc := range []struct {
		dir, path string
		total     int64
	}{{"demo", ".", 1 << 10}, {"demo-kustomize", ".", 1 << 10}, {"overlays-repo", "envs/prod", 300}} {
		t.Run(tc.dir+":total", func(t *testing.T) {
			t.Parallel()
			err := sameAsInProcess(t, os.DirFS(filepath.Join("../../render/testdata", tc.dir)), render.Options{Path: tc.path, MaxTotalSize: tc.total})
			if err == nil || !strings.Contains(err.Error(), "total size limit") {
				t.Errorf("in process: %v, want the total size limit", err)
			}
		})
	}
}

// Every commit of the manifest corpus, refused and accepted, renders
// through a worker as in process.
func TestRendersTheCorpusAsInProcess(t *testing.T) {
	for _, dir := range []string{"refused", "accepted"} {
		cases, err := manifestcorpus.Load("../../render/testdata/corpus/" + dir)
		if err != nil || len(cases) == 0 {
			t.Fatalf("corpus %s: %d cases, %v", dir, len(cases), err)
		}
		for _, tc := range cases {
			t.Run(dir+"/"+tc.Name, func(t *testing.T) {
				t.Parallel()
				fsys := fstest.MapFS{}
				for name, data := range tc.Files {
					fsys[name] = &fstest.MapFile{Data: data}
				}
				sameAsInProcess(t, fsys, render.Options{MaxFileSize: tc.MaxFileSize})
			})
		}
	}
}

// Symbolic links render as in process: inside the repository, leaving
// it, dangling, to a folder, in a chain, and a base outside the path.
func TestRendersSymbolicLinksAsInProcess(t *testing.T) {
	link := func(target string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte(target), Mode: fs.ModeSymlink | 0o777}
	}
	cm := &fstest.MapFile{Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: default\n")}
	trees := map[string]fstest.MapFS{
		"inside":        {"shared/cm.yaml": cm, "fleet/cm.yaml": link("../shared/cm.yaml")},
		"chain":         {"shared/real.yaml": cm, "shared/cm.yaml": link("real.yaml"), "fleet/cm.yaml": link("../shared/cm.yaml")},
		"through a dir": {"shared/cm.yaml": cm, "dir": link("shared"), "fleet/cm.yaml": link("../dir/cm.yaml")},
		"leaves":        {"fleet/cm.yaml": link("../../etc/passwd")},
		"absolute":      {"fleet/cm.yaml": link("/etc/passwd")},
		"dangles":       {"fleet/cm.yaml": link("missing.yaml")},
		"folder":        {"shared/x/cm.yaml": cm, "fleet/cm.yaml": link("../shared/x")},
		"kustomized": {"shared/cm.yaml": cm, "fleet/kustomization.yaml": &fstest.MapFile{Data: []byte("resources:\n- cm.yaml\n")},
			"fleet/cm.yaml": link("../shared/cm.yaml")},
		"root is a link": {"real/cm.yaml": cm, "fleet": link("real")},
	}
	for name, fsys := range trees {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sameAsInProcess(t, fsys, render.Options{Path: "fleet"})
		})
	}
}

// A link loop where render looks for a kustomization made fstest.MapFS
// (serve's view of a commit) recurse until the stack overflowed, ending
// the process; through a worker the commit is refused like any bad link.
func TestASymbolicLinkLoopIsAnErrorNotACrash(t *testing.T) {
	loop := fstest.MapFS{
		"kustomization.yaml": {Data: []byte("kustomization.yaml"), Mode: fs.ModeSymlink | 0o777},
		"cm.yaml":            {Data: []byte("cm.yaml"), Mode: fs.ModeSymlink | 0o777},
	}
	_, err := renderproc.Render(context.Background(), loop, render.Options{}, renderproc.Limits{})
	if err == nil || !strings.Contains(err.Error(), "symbolic link loop") {
		t.Errorf("error %v, want a symbolic link loop named", err)
	}
}

// watchWorkers records the process id of every worker started.
func watchWorkers(t *testing.T) func() []int {
	var mu sync.Mutex
	var pids []int
	t.Cleanup(renderproc.SetStarted(func(pid int) {
		mu.Lock()
		pids = append(pids, pid)
		mu.Unlock()
	}))
	return func() []int {
		mu.Lock()
		defer mu.Unlock()
		return append([]int(nil), pids...)
	}
}

// assertGone fails if the worker still exists: killed and reaped, its
// /proc entry is gone, so it uses no CPU.
func assertGone(t *testing.T, pids []int) {
	t.Helper()
	if len(pids) != 1 {
		t.Fatalf("%d workers started, want 1", len(pids))
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(pids[0])); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("worker %d still exists after Render returned (stat: %v)", pids[0], err)
	}
}

// A render that would take hours (300 patches each applied to 300
// objects by kustomize) is killed at its time limit: Render returns
// ErrTimeout at once and the worker no longer exists.
func TestASlowRenderIsKilledAtItsTimeLimit(t *testing.T) {
	workers := watchWorkers(t)
	start := time.Now()
	_, err := renderproc.Render(context.Background(), slowTree(300, 300), render.Options{}, renderproc.Limits{Timeout: 300 * time.Millisecond})
	elapsed := time.Since(start)
	var limit *renderproc.LimitError
	if !errors.As(err, &limit) || !errors.Is(err, renderproc.ErrTimeout) {
		t.Fatalf("error %v, want a timeout", err)
	}
	if err.Error() != "render timed out after 300ms (--render-timeout)" {
		t.Errorf("message %q", err.Error())
	}
	if elapsed > time.Minute {
		t.Errorf("Render returned after %s, long past the 300ms limit", elapsed)
	}
	assertGone(t, workers())
}

// A render that holds more than the memory limit (40,000 ConfigMaps of
// 1 KiB) is killed, and a small one passes under the same limit.
func TestAMemoryHungryRenderIsKilledAtItsMemoryLimit(t *testing.T) {
	lim := renderproc.Limits{Memory: 128 << 20, Timeout: 10 * time.Minute}
	if _, err := renderproc.Render(context.Background(), bigTree(1, 10, 10), render.Options{}, lim); err != nil {
		t.Fatalf("a small render under %s: %v", renderproc.Bytes(lim.Memory), err)
	}
	workers := watchWorkers(t)
	_, err := renderproc.Render(context.Background(), bigTree(8, 5000, 1000), render.Options{}, lim)
	var limit *renderproc.LimitError
	if !errors.As(err, &limit) || !errors.Is(err, renderproc.ErrMemory) {
		t.Fatalf("error %v, want the memory limit", err)
	}
	if err.Error() != "render exceeded its memory limit: it used more than 128Mi (--render-memory-limit)" {
		t.Errorf("message %q", err.Error())
	}
	assertGone(t, workers())
}

// Canceling the context (serve stopping) kills the worker and returns the
// context's error, not a timeout.
func TestCancelingKillsTheWorker(t *testing.T) {
	var once sync.Once
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t.Cleanup(renderproc.SetStarted(func(int) { once.Do(cancel) }))
	_, err := renderproc.Render(ctx, slowTree(300, 300), render.Options{}, renderproc.Limits{Timeout: time.Hour})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
}

// Digest is the same for trees a render reads the same, and differs when
// a file it reads changes.
func TestDigest(t *testing.T) {
	cm := func(v string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: default\ndata:\n  k: " + v + "\n")}
	}
	base := fstest.MapFS{"fleet/cm.yaml": cm("a"), "README.md": {Data: []byte("one")}}
	digest := func(fsys fs.FS) string {
		d, err := renderproc.Digest(fsys, render.Options{Path: "fleet"})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	readme := fstest.MapFS{"fleet/cm.yaml": cm("a"), "README.md": {Data: []byte("two")}}
	changed := fstest.MapFS{"fleet/cm.yaml": cm("b"), "README.md": {Data: []byte("one")}}
	if digest(base) != digest(readme) {
		t.Error("a README outside the path changed the digest")
	}
	if digest(base) == digest(changed) {
		t.Error("a changed manifest kept the digest")
	}
	if !reflect.DeepEqual(digest(base), digest(base)) {
		t.Error("digest is not deterministic")
	}
}
