package workload

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// DecodeOver decodes a YAML scenario document into dst over the values dst
// already holds (keys the document leaves out keep them). ops must point at
// dst's mix: a document that lists ops replaces the mix rather than merging
// into it, and every operation then gets its default parameters. strict
// refuses unknown keys (the load tool); the planner reads the load tool's
// files and ignores the keys it has no use for.
//
// Strictness follows the gateway config's style (internal/config): every
// unknown key is reported with its full dotted path, its line and the keys
// known there ("prefill.bach: unknown key (line 7; known keys: …)"), all at
// once, before anything is decoded.
func DecodeOver(data []byte, dst any, ops *[]OpSpec, strict bool) error {
	if strict {
		var doc yaml.Node
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return err
		}
		if len(doc.Content) > 0 {
			if errs := unknownKeys(doc.Content[0], reflect.TypeOf(dst), ""); len(errs) > 0 {
				return errors.Join(errs...)
			}
		}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	before := *ops
	*ops = nil
	if err := dec.Decode(dst); err != nil && !errors.Is(err, io.EOF) {
		*ops = before
		return err
	}
	if *ops == nil {
		*ops = before
	}
	FillDefaults(*ops)
	return nil
}

var unmarshaler = reflect.TypeFor[yaml.Unmarshaler]()

// unknownKeys walks n against t (structs through their yaml tags, inline
// structs merged, slices and string-keyed maps element by element) and
// answers an error per mapping key t does not declare. A type with its own
// UnmarshalYAML checks itself.
func unknownKeys(n *yaml.Node, t reflect.Type, path string) []error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if reflect.PointerTo(t).Implements(unmarshaler) {
		return nil
	}
	var errs []error
	switch {
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		fields := map[string]reflect.Type{}
		yamlFields(t, fields)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			key := join(path, k.Value)
			ft, ok := fields[k.Value]
			if !ok {
				errs = append(errs, fmt.Errorf("%s: unknown key (line %d; known keys: %s)", key, k.Line,
					strings.Join(slices.Sorted(maps.Keys(fields)), ", ")))
				continue
			}
			errs = append(errs, unknownKeys(v, ft, key)...)
		}
	case (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && n.Kind == yaml.SequenceNode:
		for i, e := range n.Content {
			errs = append(errs, unknownKeys(e, t.Elem(), path+"["+strconv.Itoa(i)+"]")...)
		}
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			errs = append(errs, unknownKeys(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value))...)
		}
	}
	return errs
}

// yamlFields adds t's yaml keys and their types to fields; ",inline"
// structs add theirs, "-" fields none.
func yamlFields(t reflect.Type, fields map[string]reflect.Type) {
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case name == "-":
		case strings.Contains(opts, "inline"):
			yamlFields(f.Type, fields)
		case name == "":
			fields[strings.ToLower(f.Name)] = f.Type
		default:
			fields[name] = f.Type
		}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
