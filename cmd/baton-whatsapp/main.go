// Command baton-whatsapp is baton's WhatsApp link: the part of baton that
// speaks WhatsApp's protocol (go.mau.fi/whatsmeow) as a linked device of
// the owner's account. It is a program of its own so that no other baton
// command loads that library; the gateway runs it (`serve`) when WhatsApp
// is enabled, and `baton whatsapp link` and `unlink` run it in the
// terminal. Install it beside baton:
//
//	go install github.com/baton-agent/baton/cmd/baton-whatsapp@<baton's version>
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/baton-agent/baton/internal/platform/whatsapp/device"
)

const usage = `usage: baton-whatsapp serve|link|unlink --store <baton's state.db>

  serve   answer baton's gateway on stdin and stdout (the gateway runs this)
  link    pair a new linked device with your phone (shows QR codes)
  unlink  forget the linked device

baton runs these itself: use "baton whatsapp link" and "baton whatsapp unlink".
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	verb := os.Args[1]
	switch verb {
	case "-h", "--help", "help":
		fmt.Print(usage)
		return
	}
	flags := flag.NewFlagSet("baton-whatsapp "+verb, flag.ExitOnError)
	flags.Usage = func() { fmt.Fprint(os.Stderr, usage) }
	store := flags.String("store", "", "baton's SQLite store (state.db), where the device is kept")
	_ = flags.Parse(os.Args[2:])
	if *store == "" || flags.NArg() > 0 {
		flags.Usage()
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	var err error
	switch verb {
	case "serve":
		// The gateway decides when this ends, by closing stdin: Ctrl-C in
		// its terminal starts its graceful stop, during which WhatsApp
		// still delivers.
		signal.Ignore(os.Interrupt)
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		defer stop()
		err = device.Serve(ctx, *store, os.Stdin, os.Stdout, log)
	case "link", "unlink":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if verb == "link" {
			err = device.LinkInTerminal(ctx, *store, os.Stdout, log)
		} else {
			err = device.UnlinkInTerminal(ctx, *store, os.Stdout, log)
		}
	default:
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "baton-whatsapp:", err)
		os.Exit(1)
	}
}
