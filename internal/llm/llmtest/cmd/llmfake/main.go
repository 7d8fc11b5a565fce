// Command llmfake runs the llmtest fake model server as its own process, for
// end-to-end tests that start baton as a subprocess. It prints its base URL
// as the first line of stdout and serves until interrupted (or, with
// -exit-on-eof, until stdin closes).
//
//	llmfake [-addr 127.0.0.1:0] [-script steps.json] [-exit-on-eof]
//
// Without a script every request gets "echo: <last user text>"; a script is a
// JSON list of steps (see llmtest.ParseScript), used in order before the echo.
// What it received, with the images and documents each request carried, is
// at GET <url>/llmtest/requests (llmtest.Received reads it).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/baton-agent/baton/internal/llm/llmtest"
)

func main() {
	if err := run(); err != nil {
		slog.Error("llmfake", "err", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	script := flag.String("script", "", "JSON file of scripted steps")
	// Off by default: exec.Cmd gives children /dev/null, which is at EOF at once.
	watchStdin := flag.Bool("exit-on-eof", false, "exit when stdin reaches EOF (hand it a pipe so the child dies with the test)")
	flag.Parse()

	var steps []llmtest.Step
	if *script != "" {
		var err error
		if steps, err = llmtest.LoadScript(*script); err != nil {
			return err
		}
	}
	srv, err := llmtest.Listen(*addr)
	if err != nil {
		return err
	}
	defer srv.Close()
	srv.Push(steps...)
	if _, err := fmt.Println(srv.URL); err != nil {
		return fmt.Errorf("print url: %w", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *watchStdin {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			stop()
		}()
	}
	<-ctx.Done()
	return nil
}
