package config

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// probeKey is a key no decoder knows: placed under a path, the decoder's
// answer tells what the path is (a mapping of known keys, a mapping of
// names, a list, or a value).
const probeKey = "zz_probe"

// seg is one step of a key path: a fixed key, a name the user picks
// (families.<name>), or the items of a list (auth.tokens[]).
type seg struct {
	key     string
	dynamic bool // a mapping whose keys are names: shown as <name>
	list    bool // the items of a list: shown as []
}

func docPath(p []seg) string {
	var b strings.Builder
	for _, s := range p {
		switch {
		case s.list:
			b.WriteString("[]")
			continue
		case b.Len() > 0:
			b.WriteByte('.')
		}
		b.WriteString(s.key)
	}
	return b.String()
}

// nameOf is how the docs write a name the user picks under p:
// families.<family>, dimensions.<type>.
func nameOf(p []seg) string {
	if len(p) > 0 {
		switch p[len(p)-1].key {
		case "families":
			return "<family>"
		case "dimensions":
			return "<type>"
		}
	}
	return "<name>"
}

// errPath is the key the decoder reports for p (names as "x", list items as [0]).
func errPath(p []seg) string {
	var b strings.Builder
	for _, s := range p {
		switch {
		case s.list:
			b.WriteString("[0]")
			continue
		case b.Len() > 0:
			b.WriteByte('.')
		}
		if s.dynamic {
			b.WriteString("x")
		} else {
			b.WriteString(s.key)
		}
	}
	return b.String()
}

// nest builds the YAML value that puts leaf at path p.
func nest(p []seg, leaf any) any {
	v := leaf
	for i := len(p) - 1; i >= 0; i-- {
		switch s := p[i]; {
		case s.list:
			v = []any{v}
		case s.dynamic:
			v = map[string]any{"x": v}
		default:
			v = map[string]any{s.key: v}
		}
	}
	return v
}

// decodeErrs decodes doc (no validation) and returns its field errors by key.
func decodeErrs(t *testing.T, doc any) map[string]string {
	t.Helper()
	data, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	_, err = decode(data)
	out := map[string]string{}
	for _, fe := range fieldErrors(err) {
		out[fe.Key] = fe.Msg
	}
	return out
}

var knownKeysRe = regexp.MustCompile(`known keys: ([^)]*)\)`)

// decoderKeys walks the decoder by probing it and returns every leaf key it
// accepts, as docs/config.md writes them: families.<family>.dimensions.<type>.shards,
// auth.tokens[].scopes. Nothing here lists keys by hand, so a key added to
// the decoder shows up by itself.
func decoderKeys(t *testing.T) []string {
	t.Helper()
	var leaves []string
	var walk func(p []seg, depth int)
	walk = func(p []seg, depth int) {
		if depth > 12 {
			t.Fatalf("probing %s: the key tree is deeper than 12", docPath(p))
		}
		probe := map[string]any{probeKey: 1}
		errs := decodeErrs(t, nest(p, probe))
		under := errPath(p)
		if under != "" {
			under += "."
		}
		msg, ok := errs[under+probeKey]
		switch {
		case ok && strings.HasPrefix(msg, "unknown key"):
			m := knownKeysRe.FindStringSubmatch(msg)
			if m == nil {
				t.Fatalf("probing %s: no key list in %q", docPath(p), msg)
			}
			for _, k := range strings.Split(m[1], ", ") {
				walk(append(slices.Clone(p), seg{key: k}), depth+1)
			}
			return
		case ok && strings.HasPrefix(msg, "expected a mapping"):
			// The probe was taken as a name whose value must be a mapping.
			walk(append(slices.Clone(p), seg{key: nameOf(p), dynamic: true}), depth+1)
			return
		}
		if msg, ok := errs[errPath(p)]; ok && strings.HasPrefix(msg, "expected a list") {
			walk(append(slices.Clone(p), seg{list: true}), depth+1)
			return
		}
		if len(p) > 0 && p[len(p)-1].list {
			// A list of values (redis.addrs[]): the list itself is the key.
			leaves = append(leaves, docPath(p[:len(p)-1]))
			return
		}
		leaves = append(leaves, docPath(p))
	}
	walk(nil, 0)
	slices.Sort(leaves)
	return slices.Compact(leaves)
}

// docKeys returns the keys of docs/config.md's key tables: the first cell of
// every table row, in backquotes.
func docKeys(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cell := regexp.MustCompile("^\\|\\s*`([a-z_<>.\\[\\]]+)`\\s*\\|")
	var keys []string
	for _, line := range strings.Split(string(data), "\n") {
		if m := cell.FindStringSubmatch(line); m != nil {
			keys = append(keys, m[1])
		}
	}
	slices.Sort(keys)
	return keys
}

// TestConfigDocCoversDecoder fails when the decoder accepts a key that
// docs/config.md does not document, or the doc documents a key the decoder
// refuses.
func TestConfigDocCoversDecoder(t *testing.T) {
	t.Parallel()
	dec := decoderKeys(t)
	if len(dec) < 40 {
		t.Fatalf("probing found only %d keys: %v", len(dec), dec)
	}
	doc := docKeys(t, "../../docs/config.md")
	for _, k := range dec {
		if !slices.Contains(doc, k) {
			t.Errorf("the decoder knows %s, docs/config.md has no row for it (add `| `%s` | default | range | effect |`)", k, k)
		}
	}
	for _, k := range doc {
		if !slices.Contains(dec, k) {
			t.Errorf("docs/config.md documents %s, the decoder does not know it", k)
		}
	}
	if dup := duplicates(doc); len(dup) > 0 {
		t.Errorf("docs/config.md documents %v more than once", dup)
	}
}

func duplicates(sorted []string) []string {
	var out []string
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] && !slices.Contains(out, sorted[i]) {
			out = append(out, sorted[i])
		}
	}
	return out
}

// TestDecoderKeysProbe checks the probe itself on keys of every shape.
func TestDecoderKeysProbe(t *testing.T) {
	t.Parallel()
	keys := decoderKeys(t)
	for _, want := range []string{
		"listen",
		"redis.addrs",
		"redis.tls_ca_file",
		"auth.tokens[].scopes",
		"families.<family>.dimensions.<type>.shards",
		"families.<family>.derived_from.inputs[].weight",
	} {
		if !slices.Contains(keys, want) {
			t.Errorf("probe missed %s; found %v", want, keys)
		}
	}
	for _, k := range keys {
		if strings.Contains(k, probeKey) {
			t.Errorf("probe key leaked into %s", k)
		}
	}
}

// TestExampleConfigLoads loads the repository's example config and the dev
// config as the gateway would, and checks that the example sets every key
// that docs/config.md documents at least once.
func TestExampleConfigLoads(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"../../rankgate.example.yaml", "../../deploy/rankgate.dev.yaml"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			c, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.FamilyNames) == 0 {
				t.Fatal("no families")
			}
		})
	}
	data, err := os.ReadFile("../../rankgate.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	collectKeys(doc.Content[0], nil, set)
	for _, k := range docKeys(t, "../../docs/config.md") {
		if !set[k] {
			t.Errorf("rankgate.example.yaml never sets %s (every documented key appears in the example)", k)
		}
	}
}

// collectKeys records every key path of n in docPath form; names under
// families and dimensions become <name>.
func collectKeys(n *yaml.Node, p []seg, set map[string]bool) {
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			s := seg{key: n.Content[i].Value}
			if len(p) > 0 && (p[len(p)-1].key == "families" || p[len(p)-1].key == "dimensions") {
				s = seg{key: nameOf(p), dynamic: true}
			}
			q := append(slices.Clone(p), s)
			set[docPath(q)] = true
			collectKeys(n.Content[i+1], q, set)
		}
	case yaml.SequenceNode:
		for _, it := range n.Content {
			collectKeys(it, append(slices.Clone(p), seg{list: true}), set)
		}
	}
}
