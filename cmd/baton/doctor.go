package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/doctor"
)

// errProblems makes `baton doctor` exit non-zero after its report, which
// already said everything.
var errProblems = errors.New("problems found")

func newDoctor() *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Check the configuration, the store's integrity and the files' permissions",
		Long: `baton doctor reads BATON_HOME and reports, one line each: whether config.yaml
reads, whether the store opens and passes SQLite's integrity check, whether
it holds all its record (state.db.record) says it held and still has its
write-ahead log, whether the home directory and the files in it are
private to you, and whether a gateway is running. It changes nothing; each problem comes with the command
that fixes it. It exits with status 1 when something needs fixing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := interruptible(cmd.Context())
			defer cancel()
			home, err := config.Home()
			if err != nil {
				return err
			}
			if n := doctor.Print(cmd.OutOrStdout(), doctor.Check(ctx, home)); n > 0 {
				return fmt.Errorf("%w: %d to fix", errProblems, n)
			}
			return nil
		},
	}
}
