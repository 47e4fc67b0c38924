// Package testpg gives integration tests a real PostgreSQL: the DSN from
// RANKGATE_TEST_PG_DSN (default: the local trust-auth server, database test)
// and a fresh schema per test, dropped at cleanup. When the server does not
// answer, tests are skipped with a message — except under CI=true, where
// they fail: integration tests are never skipped in CI.
//
// Test support: it imports pgx, no rankgate package; production code must not
// import it.
package testpg

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvDSN names the DSN of the test database.
const EnvDSN = "RANKGATE_TEST_PG_DSN"

// DefaultDSN is the local server `make test` and .ci/run expect.
const DefaultDSN = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// DSN returns the test database's DSN after checking that it answers.
func DSN(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv(EnvDSN)
	if dsn == "" {
		dsn = DefaultDSN
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err == nil {
		err = c.Ping(ctx)
		c.Close(ctx)
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("testpg: PostgreSQL at %s does not answer (CI=true, so this fails): %v", dsn, err)
		}
		tb.Skipf("testpg: PostgreSQL at %s does not answer: %v (start it, or set %s)", dsn, err, EnvDSN)
	}
	return dsn
}

// Schema returns a fresh schema name for this test and drops the schema at
// cleanup.
func Schema(tb testing.TB) string {
	tb.Helper()
	dsn := DSN(tb)
	var b [5]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatal(err)
	}
	name := "t_" + hex.EncodeToString(b[:])
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			tb.Logf("testpg: drop schema %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, `DROP SCHEMA IF EXISTS "`+name+`" CASCADE`); err != nil {
			tb.Logf("testpg: drop schema %s: %v", name, err)
		}
	})
	return name
}
