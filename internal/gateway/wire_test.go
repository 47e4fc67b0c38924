package gateway

import (
	"reflect"
	"slices"
	"testing"

	"github.com/rankgate/rankgate/api/wire"
	"github.com/rankgate/rankgate/internal/rank"
)

// TestAnswersKeepTheWireFields: the gateway's own answer types that are not
// aliases of package wire's (a Page keeps its encoded copies, rank.Entry its
// column key) have exactly the JSON fields of their wire type, which a test
// of package wire ties to api/openapi.yaml.
func TestAnswersKeepTheWireFields(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		own, wire reflect.Type
	}{
		{"page", reflect.TypeFor[Page](), reflect.TypeFor[wire.Page]()},
		{"entry", reflect.TypeFor[rank.Entry](), reflect.TypeFor[wire.Entry]()},
		{"member standing", reflect.TypeFor[MemberStanding](), reflect.TypeFor[wire.MemberStanding]()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			own, want := jsonTags(c.own), jsonTags(c.wire)
			if !slices.Equal(own, want) {
				t.Errorf("%s encodes %q, %s %q", c.own, own, c.wire, want)
			}
			if len(want) < 3 {
				t.Fatalf("%s: only %q: the walk lost fields", c.wire, want)
			}
		})
	}
	// The elements of a page are the wire's entries, field for field.
	pe, _ := reflect.TypeFor[Page]().FieldByName("Entries")
	we, _ := reflect.TypeFor[wire.Page]().FieldByName("Entries")
	if got, want := jsonTags(pe.Type.Elem()), jsonTags(we.Type.Elem()); !slices.Equal(got, want) {
		t.Errorf("Page.Entries elements encode %q, wire.Page's %q", got, want)
	}
}

// jsonTags lists t's JSON field names with their options, in order,
// embedded structs flattened, "-" fields left out.
func jsonTags(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		switch {
		case f.Anonymous && tag == "":
			out = append(out, jsonTags(f.Type)...)
		case tag == "-" || !f.IsExported():
		default:
			out = append(out, tag)
		}
	}
	return out
}
