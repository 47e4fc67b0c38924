// Package api holds rankgate's HTTP contract, api/openapi.yaml (OpenAPI
// 3.1), embedded so that the gateway can serve it and tests can check
// traffic against it.
//
// It imports the standard library only (embed); it must not import any other
// rankgate package.
package api

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// YAML is api/openapi.yaml as written.
//
//go:embed openapi.yaml
var YAML []byte

// JSON converts the document to JSON (what GET /v1/openapi.json serves).
func JSON() ([]byte, error) {
	var doc any
	if err := yaml.Unmarshal(YAML, &doc); err != nil {
		return nil, fmt.Errorf("api/openapi.yaml: %w", err)
	}
	v, err := jsonable(doc)
	if err != nil {
		return nil, fmt.Errorf("api/openapi.yaml: %w", err)
	}
	return json.Marshal(v)
}

// jsonable turns what yaml decodes into any (maps with non-string keys,
// such as status codes written unquoted) into values encoding/json takes.
func jsonable(v any) (any, error) {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			j, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			out[k] = j
		}
		return out, nil
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			var ks string
			switch kk := k.(type) {
			case string:
				ks = kk
			case int:
				ks = strconv.Itoa(kk)
			default:
				return nil, fmt.Errorf("key %v (%T) is not a string", k, k)
			}
			j, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			out[ks] = j
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			j, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			out[i] = j
		}
		return out, nil
	default:
		return v, nil
	}
}
