// Package yamlstream writes a JSON document (json.Marshal's output) as block
// YAML straight to a writer, byte for byte as sigs.k8s.io/yaml.Marshal
// prints the same document decoded, null map values left out.
//
// sigs.k8s.io/yaml converts through JSON, parses that with go-yaml v2 and
// emits it again; the v2 emitter also keeps every event of a document until
// the document ends. For a run or a placement of 10,000 clusters that costs
// seconds and hundreds of MiB, most of `simulate -o yaml`. This writer
// covers the subset of YAML gitfleet's objects use (printable ASCII
// strings, short keys, no list directly inside a list) with go-yaml v2's
// rules for key order, scalar styles and line folding ported from its
// emitter; Supported says whether a document is inside that subset, and the
// caller falls back to sigs.k8s.io/yaml when it is not. The tests compare
// both on generated documents.
package yamlstream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	yamlv2 "go.yaml.in/yaml/v2"
)

const (
	// bestWidth is go-yaml v2's preferred line width: a scalar is folded
	// at the first space past it.
	bestWidth = 80
	// maxSimpleKey is the longest key go-yaml v2 writes as "key: value".
	maxSimpleKey = 128
)

// Drop says whether to leave out the map entry at path (its keys from the
// document's root) whose value is the JSON text val.
type Drop func(path []string, val []byte) bool

// Supported reports whether WriteJSON prints doc, the output of
// json.Marshal, exactly as sigs.k8s.io/yaml would: an object whose strings
// are printable ASCII (escapes included), whose keys are short, and whose
// arrays hold no non-empty arrays. It reads doc once and allocates nothing.
func Supported(doc []byte) bool {
	if len(doc) < 2 || doc[0] != '{' || doc[1] == '}' {
		return false
	}
	var stack []byte // open containers, '{' or '['
	for i := 0; i < len(doc); i++ {
		switch c := doc[i]; c {
		case '"':
			n := 0 // characters
			for i++; i < len(doc) && doc[i] != '"'; i++ {
				n++
				if doc[i] >= 0x7f { // DEL and beyond: not printable ASCII
					return false
				}
				if doc[i] == '\\' {
					i++
					if i >= len(doc) || !printableEscape(doc[i:]) {
						return false
					}
					if doc[i] == 'u' {
						i += 4
					}
				}
			}
			if i+1 < len(doc) && doc[i+1] == ':' && n > maxSimpleKey {
				return false
			}
		case '{', '[':
			if c == '[' && len(stack) > 0 && stack[len(stack)-1] == '[' && doc[i+1] != ']' {
				return false
			}
			stack = append(stack, c)
		case '}', ']':
			stack = stack[:len(stack)-1]
		}
	}
	return true
}

// printableEscape reports whether the JSON escape after a backslash stands
// for printable ASCII (what json.Marshal escapes for HTML: <, >, &).
func printableEscape(b []byte) bool {
	switch b[0] {
	case '"', '\\', '/':
		return true
	case 'u':
		if len(b) < 5 || string(b[1:3]) != "00" {
			return false
		}
		v, err := strconv.ParseUint(string(b[1:5]), 16, 16)
		return err == nil && v >= 0x20 && v <= 0x7e
	}
	return false
}

// WriteJSON prints doc, the output of json.Marshal that is Supported, as
// one YAML document, leaving out null map values (and what drop says),
// walking the JSON text instead of decoding it into maps: the memory it
// needs besides doc is one object's keys per level. When w is a
// *bufio.Writer, WriteJSON leaves the output in its buffer (and write
// errors to its Flush), so a stream of small documents costs no buffer
// each.
func WriteJSON(w io.Writer, doc []byte, drop Drop) error {
	bw, buffered := w.(*bufio.Writer)
	if !buffered {
		// Pooled: the status tree encodes thousands of small files per
		// commit, each into a fresh bytes.Buffer.
		bw = writers.Get().(*bufio.Writer)
		bw.Reset(w)
		defer func() {
			bw.Reset(nil)
			writers.Put(bw)
		}()
	}
	e := emitters.Get().(*emitter)
	defer e.release()
	e.w, e.drop = bw, drop
	members := e.members(doc)
	if len(members) > 0 {
		e.object(members, 0, false)
	} else {
		e.puts("{}")
	}
	e.free(members)
	e.newline()
	if e.err != nil {
		return e.err
	}
	if buffered {
		return nil
	}
	return bw.Flush()
}

var (
	writers  = sync.Pool{New: func() any { return bufio.NewWriter(nil) }}
	emitters = sync.Pool{New: func() any { return new(emitter) }}
)

// emitter tracks the column as go-yaml v2's emitter does, since folding
// depends on it.
type emitter struct {
	w     *bufio.Writer
	col   int
	dirty bool // something was written on the current line
	err   error
	drop  Drop
	path  []string
	// spare are lists of members done with, reused for the next objects:
	// one list per level of the document is all a walk needs.
	spare [][]member
	keys  map[string]string // JSON text of a key -> the key
}

// release returns e to the pool, keeping its spare lists.
func (e *emitter) release() {
	*e = emitter{path: e.path[:0], spare: e.spare, keys: e.keys}
	emitters.Put(e)
}

// free hands a list of members back for reuse, cleared: a pooled emitter
// must not keep the last document alive.
func (e *emitter) free(m []member) {
	if cap(m) > 0 {
		clear(m[:cap(m)])
		e.spare = append(e.spare, m[:0])
	}
}

func (e *emitter) put(b byte) {
	e.w.WriteByte(b)
	e.col++
	e.dirty = true
}

func (e *emitter) puts(s string) {
	e.w.WriteString(s)
	e.col += len(s)
	e.dirty = true
}

func (e *emitter) newline() {
	if e.dirty {
		e.w.WriteByte('\n')
	}
	e.col, e.dirty = 0, false
}

// indent starts a new line at column n (go-yaml's write_indent).
func (e *emitter) indent(n int) {
	e.newline()
	for range n {
		e.w.WriteByte(' ')
	}
	e.col = n
}

// member is one entry of a JSON object: its key and its value's text.
type member struct {
	key string
	val []byte
}

// members lists the entries of the JSON object obj that YAML prints, in
// go-yaml's key order: nulls and what drop says are left out.
func (e *emitter) members(obj []byte) []member {
	var out []member
	if n := len(e.spare); n > 0 {
		out, e.spare = e.spare[n-1], e.spare[:n-1]
	}
	for i := 1; obj[i] != '}'; {
		if obj[i] == ',' {
			i++
		}
		end := valueEnd(obj, i)
		key := e.key(obj[i:end])
		i = end + 1 // the colon
		end = valueEnd(obj, i)
		val := obj[i:end]
		i = end
		if val[0] == 'n' {
			continue
		}
		if e.drop != nil && e.drop(append(e.path, key), val) {
			continue
		}
		out = append(out, member{key, val})
	}
	sortMembers(out)
	return out
}

// sortMembers puts members in go-yaml's key order. An object of a Go
// struct has a dozen keys or fewer, in the same few orders document after
// document: an insertion sort asks keyLess once a comparison, where a
// three-way comparison built on it asked twice.
func sortMembers(m []member) {
	if len(m) > 16 {
		slices.SortFunc(m, func(a, b member) int {
			switch {
			case keyLess(a.key, b.key):
				return -1
			case keyLess(b.key, a.key):
				return 1
			}
			return 0
		})
		return
	}
	for i := 1; i < len(m); i++ {
		for j := i; j > 0 && keyLess(m[j].key, m[j-1].key); j-- {
			m[j], m[j-1] = m[j-1], m[j]
		}
	}
}

// EmptyObject reports whether val is a JSON object that WriteJSON prints as
// {}: one without entries or with only nulls.
func EmptyObject(val []byte) bool {
	if len(val) < 2 || val[0] != '{' {
		return false
	}
	for i := 1; val[i] != '}'; {
		if val[i] == ',' {
			i++
		}
		i = valueEnd(val, i) + 1
		end := valueEnd(val, i)
		if val[i] != 'n' {
			return false
		}
		i = end
	}
	return true
}

// key is text for a key: the same few field names come in every
// document, and an emitter (pooled) keeps them rather than allocating them
// again each time.
func (e *emitter) key(raw []byte) string {
	if k, ok := e.keys[string(raw)]; ok {
		return k
	}
	k := e.text(raw)
	if e.err != nil {
		return k
	}
	if e.keys == nil || len(e.keys) >= 1024 {
		e.keys = map[string]string{} // bounded: label keys vary
	}
	e.keys[string(raw)] = k
	return k
}

// text decodes a JSON string.
func (e *emitter) text(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1])
	}
	return e.unescape(raw)
}

// view is a JSON string's text without a copy when it has no escapes: the
// string shares doc's bytes, so it must not outlive the call that writes
// it (nothing keeps a value's text; the caches copy what they keep). Most
// of a status file's bytes are such strings, and a copy of each was a
// fifth of what encoding allocated.
func (e *emitter) view(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		if len(raw) == 2 {
			return ""
		}
		return unsafe.String(&raw[1], len(raw)-2)
	}
	return e.unescape(raw)
}

func (e *emitter) unescape(raw []byte) string {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil && e.err == nil {
		e.err = fmt.Errorf("yamlstream: %w", err)
	}
	return s
}

// valueEnd returns the index just past the JSON value starting at b[i]
// (json.Marshal's output: no white space).
func valueEnd(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
			if depth < 0 {
				return i
			}
		case ',', ':':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}

// object writes a block mapping of members whose keys start at column n.
// inItem means its first key follows a list item's "- " on the same line.
func (e *emitter) object(members []member, n int, inItem bool) {
	for i, m := range members {
		if i > 0 || !inItem {
			e.indent(n)
		}
		e.scalar(m.key, e.styleOf(m.key), false, 0)
		e.put(':')
		e.path = append(e.path, m.key)
		e.value(m.val, n, true)
		e.path = e.path[:len(e.path)-1]
	}
}

// value writes what follows "key:" (in a mapping at column n) or "-" (a
// list item at column n).
func (e *emitter) value(v []byte, n int, inMapping bool) {
	switch v[0] {
	case '{':
		members := e.members(v)
		switch {
		case len(members) == 0:
			e.puts(" {}")
		case inMapping:
			e.object(members, n+2, false)
		default:
			e.puts(" ")
			e.object(members, n+2, true)
		}
		e.free(members)
	case '[':
		if v[1] == ']' {
			e.puts(" []")
			return
		}
		// go-yaml does not indent a list inside a mapping.
		for i := 1; i < len(v)-1; {
			end := valueEnd(v, i)
			e.indent(n)
			e.put('-')
			e.value(v[i:end], n, false)
			i = end + 1
		}
	case '"':
		s := e.view(v)
		e.scalar(s, e.styleOf(s), true, n+2)
	case 't', 'f':
		e.puts(" " + string(v))
	case 'n':
		e.puts(" null")
	default:
		e.puts(" ")
		e.puts(number(json.Number(v)))
	}
}

// number prints a JSON number as go-yaml prints what it resolves the
// number to: an int, a uint, else a float.
func number(n json.Number) string {
	s := string(n)
	if i, err := strconv.ParseInt(s, 0, 64); err == nil {
		return strconv.FormatInt(i, 10)
	}
	if u, err := strconv.ParseUint(s, 0, 64); err == nil {
		return strconv.FormatUint(u, 10)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	switch s := strconv.FormatFloat(f, 'g', -1, 64); s {
	case "+Inf":
		return ".inf"
	case "-Inf":
		return "-.inf"
	case "NaN":
		return ".nan"
	default:
		return s
	}
}

type style uint8

const (
	plain style = iota
	singleQuoted
	doubleQuoted
)

// styleOf is the style go-yaml v2 gives a printable ASCII string without
// line breaks: double-quoted when it would read back as something else
// than a string, single-quoted when plain text would be misread, else
// plain.
func (e *emitter) styleOf(s string) style {
	if !readsAsString(s) {
		return doubleQuoted
	}
	if !plainAllowed(s) {
		return singleQuoted
	}
	return plain
}

// readsAsString is go-yaml v2's resolve(s) == "!!str" (and not a base-60
// float). Only strings starting with a sign, a digit or a dot need its full
// rules; those ask go-yaml itself, once per distinct string.
func readsAsString(s string) bool {
	if s == "" {
		return false
	}
	switch c := s[0]; {
	case c == '+' || c == '-' || c == '.' || c >= '0' && c <= '9':
		return !resolved.quoted(s)
	case strings.ContainsRune("yYnNtTfFoO~", rune(c)):
		_, special := boolsAndNulls[s]
		return !special
	}
	return true
}

// resolved remembers go-yaml's verdicts on strings that start like a
// number, for every document: most are times ("2026-01-09T01:49:06Z"),
// which every file of a run repeats, and asking go-yaml costs a
// microsecond and a half each.
var resolved styleCache

type styleCache struct {
	mu       sync.Mutex
	verdicts map[string]bool // true: double-quoted
}

// quoted reports whether go-yaml v2 double-quotes s because it would read
// back as something else than a string.
func (c *styleCache) quoted(s string) bool {
	c.mu.Lock()
	q, ok := c.verdicts[s]
	c.mu.Unlock()
	if ok {
		return q
	}
	out, err := yamlv2.Marshal(s)
	q = err != nil || strings.HasPrefix(string(out), `"`)
	c.mu.Lock()
	if c.verdicts == nil || len(c.verdicts) >= 4096 {
		c.verdicts = map[string]bool{} // bounded: times never repeat for long
	}
	c.verdicts[strings.Clone(s)] = q // s may be a view of a document
	c.mu.Unlock()
	return q
}

// boolsAndNulls are the words go-yaml v2 reads as booleans or null.
var boolsAndNulls = map[string]struct{}{}

func init() {
	for _, w := range strings.Fields("y Y yes Yes YES true True TRUE on On ON n N no No NO false False FALSE off Off OFF ~ null Null NULL") {
		boolsAndNulls[w] = struct{}{}
	}
}

// plainAllowed is go-yaml v2's analyze_scalar verdict "block plain
// allowed" for a non-empty printable ASCII string without line breaks.
func plainAllowed(s string) bool {
	if s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	if strings.HasPrefix(s, "---") || strings.HasPrefix(s, "...") {
		return false
	}
	followedBySpace := func(i int) bool { return i+1 >= len(s) || s[i+1] == ' ' }
	switch s[0] {
	case '#', ',', '[', ']', '{', '}', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		return false
	case '?', ':', '-':
		if followedBySpace(0) {
			return false
		}
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case ':':
			if followedBySpace(i) {
				return false
			}
		case '#':
			if s[i-1] == ' ' {
				return false
			}
		}
	}
	return true
}

// scalar writes s in style st after a key's ':' or an item's '-' (value)
// or at the start of a key. Values fold at spaces past bestWidth onto lines
// at column cont, as go-yaml v2's write_*_scalar do; keys never fold.
func (e *emitter) scalar(s string, st style, value bool, cont int) {
	if value {
		e.put(' ')
	}
	// Text that ends before the fold width, or a key, is written whole: a
	// fold happens only at a space past bestWidth.
	if !value || e.col+len(s) <= bestWidth {
		switch {
		case st == plain:
			e.puts(s)
			return
		case st == singleQuoted && strings.IndexByte(s, '\'') < 0,
			st == doubleQuoted && strings.IndexByte(s, '"') < 0 && strings.IndexByte(s, '\\') < 0:
			q := byte('\'')
			if st == doubleQuoted {
				q = '"'
			}
			e.put(q)
			e.puts(s)
			e.put(q)
			return
		}
	}
	spaces := false
	switch st {
	case plain:
		for i := 0; i < len(s); i++ {
			if s[i] == ' ' {
				if value && !spaces && e.col > bestWidth && (i+1 >= len(s) || s[i+1] != ' ') {
					e.indent(cont)
				} else {
					e.put(' ')
				}
				spaces = true
				continue
			}
			e.put(s[i])
			spaces = false
		}
	case singleQuoted:
		e.put('\'')
		for i := 0; i < len(s); i++ {
			if s[i] == ' ' {
				if value && !spaces && e.col > bestWidth && i > 0 && i < len(s)-1 && s[i+1] != ' ' {
					e.indent(cont)
				} else {
					e.put(' ')
				}
				spaces = true
				continue
			}
			if s[i] == '\'' {
				e.put('\'')
			}
			e.put(s[i])
			spaces = false
		}
		e.put('\'')
	case doubleQuoted:
		e.put('"')
		for i := 0; i < len(s); i++ {
			switch s[i] {
			case '"', '\\':
				e.put('\\')
				e.put(s[i])
				spaces = false
			case ' ':
				if value && !spaces && e.col > bestWidth && i > 0 && i < len(s)-1 {
					e.indent(cont)
					if s[i+1] == ' ' {
						e.put('\\')
					}
				} else {
					e.put(' ')
				}
				spaces = true
			default:
				e.put(s[i])
				spaces = false
			}
		}
		e.put('"')
	}
}

// keyLess is go-yaml v2's order of string map keys (sorter.go): letters
// before other characters, runs of digits compared as numbers.
func keyLess(a, b string) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		al, bl := isLetter(a[i]), isLetter(b[i])
		if al && bl {
			return a[i] < b[i]
		}
		if al || bl {
			return bl
		}
		var ai, bi int
		var an, bn int64
		if a[i] == '0' || b[i] == '0' {
			for j := i - 1; j >= 0 && isDigit(a[j]); j-- {
				if a[j] != '0' {
					an, bn = 1, 1
					break
				}
			}
		}
		for ai = i; ai < len(a) && isDigit(a[ai]); ai++ {
			an = an*10 + int64(a[ai]-'0')
		}
		for bi = i; bi < len(b) && isDigit(b[bi]); bi++ {
			bn = bn*10 + int64(b[bi]-'0')
		}
		if an != bn {
			return an < bn
		}
		if ai != bi {
			return ai < bi
		}
		return a[i] < b[i]
	}
	return len(a) < len(b)
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
