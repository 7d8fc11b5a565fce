// Command baton is a personal AI agent whose one conversation follows its
// owner from the terminal to chat apps and back.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	// SIGINT is not here: in the chat, Ctrl-C stops the running answer and
	// the REPL handles it; other commands ask for it themselves (interruptible).
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if err := newRoot().ExecuteContext(ctx); err != nil {
		if !errors.As(err, new(shown)) {
			fmt.Fprintln(os.Stderr, "baton:", err)
		}
		os.Exit(1)
	}
}

// shown is an error the command already told the person about in its
// own words: baton exits non-zero without repeating it.
type shown struct{ err error }

func (s shown) Error() string { return s.err.Error() }
func (s shown) Unwrap() error { return s.err }

func newRoot() *cobra.Command {
	var o chatOptions
	root := &cobra.Command{
		Use:   "baton",
		Short: "A personal AI agent: one conversation, from the terminal to your chat apps and back",
		Long: `baton with no command starts a chat in a new session.
  -c continues the conversation you last chatted in,
  -r resumes one by id prefix or title,
  -p PROMPT answers one prompt and exits (what is piped on stdin is added to it),
     with --file F attached (a photo, a PDF, any file; repeat for more).`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.version {
				fmt.Fprintln(cmd.OutOrStdout(), "baton", version())
				return nil
			}
			return runChat(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := root.Flags()
	// --version is a flag of our own, not cobra's Version field: cobra
	// prints that through text/template, and executing a template keeps
	// every exported method of the program in the binary.
	f.BoolVar(&o.version, "version", false, "print baton's version, as baton version does")
	f.BoolVarP(&o.continueLatest, "continue", "c", false, "continue the conversation you last chatted in")
	f.StringVarP(&o.resume, "resume", "r", "", "resume a session by id prefix or title")
	f.StringVarP(&o.print, "print", "p", "", "answer this prompt and exit (stdin, when piped, is added to it)")
	f.StringArrayVarP(&o.files, "file", "f", nil, "attach a file (a photo, a PDF, any file) to the -p prompt; repeat for more")
	root.MarkFlagsMutuallyExclusive("continue", "resume")

	root.AddCommand(newVersion(), newSessions(), newGateway(), newResume(), newHandoff(), newDoctor(), newPairing())
	root.AddCommand(newWhoAmI(), newLink())
	root.AddCommand(newPlatformCommands()...)
	root.AddCommand(newBackup())
	root.AddCommand(newMigrate())
	return root
}

func newVersion() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print baton's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), "baton", version())
			return nil
		},
	}
}

// interruptible is ctx cancelled by Ctrl-C, for commands other than the chat.
func interruptible(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt)
}

// version is the module version baton was built at, with the commit when
// the build recorded one.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " (" + s.Value[:12] + ")"
		}
	}
	return v + " " + bi.GoVersion
}
