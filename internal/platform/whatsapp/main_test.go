package whatsapp_test

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"testing"

	"github.com/baton-agent/baton/internal/platform/whatsapp/device"
)

// childEnv makes the test binary baton-whatsapp: the tests that open the
// adapter as the gateway does point BATON_WHATSAPP at it and set this, and
// the adapter runs it as its child, which serves the device in the store.
const childEnv = "BATON_WHATSAPP_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" && len(os.Args) > 1 && os.Args[1] == "serve" {
		flags := flag.NewFlagSet("serve", flag.ExitOnError)
		store := flags.String("store", "", "")
		_ = flags.Parse(os.Args[2:])
		log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		if err := device.Serve(context.Background(), *store, os.Stdin, os.Stdout, log); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// asProgram makes this test binary the baton-whatsapp the adapter runs.
func asProgram(t *testing.T) {
	t.Setenv("BATON_WHATSAPP", os.Args[0])
	t.Setenv(childEnv, "1")
}
