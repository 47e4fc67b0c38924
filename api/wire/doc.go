// Package wire holds the JSON request and answer types of rankgate's HTTP
// API: what api/openapi.yaml describes, as Go structs. The gateway encodes
// its answers from these types and decodes its requests into them, and the Go
// client (package client) uses the same types, so there is one Go definition
// of every body on the wire.
//
// The types are written by hand; TestWireTypesMatchSchemas ties each one to
// its component schema of api/openapi.yaml (the same JSON property names,
// and every property the schema requires is never omitted), and the e2e
// tests validate every exchange against the document.
//
// One field is the gateway's own bookkeeping and never travels on the wire:
// ReadMeta.MaxAge (tagged `json:"-"`); a client leaves it zero.
//
// The package imports the standard library only.
package wire
