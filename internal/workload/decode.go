package workload

import (
	"bytes"
	"errors"
	"io"

	"go.yaml.in/yaml/v3"
)

// DecodeOver decodes a YAML scenario document into dst over the values dst
// already holds (keys the document leaves out keep them). ops must point at
// dst's mix: a document that lists ops replaces the mix rather than merging
// into it, and every operation then gets its default parameters. strict
// refuses unknown keys (the load tool); the planner reads the load tool's
// files and ignores the keys it has no use for.
func DecodeOver(data []byte, dst any, ops *[]OpSpec, strict bool) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(strict)
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
