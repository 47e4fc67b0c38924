// Package architecture_test checks the map of the code (docs/architecture.md)
// against the code: every package has a line in its table and a package doc
// that says what it owns and what it must not import. It imports no
// rankgate package.
package architecture_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// packages lists the module's package directories (slash-separated, relative
// to the module root): every directory with a non-test .go file, outside
// testdata, hidden directories and deploy/cluster's data.
func packages(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && p != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") && filepath.Dir(p) != "." {
			seen[filepath.ToSlash(filepath.Dir(p))] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	dirs := slices.Sorted(maps.Keys(seen))
	if len(dirs) < 10 {
		t.Fatalf("found only %d packages (%v): is the test running at the module root?", len(dirs), dirs)
	}
	return dirs
}

// TestArchitectureMapListsEveryPackage: docs/architecture.md has a table row
// for every package ("| `internal/x` | …").
func TestArchitectureMapListsEveryPackage(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range packages(t) {
		row := regexp.MustCompile("(?m)^\\| `" + regexp.QuoteMeta(dir) + "` \\|")
		if !row.Match(doc) {
			t.Errorf("docs/architecture.md has no row for package %s: add \"| `%s` | what it owns | what it must not import |\" to its package table", dir, dir)
		}
	}
}

// TestEveryPackageHasADoc: every package has a package doc ("// Package x …"
// or, for a command, "// Command x …") that names what it must not import.
func TestEveryPackageHasADoc(t *testing.T) {
	t.Parallel()
	for _, dir := range packages(t) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var docs []string
		for _, e := range entries {
			if name := e.Name(); e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, parser.ParseComments|parser.PackageClauseOnly)
			if err != nil {
				t.Errorf("%s: %v", dir, err)
				continue
			}
			if f.Doc != nil {
				docs = append(docs, f.Doc.Text())
			}
		}
		switch {
		case len(docs) == 0:
			t.Errorf("package %s has no package doc: say what it owns and what it must not import", dir)
		case len(docs) > 1:
			t.Errorf("package %s has %d package docs: keep one", dir, len(docs))
		case !strings.Contains(docs[0], "import"):
			t.Errorf("the package doc of %s does not say what it must (not) import", dir)
		}
	}
}

// forbidden turns the "must not import" column of docs/architecture.md into
// import-path rules: a predicate per named thing. Words it does not know are
// left to the reader.
func forbidden(col string) map[string]func(string) bool {
	const mod = "github.com/rankgate/rankgate/"
	rules := map[string]func(string) bool{}
	col, _, _ = strings.Cut(col, ";") // "…; plan must not import it" speaks of another package
	for _, w := range strings.Split(col, ",") {
		switch w = strings.TrimSpace(w); w {
		case "Redis", "go-redis": // either Redis client (rueidis: the store's read transport)
			rules[w] = func(p string) bool {
				return strings.HasPrefix(p, "github.com/redis/go-redis") || strings.HasPrefix(p, "github.com/redis/rueidis")
			}
		case "HTTP", "net/http":
			rules[w] = func(p string) bool { return p == "net/http" }
		case "any rankgate package", "rankgate packages":
			rules[w] = func(p string) bool { return strings.HasPrefix(p, mod) }
		case "any rankgate package but rank":
			rules[w] = func(p string) bool { return strings.HasPrefix(p, mod) && p != mod+"internal/rank" }
		case "any rankgate package but api/wire":
			rules[w] = func(p string) bool { return strings.HasPrefix(p, mod) && p != mod+"api/wire" }
		case "anything but the standard library", "everything but the standard library":
			rules[w] = func(p string) bool { first, _, _ := strings.Cut(p, "/"); return strings.Contains(first, ".") }
		case "gateway", "httpapi", "store", "ledger", "cache":
			pkg := mod + "internal/" + w
			rules[w] = func(p string) bool { return p == pkg }
		}
	}
	return rules
}

// TestPackagesKeepTheirImportRules: no non-test file of a package imports what
// its row in docs/architecture.md says it must not (go-redis outside store,
// net/http in the gateway, …).
func TestPackagesKeepTheirImportRules(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile("(?m)^\\| `([^`]+)` \\|[^|]*\\|([^|]*)\\|").FindAllSubmatch(doc, -1)
	checked := 0
	for _, row := range rows {
		dir, rules := string(row[1]), forbidden(string(row[2]))
		if len(rules) == 0 {
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Errorf("docs/architecture.md names %s: %v", dir, err)
			continue
		}
		for _, e := range entries {
			if name := e.Name(); e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, parser.ImportsOnly)
			if err != nil {
				t.Errorf("%s: %v", dir, err)
				continue
			}
			for _, imp := range f.Imports {
				p := strings.Trim(imp.Path.Value, `"`)
				for word, bad := range rules {
					if bad(p) {
						t.Errorf("%s/%s imports %s, but docs/architecture.md says %s must not import %s", dir, e.Name(), p, dir, word)
					}
				}
			}
		}
		checked++
	}
	if checked < 20 {
		t.Fatalf("only %d packages had import rules to check: has the table's layout changed?", checked)
	}
}
