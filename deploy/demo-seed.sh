#!/usr/bin/env bash
# demo-seed.sh — waits for a gateway to answer /readyz, then posts demo events
# so that `make run` shows boards with members. Idempotent: event ids are
# fixed, so running it twice counts nothing twice.
set -euo pipefail
URL=${RANKGATE_URL:-http://127.0.0.1:8080}

for _ in $(seq 1 120); do
	curl -fsS "$URL/readyz" >/dev/null 2>&1 && break
	sleep 0.5
done
curl -fsS "$URL/readyz" >/dev/null || { echo "demo-seed: gateway at $URL is not ready; no demo data" >&2; exit 1; }

provinces=(zhejiang guangdong beijing sichuan)
events=""
for i in $(seq 1 200); do
	p=${provinces[$((i % 4))]}
	c="c$((i % 7))"
	d=$(((i * 37) % 90 + 10))
	events+="{\"event_id\":\"demo-$i\",\"family\":\"learning\",\"user\":\"u$((1000 + i % 120))\",\"delta\":$d,\"dims\":{\"province\":\"$p\",\"class\":\"$c\"}},"
done
curl -fsS -X POST "$URL/v1/events:batch" -H 'Content-Type: application/json' -d "{\"events\":[${events%,}]}" >/dev/null

events=""
for i in $(seq 1 100); do
	events+="{\"event_id\":\"demo-game-$i\",\"family\":\"game\",\"user\":\"p$((i % 60))\",\"value\":$(((i * 7919) % 5000))},"
done
curl -fsS -X POST "$URL/v1/events:batch" -H 'Content-Type: application/json' -d "{\"events\":[${events%,}]}" >/dev/null
for i in $(seq 1 40); do
	curl -fsS -X PUT "$URL/v1/profiles/u$((1000 + i))" -H 'Content-Type: application/json' \
		-d "{\"name\":\"Learner $i\",\"avatar\":\"https://example.invalid/a/$i.png\"}" >/dev/null
done
echo "demo-seed: 200 learning events, 100 game scores and 40 profiles posted to $URL"
echo "demo-seed: try  curl -s '$URL/v1/boards/learning/current/national/top?limit=5&profiles=1'"
