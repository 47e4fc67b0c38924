package ledger

import (
	"context"
	"embed"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one embedded, versioned SQL file: migrations/NNNN_name.sql.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order.
func migrations() ([]migration, error) {
	entries, err := migrationFS.ReadDir("migrations")
	if err != nil {
		return nil, err
	}
	var ms []migration
	seen := map[int]string{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".sql") {
			continue
		}
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("ledger: migration %s: the name must start with a positive version and '_'", name)
		}
		if other, dup := seen[v]; dup {
			return nil, fmt.Errorf("ledger: migrations %s and %s share version %d", other, name, v)
		}
		seen[v] = name
		b, err := migrationFS.ReadFile(path.Join("migrations", name))
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: name, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	return ms, nil
}

// migrate creates the schema and applies pending migrations in one
// transaction under a transaction-scoped advisory lock: concurrent starts
// wait for each other, and the later ones find nothing left to do.
func (l *Ledger) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	var applied []string
	err = l.inTx(ctx, "migrate", "", func(tx pgx.Tx) error {
		applied = applied[:0]
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, advisoryKey("rankgate/ledger/migrate/"+l.schema)); err != nil {
			return fmt.Errorf("ledger: migration lock: %w", err)
		}
		// The schema name is validated by Open (lower-case identifier).
		if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS "`+l.schema+`"`); err != nil {
			return fmt.Errorf("ledger: creating schema %s: %w", l.schema, err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer PRIMARY KEY,
			name       text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return fmt.Errorf("ledger: creating schema_migrations: %w", err)
		}
		rows, err := tx.Query(ctx, `SELECT version FROM schema_migrations`)
		if err != nil {
			return err
		}
		done, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			return fmt.Errorf("ledger: reading schema_migrations: %w", err)
		}
		have := map[int]bool{}
		newest := 0
		for _, v := range done {
			have[int(v)] = true
			newest = max(newest, int(v))
		}
		for _, m := range ms {
			if have[m.version] {
				continue
			}
			// No arguments: pgx sends the file with the simple protocol, which
			// runs several statements.
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("ledger: migration %s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
				return fmt.Errorf("ledger: recording migration %s: %w", m.name, err)
			}
			applied = append(applied, m.name)
		}
		if len(ms) > 0 && newest > ms[len(ms)-1].version {
			l.log.Warn("the ledger schema is newer than this binary", "schema", l.schema,
				"schema_version", newest, "binary_version", ms[len(ms)-1].version)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, name := range applied {
		l.log.Info("ledger migration applied", "schema", l.schema, "migration", name)
	}
	return nil
}
