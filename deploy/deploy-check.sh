#!/usr/bin/env bash
# deploy-check.sh — validate the deployment files without a container engine or a cluster
# (`make deploy-check`; .ci/run runs it):
#   1. helm lint --strict deploy/helm/rankgate (default values and every option on);
#   2. helm template … | kubeconform -strict, against Kubernetes JSON schemas generated offline
#      (deploy/tools/k8sschemas) from the OpenAPI document in the k8s.io/kubernetes Go module and
#      the ServiceMonitor CRD in the prometheus-operator Go module — kubeconform's default
#      schemas are downloaded from a site this machine cannot reach;
#   3. the Compose file: `docker compose config` where the compose CLI works, else the
#      compose-spec loader that docker compose uses (deploy/tools/composecheck);
#   4. the deployment configs load and validate with the gateway's own config loader (a go test).
# helm and kubeconform are go-installed into $(go env GOPATH)/bin when missing; nothing here
# builds or runs an image. docs/deploy.md says what was run and what only validated.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

HELM_VERSION=${HELM_VERSION:-v3.22.0}
KUBECONFORM_VERSION=${KUBECONFORM_VERSION:-v0.8.0}
K8S_VERSION=${K8S_VERSION:-v1.37.2}                       # schemas of this Kubernetes release
PROMETHEUS_OPERATOR_VERSION=${PROMETHEUS_OPERATOR_VERSION:-v0.85.0}
CHART=deploy/helm/rankgate
COMPOSE=deploy/compose/docker-compose.yml

PROG=$(basename "$0")
log() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() {
	printf '%s: error: %s\n' "$PROG" "$*" >&2
	exit 1
}

GOBIN_DIR=$(go env GOPATH)/bin
export PATH="$GOBIN_DIR:$PATH"

# tool NAME PACKAGE VERSION: go install PACKAGE@VERSION into GOPATH/bin unless the NAME found on
# PATH is that very build (go version -m names the module version; helm's and kubeconform's own
# version flags do not, when built with go install).
tool() {
	local name=$1 pkg=$2 version=$3 bin mod
	mod=${pkg%%/cmd/*}
	if bin=$(command -v "$name") && go version -m "$bin" 2>/dev/null | grep -qE "^[[:space:]]+mod[[:space:]]+${mod//./\\.}[[:space:]]+${version//./\\.}[[:space:]]"; then
		return 0
	fi
	log "installing $name $version (go install $pkg@$version; minutes on a cold machine)"
	local start=$SECONDS
	go install "$pkg@$version" || die "go install $pkg@$version failed (needs the Go module proxy)"
	log "installed $name $version in $((SECONDS - start))s"
}
tool helm helm.sh/helm/v3/cmd/helm "$HELM_VERSION"
tool kubeconform github.com/yannh/kubeconform/cmd/kubeconform "$KUBECONFORM_VERSION"

# moddir MODULE@VERSION: the module's directory in the module cache (downloaded when missing).
moddir() {
	local dir
	dir=$(go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
	[[ -n $dir && -d $dir ]] || die "go mod download $1 gave no directory"
	printf '%s\n' "$dir"
}

SCHEMAS=${RANKGATE_K8S_SCHEMAS:-${XDG_CACHE_HOME:-$HOME/.cache}/rankgate/k8s-schemas/$K8S_VERSION-po$PROMETHEUS_OPERATOR_VERSION}
if [[ ! -s $SCHEMAS/.done ]]; then
	log "generating Kubernetes $K8S_VERSION JSON schemas into $SCHEMAS"
	k8s=$(moddir "k8s.io/kubernetes@$K8S_VERSION")
	po=$(moddir "github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION")
	rm -rf "$SCHEMAS"
	(cd deploy/tools && go run ./k8sschemas -swagger "$k8s/api/openapi-spec/swagger.json" -out "$SCHEMAS" \
		-crd "$po/example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml")
	date -u +%FT%TZ >"$SCHEMAS/.done"
fi

# Every option on: ledger, tracing, ServiceMonitor, no HPA (replicas), maxUnavailable PDB.
ALL_ON=(--set serviceMonitor.enabled=true --set ledger.dsnSecret.name=rankgate-ledger
	--set config.ledger.dsn_env=RANKGATE_LEDGER_DSN --set tracing.otlpEndpoint=http://otel-collector:4318
	--set autoscaling.enabled=false --set podDisruptionBudget.maxUnavailable=1
	--set-json 'extraEnv=[{"name":"RANKGATE_LOG_LEVEL","value":"debug"}]')

log "helm lint --strict $CHART"
helm lint --strict "$CHART"
helm lint --strict "$CHART" "${ALL_ON[@]}"

kc=(kubeconform -strict -summary -output text -kubernetes-version "${K8S_VERSION#v}"
	-schema-location "$SCHEMAS/{{ .ResourceKind }}{{ .KindSuffix }}.json")
for variant in defaults all-options; do
	args=()
	[[ $variant == all-options ]] && args=("${ALL_ON[@]}")
	log "helm template ($variant) | kubeconform -strict"
	out=$(helm template rankgate "$CHART" "${args[@]}")
	kinds=$(printf '%s\n' "$out" | sed -n 's/^kind: //p' | sort | tr '\n' ' ')
	log "  kinds: $kinds"
	printf '%s\n' "$out" | "${kc[@]}" -
done

# A manifest that breaks the schema must fail: proves the schemas are strict and actually used.
bad=$(helm template rankgate "$CHART" | sed 's/^spec:$/spec:\n  notAField: 1/')
if verdict=$(printf '%s\n' "$bad" | "${kc[@]}" - 2>&1); then
	die "kubeconform accepted manifests with an unknown field: the schemas are not strict"
fi
grep -q "additional properties 'notAField' not allowed" <<<"$verdict" ||
	die "kubeconform refused the manifests, but not for their unknown field: $verdict"
log "kubeconform rejects unknown fields (as it should)"

# Compose: needs its required variables; dummy values suffice to validate.
export RANKGATE_ADMIN_TOKEN=${RANKGATE_ADMIN_TOKEN:-validate-only} RANKGATE_READ_TOKEN=${RANKGATE_READ_TOKEN:-validate-only}
export POSTGRES_PASSWORD=${POSTGRES_PASSWORD:-validate-only}
if docker compose version >/dev/null 2>&1; then
	log "docker compose config -q ($COMPOSE)"
	docker compose -f "$COMPOSE" config -q
else
	log "no docker compose CLI here: validating $COMPOSE with the compose-spec loader (deploy/tools/composecheck)"
	(cd deploy/tools && go run ./composecheck -f "../../$COMPOSE")
fi

log "the configs of deploy/compose and the chart load with the gateway's config loader"
go test -count=1 -run 'TestDeployConfigs' ./internal/config/

log "OK"
