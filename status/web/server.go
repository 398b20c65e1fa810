package web

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// csp allows only the server's own scripts, styles and images, and no
// frames or forms posting elsewhere: the pages are read-only.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Config configures the web view.
type Config struct {
	Source Source
	// Live turns on Server-Sent Events (/events): pages reload their
	// content when Notify says the status changed.
	Live bool
	// CommitURL links a commit to its page on the forge; nil: no links.
	CommitURL func(hash string) string
	// PullRequest is the page of the open pull request from branch, ""
	// when there is none; nil without a forge.
	PullRequest func(ctx context.Context, branch string) string
	// Now is the clock ages are told by (default time.Now).
	Now func() time.Time
	Log *slog.Logger
}

// Server serves the pages.
type Server struct {
	cfg  Config
	tmpl *template.Template
	mux  *http.ServeMux

	mu      sync.Mutex
	cached  *model
	version uint64
	waiters []chan struct{}
}

// New returns the web view's server.
func New(cfg Config) (*Server, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	tmpl, err := template.New("").Funcs(template.FuncMap{
		"join":  strings.Join,
		"comma": comma,
		"slug":  func(s string) string { return strings.ReplaceAll(s, " ", "-") },
	}).ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, tmpl: tmpl, mux: http.NewServeMux()}
	assets, _ := fs.Sub(assetFS, "assets")
	s.mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(assets)))
	s.mux.HandleFunc("GET /{$}", s.fleet)
	s.mux.HandleFunc("GET /runs/{name}", s.run)
	s.mux.HandleFunc("GET /runs/{ns}/{name}", s.run)
	s.mux.HandleFunc("GET /clusters/{name}", s.cluster)
	s.mux.HandleFunc("GET /snapshots/{placement}/{index}", s.snapshot)
	s.mux.HandleFunc("GET /snapshots/{ns}/{placement}/{index}", s.snapshot)
	s.mux.HandleFunc("GET /events", s.events)
	return s, nil
}

// comma writes n with thousands separators.
func comma(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// ServeHTTP implements http.Handler: every answer carries the security
// headers; only GET and HEAD are served.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "the web view is read-only", http.StatusMethodNotAllowed)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// Notify says the status tree changed: the next page reads it again and
// live pages reload their content.
func (s *Server) Notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cached = nil
	s.version++
	for _, c := range s.waiters {
		close(c)
	}
	s.waiters = nil
}

// model reads the tree, or returns the one read since the last Notify.
func (s *Server) model(ctx context.Context) (*model, error) {
	s.mu.Lock()
	m, version := s.cached, s.version
	s.mu.Unlock()
	if m != nil {
		return m, nil
	}
	files, rev, err := s.cfg.Source.Tree(ctx)
	if err != nil {
		return nil, err
	}
	m = load(files, rev)
	if rev == "" {
		// Without a revision a working tree may change under us: read it
		// again for every page.
		return m, nil
	}
	s.mu.Lock()
	// A Notify while we read means the tree moved under us: what we read
	// may mix the two, so it serves this page only.
	if s.version == version {
		s.cached = m
	}
	s.mu.Unlock()
	return m, nil
}

// page is what every template gets: the title, live or not, the content.
type page struct {
	Title, Nav string
	Live       bool
	Data       any
}

func (s *Server) render(w http.ResponseWriter, name, title, nav string, data any) {
	var b bytes.Buffer
	if err := s.tmpl.ExecuteTemplate(&b, name, page{Title: title, Nav: nav, Live: s.cfg.Live, Data: data}); err != nil {
		s.cfg.Log.Error("web page", "page", name, "err", err)
		http.Error(w, "cannot render the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b.Bytes())
}

func (s *Server) fail(w http.ResponseWriter, err error) {
	s.cfg.Log.Error("web view cannot read the status tree", "err", err)
	http.Error(w, "cannot read the status tree", http.StatusInternalServerError)
}

func (s *Server) fleet(w http.ResponseWriter, r *http.Request) {
	m, err := s.model(r.Context())
	if err != nil {
		s.fail(w, err)
		return
	}
	s.render(w, "fleet.html", "Fleet", "fleet", m.fleetPage(s.cfg.Now(), r.URL.Query()))
}

func (s *Server) run(w http.ResponseWriter, r *http.Request) {
	m, err := s.model(r.Context())
	if err != nil {
		s.fail(w, err)
		return
	}
	ns, name := r.PathValue("ns"), r.PathValue("name")
	run := m.run(ns, name)
	if run == nil {
		http.NotFound(w, r)
		return
	}
	title := "Run " + name
	if ns != "" {
		title = "Run " + ns + "/" + name
	}
	s.render(w, "run.html", title, "runs", s.runPage(r.Context(), m, run, r.URL.Query()))
}

func (s *Server) cluster(w http.ResponseWriter, r *http.Request) {
	m, err := s.model(r.Context())
	if err != nil {
		s.fail(w, err)
		return
	}
	p, ok := m.clusterPage(r.PathValue("name"))
	if !ok {
		http.NotFound(w, r)
		return
	}
	s.render(w, "cluster.html", "Cluster "+p.Name, "clusters", p)
}

func (s *Server) snapshot(w http.ResponseWriter, r *http.Request) {
	m, err := s.model(r.Context())
	if err != nil {
		s.fail(w, err)
		return
	}
	index, err := strconv.Atoi(r.PathValue("index"))
	if err != nil {
		http.NotFound(w, r)
		return
	}
	p, ok := m.snapshotPage(r.PathValue("ns"), r.PathValue("placement"), index)
	if !ok {
		http.NotFound(w, r)
		return
	}
	s.render(w, "snapshot.html", fmt.Sprintf("Snapshot %d of %s", index, p.Placement), "snapshots", p)
}

// events streams one "change" event whenever Notify is called, so a page
// fetches its content again: no polling, one open connection a page.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	if !s.cfg.Live {
		http.NotFound(w, r)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	s.mu.Lock()
	seen := s.version
	s.mu.Unlock()
	fmt.Fprintf(w, "retry: 1000\n: version %d\n\n", seen)
	flusher.Flush()
	keepAlive := time.NewTicker(30 * time.Second)
	defer keepAlive.Stop()
	changed := s.wait(seen)
	for {
		select {
		case <-r.Context().Done():
			return
		case <-keepAlive.C:
			fmt.Fprint(w, ": keep-alive\n\n")
			flusher.Flush()
			continue
		case <-changed:
		}
		s.mu.Lock()
		seen = s.version
		s.mu.Unlock()
		fmt.Fprintf(w, "event: change\ndata: %d\n\n", seen)
		flusher.Flush()
		changed = s.wait(seen)
	}
}

// wait returns a channel closed once the version is past seen.
func (s *Server) wait(seen uint64) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := make(chan struct{})
	if s.version != seen {
		close(c)
		return c
	}
	s.waiters = append(s.waiters, c)
	return c
}

// Listen serves h on addr until ctx is done and returns the address it
// listens on. Requests (the event streams too) end with ctx.
func Listen(ctx context.Context, addr string, h http.Handler) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("listening on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String(), nil
}
