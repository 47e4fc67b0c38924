// Command composecheck loads a Compose file the way `docker compose config`
// does — the compose-spec loader docker compose itself uses: schema
// validation, interpolation (a required ${VAR:?} that is unset fails),
// anchors and merges, dependency checks — for machines without the compose
// CLI. It prints the normalised project with -print.
//
//	composecheck [-print] -f docker-compose.yml
//
// A module of its own (deploy/tools): it must not import any rankgate package.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/compose-spec/compose-go/v2/cli"
)

func main() {
	file := flag.String("f", "docker-compose.yml", "Compose file")
	print := flag.Bool("print", false, "print the normalised project")
	flag.Parse()
	if err := run(*file, *print); err != nil {
		fmt.Fprintln(os.Stderr, "composecheck:", err)
		os.Exit(1)
	}
}

func run(file string, print bool) error {
	abs, err := filepath.Abs(file)
	if err != nil {
		return err
	}
	opts, err := cli.NewProjectOptions([]string{abs},
		cli.WithOsEnv,
		cli.WithWorkingDirectory(filepath.Dir(abs)),
		cli.WithName("rankgate"),
		cli.WithConsistency(true),
		cli.WithResolvedPaths(true),
	)
	if err != nil {
		return err
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		return err
	}
	if print {
		b, err := p.MarshalYAML()
		if err != nil {
			return err
		}
		os.Stdout.Write(b)
	}
	fmt.Fprintf(os.Stderr, "composecheck: %s: valid, %d services: %v\n", file, len(p.Services), p.ServiceNames())
	return nil
}
