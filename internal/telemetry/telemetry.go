// Package telemetry builds rankgate's OpenTelemetry tracer provider: off
// (a no-op provider, nothing exported, nothing allocated per span) unless
// asked for, and then configured by the standard OTEL_* variables with the
// OTLP/HTTP exporter. It registers nothing globally: the provider and the
// propagator are handed to the instrumented clients and server explicitly.
// It must not import any rankgate package.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Env vars that decide whether tracing is on (the OpenTelemetry names).
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvSDKDisabled    = "OTEL_SDK_DISABLED"
	EnvTracesExporter = "OTEL_TRACES_EXPORTER"
	EnvProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
)

// Tracing is what the instrumented parts need.
type Tracing struct {
	// Provider makes the spans; a no-op one when tracing is off.
	Provider trace.TracerProvider
	// Propagator reads and writes trace context on HTTP headers (W3C
	// tracecontext and baggage, OTEL_PROPAGATORS' default).
	Propagator propagation.TextMapPropagator
	// Enabled says whether spans are exported.
	Enabled bool
	// Shutdown flushes and stops the exporter (a no-op when off).
	Shutdown func(context.Context) error
}

// Off is tracing switched off.
func Off() Tracing {
	return Tracing{Provider: noop.NewTracerProvider(), Propagator: propagator(),
		Shutdown: func(context.Context) error { return nil }}
}

func propagator() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
}

// Wanted reports whether tracing is asked for: by the config (enabled) or
// by an OTLP endpoint in the environment; OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none turn it off whatever else says.
func Wanted(enabled bool, getenv func(string) string) bool {
	if strings.EqualFold(getenv(EnvSDKDisabled), "true") || strings.EqualFold(getenv(EnvTracesExporter), "none") {
		return false
	}
	return enabled || getenv(EnvEndpoint) != "" || getenv(EnvTracesEndpoint) != ""
}

// Setup returns tracing as Wanted says: Off, or a provider exporting over
// OTLP/HTTP. The exporter reads the OTEL_EXPORTER_OTLP_* variables itself
// (endpoint, headers, timeout, compression, certificates), the SDK reads
// OTEL_TRACES_SAMPLER(_ARG), OTEL_BSP_* and OTEL_SPAN_*, and the resource
// OTEL_SERVICE_NAME (default rankgate) and OTEL_RESOURCE_ATTRIBUTES.
// Exporting starts lazily: an unreachable collector costs dropped spans,
// never a failed start.
func Setup(ctx context.Context, enabled bool, version string, getenv func(string) string) (Tracing, error) {
	if !Wanted(enabled, getenv) {
		return Off(), nil
	}
	for _, k := range []string{EnvTracesExporter} {
		if v := getenv(k); v != "" && v != "otlp" {
			return Tracing{}, fmt.Errorf("%s=%q: only otlp (or none) is built in", k, v)
		}
	}
	for _, k := range []string{EnvTracesProtocol, EnvProtocol} {
		if v := getenv(k); v != "" {
			if v != "http/protobuf" {
				return Tracing{}, fmt.Errorf("%s=%q: only http/protobuf is built in", k, v)
			}
			break
		}
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return Tracing{}, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName("rankgate"), semconv.ServiceVersion(version)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES win
		resource.WithTelemetrySDK(),
		resource.WithHost(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		_ = exp.Shutdown(ctx)
		return Tracing{}, fmt.Errorf("tracing: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return Tracing{Provider: tp, Propagator: propagator(), Enabled: true, Shutdown: tp.Shutdown}, nil
}
