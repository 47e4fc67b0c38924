// Command k8sschemas writes standalone, strict JSON schemas for kubeconform
// from a Kubernetes OpenAPI v2 document (api/openapi-spec/swagger.json of the
// k8s.io/kubernetes module, which the Go module proxy serves), so that
// manifests validate offline: kubeconform's default schemas are downloaded
// from a site this CI cannot reach.
//
//	k8sschemas -swagger swagger.json -out DIR [-crd crd.yaml ...]
//
// One file per group/version/kind, named as kubeconform's
// -schema-location 'DIR/{{ .ResourceKind }}{{ .KindSuffix }}.json' asks
// (deployment-apps-v1.json, service-v1.json), with every $ref inlined,
// additionalProperties false on every object that lists its properties
// (kubeconform -strict's meaning), null allowed where Kubernetes accepts it,
// int-or-string and quantities as either. A -crd file adds the schemas of a
// CustomResourceDefinition's served versions the same way.
//
// A module of its own (deploy/tools): it must not import any rankgate package.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

type gvk struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

func main() {
	swagger := flag.String("swagger", "", "Kubernetes OpenAPI v2 document (swagger.json)")
	out := flag.String("out", "", "directory to write the schemas into")
	var crds multi
	flag.Var(&crds, "crd", "CustomResourceDefinition YAML to add (repeatable)")
	flag.Parse()
	if *swagger == "" || *out == "" {
		flag.Usage()
		os.Exit(2)
	}
	n, err := run(*swagger, crds, *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "k8sschemas:", err)
		os.Exit(1)
	}
	fmt.Printf("k8sschemas: %d schemas in %s\n", n, *out)
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(s string) error { *m = append(*m, s); return nil }

func run(swaggerPath string, crds []string, out string) (int, error) {
	raw, err := os.ReadFile(swaggerPath)
	if err != nil {
		return 0, err
	}
	var doc struct {
		Definitions map[string]map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return 0, fmt.Errorf("%s: %w", swaggerPath, err)
	}
	if len(doc.Definitions) == 0 {
		return 0, fmt.Errorf("%s: no definitions", swaggerPath)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return 0, err
	}
	names := make([]string, 0, len(doc.Definitions))
	for name := range doc.Definitions {
		names = append(names, name)
	}
	sort.Strings(names)
	n := 0
	for _, name := range names {
		def := doc.Definitions[name]
		kinds, _ := def["x-kubernetes-group-version-kind"].([]any)
		if len(kinds) == 0 {
			continue
		}
		e := expander{defs: doc.Definitions, seen: map[string]bool{}}
		schema := e.expand(def, true)
		schema["$schema"] = "http://json-schema.org/schema#"
		for _, k := range kinds {
			b, _ := json.Marshal(k)
			var g gvk
			if err := json.Unmarshal(b, &g); err != nil || g.Kind == "" {
				return n, fmt.Errorf("%s: bad x-kubernetes-group-version-kind %s", name, b)
			}
			if err := write(out, g, schema); err != nil {
				return n, err
			}
			n++
		}
	}
	for _, path := range crds {
		c, err := crdSchemas(path, out)
		if err != nil {
			return n, err
		}
		n += c
	}
	return n, nil
}

// fileName is kubeconform's {{ .ResourceKind }}{{ .KindSuffix }}.json.
func fileName(g gvk) string {
	suffix := "-" + strings.ToLower(g.Version)
	if g.Group != "" {
		suffix = "-" + strings.ToLower(strings.Split(g.Group, ".")[0]) + suffix
	}
	return strings.ToLower(g.Kind) + suffix + ".json"
}

func write(dir string, g gvk, schema map[string]any) error {
	b, err := json.MarshalIndent(schema, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, fileName(g)), b, 0o644)
}

type expander struct {
	defs map[string]map[string]any
	seen map[string]bool // refs being expanded: a cycle becomes "anything"
}

// expand returns a copy of s with refs inlined and strictness applied.
func (e *expander) expand(s map[string]any, top bool) map[string]any {
	if ref, ok := s["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/definitions/")
		def, found := e.defs[name]
		if !found || e.seen[name] {
			return map[string]any{}
		}
		e.seen[name] = true
		defer delete(e.seen, name)
		return e.expand(def, false)
	}
	out := make(map[string]any, len(s))
	for k, v := range s {
		switch k {
		case "x-kubernetes-group-version-kind", "x-kubernetes-list-map-keys", "x-kubernetes-list-type",
			"x-kubernetes-patch-merge-key", "x-kubernetes-patch-strategy", "x-kubernetes-map-type",
			"x-kubernetes-unions":
			continue
		case "properties":
			props := map[string]any{}
			for name, p := range v.(map[string]any) {
				props[name] = e.expand(p.(map[string]any), false)
			}
			out[k] = props
		case "items":
			if m, ok := v.(map[string]any); ok {
				out[k] = e.expand(m, false)
			} else {
				out[k] = v
			}
		case "additionalProperties":
			if m, ok := v.(map[string]any); ok {
				out[k] = e.expand(m, false)
			} else {
				out[k] = v
			}
		default:
			out[k] = v
		}
	}
	return loosen(out, top)
}

// loosen applies what Kubernetes accepts and kubeconform -strict means:
// objects listing properties take no others; int-or-string and quantities
// take either; any value but the document itself may be null.
func loosen(s map[string]any, top bool) map[string]any {
	if f, _ := s["format"].(string); f == "int-or-string" || f == "quantity" || isQuantity(s) {
		delete(s, "type")
		delete(s, "format")
		s["oneOf"] = []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}
		if f == "quantity" || isQuantity(s) {
			s["oneOf"] = []any{map[string]any{"type": "string"}, map[string]any{"type": "number"}}
		}
	}
	if _, has := s["properties"]; has {
		if _, set := s["additionalProperties"]; !set {
			s["additionalProperties"] = false
		}
	}
	if t, ok := s["type"].(string); ok && !top {
		s["type"] = []any{t, "null"}
	}
	return s
}

// isQuantity spots resource.Quantity, which swagger.json types as a plain
// string though YAML writes `cpu: 1` as a number.
func isQuantity(s map[string]any) bool {
	d, _ := s["description"].(string)
	return strings.HasPrefix(d, "Quantity is a fixed-point representation of a number.")
}

// crdSchemas writes the served versions of a CustomResourceDefinition.
func crdSchemas(path, out string) (int, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var crd struct {
		Kind string `yaml:"kind"`
		Spec struct {
			Group string `yaml:"group"`
			Names struct {
				Kind string `yaml:"kind"`
			} `yaml:"names"`
			Versions []struct {
				Name   string `yaml:"name"`
				Served bool   `yaml:"served"`
				Schema struct {
					OpenAPIV3Schema map[string]any `yaml:"openAPIV3Schema"`
				} `yaml:"schema"`
			} `yaml:"versions"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	if crd.Kind != "CustomResourceDefinition" {
		return 0, fmt.Errorf("%s: kind %q, want CustomResourceDefinition", path, crd.Kind)
	}
	n := 0
	for _, v := range crd.Spec.Versions {
		if !v.Served || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		s := strictCRD(v.Schema.OpenAPIV3Schema, true)
		s["$schema"] = "http://json-schema.org/schema#"
		if err := write(out, gvk{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}, s); err != nil {
			return n, err
		}
		n++
	}
	if n == 0 {
		return 0, errors.New(path + ": no served version with a schema")
	}
	return n, nil
}

// strictCRD applies loosen's rules to a CRD's structural schema, whose
// x-kubernetes-int-or-string and x-kubernetes-preserve-unknown-fields say
// what swagger.json says with formats.
func strictCRD(s map[string]any, top bool) map[string]any {
	out := make(map[string]any, len(s))
	for k, v := range s {
		switch k {
		case "properties":
			props := map[string]any{}
			for name, p := range v.(map[string]any) {
				props[name] = strictCRD(p.(map[string]any), false)
			}
			out[k] = props
		case "items", "additionalProperties":
			if m, ok := v.(map[string]any); ok {
				out[k] = strictCRD(m, false)
			} else {
				out[k] = v
			}
		case "allOf", "anyOf", "oneOf":
			var list []any
			for _, c := range v.([]any) {
				list = append(list, strictCRD(c.(map[string]any), false))
			}
			out[k] = list
		default:
			if strings.HasPrefix(k, "x-kubernetes-") {
				continue
			}
			out[k] = v
		}
	}
	if b, _ := s["x-kubernetes-int-or-string"].(bool); b {
		delete(out, "type")
		out["oneOf"] = []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}
	}
	if b, _ := s["x-kubernetes-preserve-unknown-fields"].(bool); b {
		return out
	}
	return loosen(out, top)
}
