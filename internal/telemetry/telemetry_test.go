package telemetry

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestWanted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		title   string
		enabled bool
		env     map[string]string
		want    bool
	}{
		{"off by default", false, nil, false},
		{"config enabled", true, nil, true},
		{"an OTLP endpoint turns it on", false, map[string]string{EnvEndpoint: "http://collector:4318"}, true},
		{"a traces endpoint turns it on", false, map[string]string{EnvTracesEndpoint: "http://collector:4318/v1/traces"}, true},
		{"an empty endpoint does not", false, map[string]string{EnvEndpoint: ""}, false},
		{"OTEL_SDK_DISABLED wins over the config", true, map[string]string{EnvSDKDisabled: "true"}, false},
		{"OTEL_SDK_DISABLED wins over an endpoint", false, map[string]string{EnvSDKDisabled: "TRUE", EnvEndpoint: "http://c:4318"}, false},
		{"OTEL_TRACES_EXPORTER=none wins", true, map[string]string{EnvTracesExporter: "none"}, false},
		{"OTEL_SDK_DISABLED=false is no veto", true, map[string]string{EnvSDKDisabled: "false"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.title, func(t *testing.T) {
			t.Parallel()
			if got := Wanted(tc.enabled, func(k string) string { return tc.env[k] }); got != tc.want {
				t.Errorf("Wanted = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSetup: off builds nothing; on builds an exporting provider even with
// no collector listening (export is lazy), and shuts down promptly; an
// exporter or protocol that is not built in stops the start, naming it.
func TestSetup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		title   string
		enabled bool
		env     map[string]string
		on      bool
		wantErr string
	}{
		{"off", false, nil, false, ""},
		{"on by config", true, nil, true, ""},
		{"on by endpoint, explicit protocol", false, map[string]string{EnvEndpoint: "http://127.0.0.1:1", EnvProtocol: "http/protobuf"}, true, ""},
		{"grpc is not built in", true, map[string]string{EnvProtocol: "grpc"}, false, EnvProtocol},
		{"traces protocol wins over the general one", true, map[string]string{EnvTracesProtocol: "http/protobuf", EnvProtocol: "grpc"}, true, ""},
		{"another exporter is not built in", true, map[string]string{EnvTracesExporter: "zipkin"}, false, EnvTracesExporter},
	}
	for _, tc := range tests {
		t.Run(tc.title, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			tr, err := Setup(ctx, tc.enabled, "test", func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tr.Enabled != tc.on || tr.Provider == nil || tr.Propagator == nil {
				t.Fatalf("Enabled = %v (want %v), provider %v, propagator %v", tr.Enabled, tc.on, tr.Provider, tr.Propagator)
			}
			_, span := tr.Provider.Tracer("test").Start(ctx, "probe")
			if span.IsRecording() != tc.on {
				t.Errorf("span recording = %v, want %v", span.IsRecording(), tc.on)
			}
			span.End()
			// Shutdown tries to export the probe span: to nobody, within ctx.
			sctx, scancel := context.WithTimeout(ctx, 3*time.Second)
			defer scancel()
			_ = tr.Shutdown(sctx)
			if sctx.Err() != nil {
				t.Errorf("Shutdown ran out of its deadline")
			}
		})
	}
}
