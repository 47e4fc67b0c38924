package wire_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rankgate/rankgate/api"
	"github.com/rankgate/rankgate/api/wire"
)

// wireSchemas pairs every struct type of package wire with the schema of
// api/openapi.yaml it is on the wire: a component name, or a path into one
// ("PeriodDetail.next_step" is the schema of that property, "FamilyInfo.columns[]"
// the items of that array property).
var wireSchemas = []struct {
	typ    reflect.Type
	schema string
}{
	{reflect.TypeFor[wire.Event](), "Event"},
	{reflect.TypeFor[wire.BoardPoints](), "BoardPoints"},
	{reflect.TypeFor[wire.EventResult](), "EventResult"},
	{reflect.TypeFor[wire.Projection](), "Projection"},
	{reflect.TypeFor[wire.ProjectionResult](), "ProjectionResult"},
	{reflect.TypeFor[wire.Profile](), "Profile"},
	{reflect.TypeFor[wire.Correction](), "Correction"},
	{reflect.TypeFor[wire.ReadMeta](), "ReadMeta"},
	{reflect.TypeFor[wire.Entry](), "Entry"},
	{reflect.TypeFor[wire.Page](), "Page"},
	{reflect.TypeFor[wire.MemberStanding](), "MemberStanding"},
	{reflect.TypeFor[wire.Count](), "Count"},
	{reflect.TypeFor[wire.SnapshotInfo](), "SnapshotInfo"},
	{reflect.TypeFor[wire.BoardSummary](), "BoardSummary"},
	{reflect.TypeFor[wire.BoardList](), "BoardList"},
	{reflect.TypeFor[wire.ShardPlacement](), "ShardPlacement"},
	{reflect.TypeFor[wire.BoardPlacement](), "BoardPlacement"},
	{reflect.TypeFor[wire.NodeLoad](), "NodeLoad"},
	{reflect.TypeFor[wire.Layout](), "Layout"},
	{reflect.TypeFor[wire.FamilyInfo](), "FamilyInfo"},
	{reflect.TypeFor[wire.IndexInfo](), "FamilyInfo.index"},
	{reflect.TypeFor[wire.ColumnInfo](), "FamilyInfo.columns[]"},
	{reflect.TypeFor[wire.FamilyList](), "FamilyList"},
	{reflect.TypeFor[wire.PeriodInfo](), "PeriodInfo"},
	{reflect.TypeFor[wire.PeriodDetail](), "PeriodDetail"},
	{reflect.TypeFor[wire.NextStep](), "PeriodDetail.next_step"},
	{reflect.TypeFor[wire.Review](), "Review"},
	{reflect.TypeFor[wire.ReviewList](), "ReviewList"},
	{reflect.TypeFor[wire.ReviewDecision](), "ReviewDecision"},
	{reflect.TypeFor[wire.Standing](), "Standing"},
	{reflect.TypeFor[wire.Award](), "Award"},
	{reflect.TypeFor[wire.Settlement](), "Settlement"},
	{reflect.TypeFor[wire.AwardView](), "AwardView"},
	{reflect.TypeFor[wire.AwardList](), "AwardList"},
	{reflect.TypeFor[wire.RebuildReport](), "RebuildReport"},
	{reflect.TypeFor[wire.Drift](), "Drift"},
	{reflect.TypeFor[wire.ReconcileReport](), "ReconcileReport"},
	{reflect.TypeFor[wire.DeriveReport](), "DeriveReport"},
	{reflect.TypeFor[wire.Removal](), "Removal"},
	{reflect.TypeFor[wire.RemovalResult](), "RemovalResult"},
	{reflect.TypeFor[wire.ErasureResult](), "ErasureResult"},
	{reflect.TypeFor[wire.Export](), "Export"},
	{reflect.TypeFor[wire.ExportStanding](), "ExportStanding"},
	{reflect.TypeFor[wire.MemberEvent](), "MemberEvent"},
	{reflect.TypeFor[wire.AuditEntry](), "AuditEntry"},
	{reflect.TypeFor[wire.AuditPage](), "AuditPage"},
	{reflect.TypeFor[wire.LeagueStanding](), "LeagueStanding"},
	{reflect.TypeFor[wire.Cohort](), "CohortList.cohorts[]"},
	{reflect.TypeFor[wire.CohortList](), "CohortList"},
	{reflect.TypeFor[wire.Move](), "MoveList.moves[]"},
	{reflect.TypeFor[wire.MoveList](), "MoveList"},
	{reflect.TypeFor[wire.BanRequest](), "BanRequest"},
	{reflect.TypeFor[wire.Ban](), "Ban"},
	{reflect.TypeFor[wire.BanResult](), "BanResult"},
	{reflect.TypeFor[wire.BanList](), "BanList"},
	{reflect.TypeFor[wire.HistoryEvent](), "HistoryEvent"},
	{reflect.TypeFor[wire.History](), "History"},
	{reflect.TypeFor[wire.Tournament](), "TournamentRequest"},
	{reflect.TypeFor[wire.TournamentColumn](), "TournamentColumn"},
	{reflect.TypeFor[wire.TournamentLifecycle](), "TournamentLifecycle"},
	{reflect.TypeFor[wire.TournamentStep](), "TournamentLifecycle.settle"},
	{reflect.TypeFor[wire.TournamentInfo](), "TournamentInfo"},
	{reflect.TypeFor[wire.TournamentList](), "TournamentList"},
	{reflect.TypeFor[wire.JoinResult](), "JoinResult"},
}

// notBodies are the struct types of package wire that are not JSON bodies.
var notBodies = map[string]string{
	"PageQuery": "the paging query parameters of GET {board}/entries",
}

// notWire lists the object schemas of the document that no type of package
// wire carries, and why; every other object schema must be in wireSchemas.
var notWire = map[string]string{
	"Error":           "the error envelope: internal/httpapi's errorEnvelope, the client's Error",
	"BatchRequest":    "a list of Event, decoded by internal/httpapi's fast event decoder",
	"BatchResponse":   "results of EventResult or Error, encoded by internal/httpapi",
	"ProfileResponse": "internal/httpapi's profileResponse",
	"LookupRequest":   "internal/httpapi's lookupRequest",
	"SnapshotRequest": "internal/httpapi's snapshotRequest",
	"DecisionRequest": "internal/httpapi's decisionRequest",
	"SettleRequest":   "internal/httpapi's settleRequest",
	"Ticket":          "internal/httpapi's ticketBody; the client's Ticket",
	"LiveEvent":       "a server-sent event's data, written by internal/live; the client's LiveData",
	"Status":          "internal/httpapi's statusBody",
}

// omittedButSet are the only required properties a wire type may tag
// omitempty, with the reason they are never empty on the wire.
var omittedButSet = map[string][]string{
	// TournamentInfo embeds the request, whose rules may be left out; the
	// gateway answers a tournament after competition's Normalize, which
	// fills every one of these.
	"TournamentInfo": {"aggregate", "grace", "lifecycle", "order", "rank", "shards", "start", "tie", "timezone"},
}

// TestWireTypesMatchSchemas: every wire type has the JSON fields of its
// schema, no more and no fewer, and never omits a field the schema requires
// (but for omittedButSet).
func TestWireTypesMatchSchemas(t *testing.T) {
	t.Parallel()
	doc := openAPI(t)
	for _, c := range wireSchemas {
		t.Run(c.typ.Name(), func(t *testing.T) {
			t.Parallel()
			allowed := map[string]bool{}
			for _, f := range omittedButSet[c.typ.Name()] {
				allowed[c.typ.String()+": required "+quote(f)+" is omitempty in Go (schema "+c.schema+")"] = true
			}
			for _, p := range mismatches(doc, c.typ, c.schema) {
				if allowed[p] {
					delete(allowed, p)
					continue
				}
				t.Error(p)
			}
			for p := range allowed {
				t.Errorf("omittedButSet allows %q, which is no longer a problem: take it out", p)
			}
		})
	}
}

// TestMismatchesAreFound: the check above fails on a field added on one side
// only and on a required field Go would omit.
func TestMismatchesAreFound(t *testing.T) {
	t.Parallel()
	type entryPlus struct {
		wire.Entry
		Badge string `json:"badge"`
	}
	type entryLess struct {
		User     string `json:"user"`
		Points   int64  `json:"points"`
		Position int64  `json:"position"`
		Rank     int64  `json:"rank"`
	}
	type entryOmits struct {
		wire.Entry
		User string `json:"user,omitempty"` // shadows Entry.User
	}
	type countRenamed struct {
		wire.ReadMeta
		N int64 `json:"n"`
	}
	doc := openAPI(t)
	cases := []struct {
		name   string
		typ    reflect.Type
		schema string
		want   []string
	}{
		{"a field only in Go", reflect.TypeFor[entryPlus](), "Entry", []string{`"badge" is not a property of the schema`}},
		{"properties only in the schema", reflect.TypeFor[entryLess](), "Entry",
			[]string{`property "columns" has no Go field`, `property "metadata" has no Go field`, `property "profile" has no Go field`}},
		{"a required field omitted", reflect.TypeFor[entryOmits](), "Entry", []string{`required "user" is omitempty in Go`}},
		{"embedded fields and allOf", reflect.TypeFor[countRenamed](), "Count",
			[]string{`"n" is not a property of the schema`, `property "count" has no Go field`}},
		{"an unknown schema", reflect.TypeFor[wire.Entry](), "Entries", []string{`no schema "Entries"`}},
		{"the real type passes", reflect.TypeFor[wire.Entry](), "Entry", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := mismatches(doc, c.typ, c.schema)
			if len(got) != len(c.want) {
				t.Fatalf("%s vs %s: %q, want %d problems containing %q", c.typ, c.schema, got, len(c.want), c.want)
			}
			for i, w := range c.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d: %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}

// TestEveryWireTypeHasASchema: every struct type declared in package wire is
// in wireSchemas, and every object schema of the document is in wireSchemas
// or notWire: a new type or schema cannot skip the check.
func TestEveryWireTypeHasASchema(t *testing.T) {
	t.Parallel()
	inTable := map[string]bool{}
	schemas := map[string]bool{}
	for _, c := range wireSchemas {
		inTable[c.typ.Name()] = true
		schemas[strings.FieldsFunc(c.schema, func(r rune) bool { return r == '.' || r == '[' })[0]] = true
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	declared := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			if _, isStruct := ts.Type.(*ast.StructType); isStruct && ts.Name.IsExported() {
				if notBodies[ts.Name.Name] != "" {
					return false
				}
				declared++
				if !inTable[ts.Name.Name] {
					t.Errorf("%s: wire.%s is not in wireSchemas: pair it with its schema", name, ts.Name.Name)
				}
			}
			return false
		})
	}
	if declared != len(wireSchemas) {
		t.Errorf("package wire declares %d struct types, wireSchemas lists %d", declared, len(wireSchemas))
	}
	comps, _ := openAPI(t)["components"].(map[string]any)["schemas"].(map[string]any)
	for name, s := range comps {
		if strings.HasPrefix(name, "Error") && name != "Error" {
			continue // ErrorNotFound & co.: Error with a fixed code
		}
		m, _ := s.(map[string]any)
		if _, isObject := m["properties"]; !isObject {
			if _, ok := m["allOf"]; !ok {
				continue // Points, Dims, Columns, Metadata: not objects of named fields
			}
		}
		if !schemas[name] && notWire[name] == "" {
			t.Errorf("schema %s is neither paired with a wire type (wireSchemas) nor listed in notWire with a reason", name)
		}
		if schemas[name] && notWire[name] != "" {
			t.Errorf("schema %s is both in wireSchemas and in notWire", name)
		}
	}
	for name := range notWire {
		if comps[name] == nil {
			t.Errorf("notWire names %s, which is not a schema of the document", name)
		}
	}
}

// openAPI is api/openapi.yaml as JSON values.
func openAPI(t *testing.T) map[string]any {
	t.Helper()
	js, err := api.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// mismatches compares typ's JSON fields with the schema at path: a field
// only in Go, a property only in the schema, a required property Go omits
// when empty. The problems come sorted.
func mismatches(doc map[string]any, typ reflect.Type, path string) []string {
	schema, err := schemaAt(doc, path)
	if err != nil {
		return []string{err.Error()}
	}
	props, required := map[string]bool{}, map[string]bool{}
	flatten(doc, schema, props, required)
	fields := map[string]bool{} // JSON name → omitempty
	jsonFields(typ, fields)
	var out []string
	for name, omit := range fields {
		if !props[name] {
			out = append(out, typ.String()+": "+quote(name)+" is not a property of the schema "+path)
		}
		if required[name] && omit {
			out = append(out, typ.String()+": required "+quote(name)+" is omitempty in Go (schema "+path+")")
		}
	}
	for name := range props {
		if _, ok := fields[name]; !ok {
			out = append(out, typ.String()+": property "+quote(name)+" has no Go field (schema "+path+")")
		}
	}
	slices.Sort(out)
	return out
}

func quote(s string) string { return `"` + s + `"` }

// schemaAt resolves "Name", "Name.prop" and "Name.prop[]".
func schemaAt(doc map[string]any, path string) (map[string]any, error) {
	parts := strings.Split(path, ".")
	comps, _ := doc["components"].(map[string]any)["schemas"].(map[string]any)
	s, ok := comps[parts[0]].(map[string]any)
	if !ok {
		return nil, &schemaError{path: path, msg: "no schema " + quote(parts[0])}
	}
	for _, p := range parts[1:] {
		items := strings.HasSuffix(p, "[]")
		all := map[string]any{}
		collectProps(doc, s, all)
		next, ok := all[strings.TrimSuffix(p, "[]")].(map[string]any)
		if !ok {
			return nil, &schemaError{path: path, msg: "no property " + quote(p)}
		}
		next = deref(doc, next)
		if items {
			if next, ok = next["items"].(map[string]any); !ok {
				return nil, &schemaError{path: path, msg: quote(p) + " has no items"}
			}
			next = deref(doc, next)
		}
		s = next
	}
	return s, nil
}

type schemaError struct{ path, msg string }

func (e *schemaError) Error() string { return e.path + ": " + e.msg }

// deref follows a $ref to a component.
func deref(doc map[string]any, s map[string]any) map[string]any {
	for {
		ref, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		name := strings.TrimPrefix(ref, "#/components/schemas/")
		s, _ = doc["components"].(map[string]any)["schemas"].(map[string]any)[name].(map[string]any)
	}
}

// collectProps gathers the properties of s and of its allOf parts.
func collectProps(doc map[string]any, s map[string]any, into map[string]any) {
	s = deref(doc, s)
	if all, ok := s["allOf"].([]any); ok {
		for _, a := range all {
			if m, ok := a.(map[string]any); ok {
				collectProps(doc, m, into)
			}
		}
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for k, v := range props {
			into[k] = v
		}
	}
}

// flatten gathers the property names and required names of s and its allOf
// parts.
func flatten(doc map[string]any, s map[string]any, props, required map[string]bool) {
	s = deref(doc, s)
	if all, ok := s["allOf"].([]any); ok {
		for _, a := range all {
			if m, ok := a.(map[string]any); ok {
				flatten(doc, m, props, required)
			}
		}
	}
	if ps, ok := s["properties"].(map[string]any); ok {
		for k := range ps {
			props[k] = true
		}
	}
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			if name, ok := r.(string); ok {
				required[name] = true
			}
		}
	}
}

// jsonFields records the JSON names of t's fields as encoding/json sees
// them (embedded structs without a tag are flattened; a shallower field
// wins over a promoted one of the same name), each with its omitempty.
func jsonFields(t reflect.Type, into map[string]bool) {
	type level struct {
		t     reflect.Type
		depth int
	}
	depthOf := map[string]int{}
	queue := []level{{t, 0}}
	for len(queue) > 0 {
		l := queue[0]
		queue = queue[1:]
		for i := range l.t.NumField() {
			f := l.t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" || (!f.IsExported() && !f.Anonymous) {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" {
				ft := f.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					queue = append(queue, level{ft, l.depth + 1})
					continue
				}
			}
			if name == "" {
				name = f.Name
			}
			if d, seen := depthOf[name]; seen && d <= l.depth {
				continue
			}
			depthOf[name] = l.depth
			into[name] = slices.Contains(strings.Split(opts, ","), "omitempty")
		}
	}
}
